"""Positional encoding: attention ignores order, so a position vector is added to every token vector."""

import streamlit as st

import ui
from lessons.embedding_space import mean_length, sinusoid_difference, wavelengths
from transformer.trace import token_limit
from ui.caches import embeddings as cached

state = ui.sidebar()
lm = ui.get_model(state.model)
cfg = lm.cfg


st.title("Positional encoding")
ui.explain(
    "Attention compares every token with every other token, "
    "but by itself it has no idea of **order**: swap two words and each token gets exactly the same "
    'attention output as before, only moved. "Dog bites man" and "man bites dog" would look the same. '
    "The fix: before the first block, add to each token's "
    "vector a **position vector** that says *where* it stands."
)
st.latex(
    r"\text{input}_t = \underbrace{W_E[\mathrm{id}_t]}_{\text{token embedding}} "
    r"+ \underbrace{PE_t}_{\text{position } t}"
)

st.header("1. The sinusoidal encoding")
ui.explain(
    "The original Transformer uses fixed waves: dimension pairs (2i, 2i+1) hold a sine and a cosine of the position, "
    "each pair at its own frequency. The first pairs wiggle fast, the last ones very slowly, "
    "so every position gets a different pattern, and nearby positions get similar ones."
)
st.latex(
    r"PE_{(pos,\,2i)} = \sin\!\left(\frac{pos}{10000^{2i/d}}\right), "
    r"\qquad PE_{(pos,\,2i+1)} = \cos\!\left(\frac{pos}{10000^{2i/d}}\right)"
)
c1, c2 = st.columns(2)
d_default = cfg.d_model if cfg.d_model % 2 == 0 and cfg.d_model <= 256 else 128
help_d = "Width of the encoding, d_model. Starts at this model's width (128 when it is wider than 256)."
d = c1.slider("d (dimensions)", 2, 256, d_default, step=2, bind="query-params", key="positions_d", help=help_d)
help_length = "How many positions to encode, starting at 0."
n_pos = c2.slider("Length (positions)", 2, 256, 64, bind="query-params", key="positions_length", help=help_length)
pe_fig, counter_fig, pe_rows_fig, sim_fig = cached.sinusoid_figures(d, n_pos)
ui.show_figure(pe_fig, key="positions_pe")

dims = st.multiselect(
    "Dimensions to draw",
    range(d),
    **ui.kept_subset("positions_dims", sorted({0, 1, 6, d // 2}), d),
    help="Columns of the table above, drawn as curves over the positions.",
)
if dims:
    ui.show_figure(cached.waves_figure(d, n_pos, tuple(dims)), key="positions_waves")
    st.caption(
        "Wavelengths (positions per full wave): "
        + ", ".join(f"dim {i}: {w:,.1f}" for i, w in zip(dims, wavelengths(dims, d), strict=True))
    )
else:
    st.info("Pick at least one dimension to draw.")

st.header("2. Like a binary counter")
ui.explain(
    f"Write the positions 0 … {min(n_pos, cached.COUNTER_ROWS) - 1} in binary: the lowest bit flips every step, "
    "the next every 2 steps, the next every 4, and so on — each bit is a slower clock, "
    "and together they give every position a unique code. The sinusoids do the same thing smoothly: "
    "the first columns swing fast, later columns ever more slowly, and every row is different. "
    "Unlike bits, they are continuous, so a small shift in position is a small change in the vector."
)
# the counter needs ~250 px beside the code
ui.side_by_side({"positions_bits": counter_fig, "positions_pe_rows": pe_rows_fig}, below_px=1600)

st.header("3. Position-to-position similarity")
ui.explain(
    "The dot product of two position vectors depends only on how far apart they are: every pair of dimensions "
    "adds cos(ω·(i − j)). Nearby positions score high, and the pattern is the same along every diagonal — which "
    'makes "3 tokens back" easy to recognise anywhere in the text.'
)
st.latex(r"PE_i \cdot PE_j = \sum_{k} \cos\!\big(\omega_k\,(i - j)\big), \qquad \omega_k = 10000^{-2k/d}")
ui.show_figure(sim_fig, key="positions_similarity")

st.header("4. This model's position vectors, added to its token vectors")
if cfg.pos_encoding == "rotary":
    st.markdown(
        f"**{lm.name}** has no position vectors to add: it uses **rotary position embedding (RoPE)**. "
        "Inside every attention head, each query and key is turned by an angle proportional to its position, "
        "so the score between two tokens depends on how far apart they are. "
        "The token vectors enter the first block unchanged. The page **RoPE and shared heads** "
        "shows the rotation with this model's own numbers; pick **shakespeare-gpt** (sinusoids) "
        f"or **minilm-l6** (learned positions) as the model ({ui.controls_place()}) to see position vectors added here."
    )
    st.stop()
key = state.key.untempered  # the trace's key (the input only: τ on the weights changes nothing here)
tr = ui.trace_or_stop(key)
T = len(tr.encoding)
if cfg.pos_encoding == "sinusoidal":
    diff = sinusoid_difference(lm.model.W_pos.detach().numpy())
    st.markdown(
        f"**{lm.name}** uses the fixed sinusoids (d = {cfg.d_model}, up to {cfg.n_ctx} positions): "
        f"its position table W_pos equals the formula above (largest difference {diff:.1g})."
    )
else:
    limit = f"the model cannot read more than {cfg.n_ctx} tokens (this app reads at most {token_limit(cfg)})"
    st.markdown(
        f"**{lm.name}** *learned* its {cfg.n_ctx} position vectors W_pos during training, "
        f"like GPT-2 and BERT: they are not sinusoids, and {limit}."
    )
bert = cfg.family == "bert"
if bert:
    st.markdown(
        "BERT adds a third vector, the **token type** W_type[A or B]: which of two sentences a token belongs to "
        "(everything here is sentence A). Then it applies a **LayerNorm** to the sum (mean 0, spread 1 per token, "
        "then a learned gain and bias): the last panel is that normalized sum, the input to block 0. "
        "The tokenizer also adds [CLS] at the start and [SEP] at the end, and they get positions too."
    )
    st.latex(r"\text{input}_t = \mathrm{LN}\big(W_E[\mathrm{id}_t] + W_{pos}[t] + W_{type}[\mathrm{A}]\big)")
ui.explain(
    f"Your sentence has {T} tokens, so it takes rows 0 … {T - 1} of W_pos. "
    "The input to the first block is the sum, token by token and dimension by dimension: "
    "the same token at two positions now gets two different input vectors."
)
figs = cached.input_figures(key)
keys = (
    ("positions_sum_embed", "positions_sum_pos", "positions_sum_type", "positions_sum_input")
    if bert
    else ("positions_sum_embed", "positions_sum_pos", "positions_sum_input")
)
per_row = 2 if bert else 3  # four panels in two rows: a quarter of the page is too narrow for a heatmap
with ui.stacking("positions_panels", below_px=1600):  # one panel per row unless the screen is very wide
    for start in range(0, len(figs), per_row):
        for col, fig, key in zip(
            st.columns(per_row), figs[start : start + per_row], keys[start : start + per_row], strict=True
        ):
            with col:
                ui.show_figure(fig, key=key)
lengths = (
    f"of a token vector here: {mean_length(tr['hook_embed']):.3g}; "
    f"of a position vector: {mean_length(tr['hook_pos_embed']):.3g}"
)
if bert:
    lengths += f"; of a token-type vector: {mean_length(tr['hook_token_type_embed']):.3g}"
st.caption(
    f"Each panel has its own colour scale. Average length {lengths}. "
    "When one is much longer than the others, it dominates the sum."
)
