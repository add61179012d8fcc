"""Attention Atlas — home page: what the app is, the pipeline at a glance, one live attention map."""

from pathlib import Path

import streamlit as st

import ui
from figures.attention import pattern_heatmap

st.set_page_config(page_title="Attention Atlas", page_icon="🧭", layout="wide")
state = ui.sidebar()
lm = ui.get_model(state.model)

st.title("🧭 Attention Atlas")
st.markdown(
    "Type a sentence and watch a real transformer read it, one step at a time. "
    "Every number on every page comes from the model's own forward pass — nothing is made up. "
    "The sidebar holds the sentence, the model, and which **layer**, **head** and **attention "
    "temperature** to look at; they stay the same on every page and are kept in the address bar, "
    "so you can share a link that opens exactly this view."
)

PIPELINE = [
    ("Text → tokens", "1_Tokens_and_embeddings", "Text is cut into sub-word tokens, each with an id and a learned vector."),
    ("+ positions", "2_Positional_encoding", "A position vector is added so that order matters."),
    ("One head", "3_One_head", "Q, K, V → scores → ÷√d_k → mask → softmax → weighted sum of values."),
    ("Masking", "4_Masking", "A decoder may not look at the future."),
    ("Softmax & temperature", "5_Softmax_and_temperature", "How scores become weights, and why we scale them."),
    ("Lecture example", "6_Lecture_example", "The 4-word worked example, every matrix shown."),
    ("Many heads", "7_Multi_head", "Heads side by side, concatenated and projected by W_O."),
    ("Inside a block", "8_Inside_a_block", "Residual stream, LayerNorm, feed-forward network."),
    ("Next token", "9_Next_token", "Logits → softmax → sampling; the logit lens."),
    ("Context changes meaning", "10_Context", "The same word gets different vectors in different sentences."),
    ("Query–key map", "11_Query_key_map", "Queries and keys in one picture."),
    ("Encoder–decoder", "12_Cross_attention", "Cross-attention aligns a translation with its source."),
    ("RoPE and shared heads", "13_RoPE_and_shared_heads", "Llama's rotated queries and keys; query heads sharing key/value heads."),
    ("Encoder vs decoder", "14_Encoder_vs_decoder", "One sentence through BERT and a decoder, side by side."),
    ("Heads forming", "15_Heads_forming", "A tiny model learns induction heads while it trains."),
]
st.subheader("The pipeline at a glance")
pages = Path(__file__).parent / "pages"
cols = st.columns(3)
shown = [(t, f, d) for t, f, d in PIPELINE if (pages / f"{f}.py").is_file()]
for i, (title, file, desc) in enumerate(shown):
    with cols[i % 3]:
        st.page_link(f"pages/{file}.py", label=f"**{title}**")
        st.caption(desc)

st.subheader("Attention, live")
tr = ui.trace_or_stop(state)
looks = (
    "every earlier token (the keys). Rows sum to 1; the grey triangle is the future, which a decoder may not see."
    if lm.cfg.causal
    else f"every token, before and after it (the keys). Rows sum to 1; {lm.name} is an encoder: no causal mask, so no grey triangle."
)
st.markdown(f"**{len(tr.encoding)} tokens.** Layer {state.layer}, head {state.head}: each row is a token (the query) and shows how much it looks at {looks}")
st.latex(r"\alpha = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}\,\tau}+M\right)")
ui.show_figure(pattern_heatmap(tr, state.layer, state.head), key="home_pattern")

with st.expander(f"Model card: {lm.name}"):
    st.markdown(lm.card or "No model card.")
