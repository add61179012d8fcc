"""Positional encoding: attention ignores order, so a position vector is added to every token vector."""

import math

import numpy as np
import streamlit as st

import ui
from figures.positions import waves
from transformer import sinusoidal_encoding
from ui import cached

st.set_page_config(page_title="Positional encoding · Attention Atlas", page_icon="🧭", layout="wide")
state = ui.sidebar()
lm = ui.get_model(state.model)


st.title("Positional encoding")
st.markdown(
    "Attention compares every token with every other token, but by itself it has no idea of **order**: "
    "swap two words and each token gets exactly the same attention output as before, only moved. "
    '"Dog bites man" and "man bites dog" would look the same. The fix: before the first block, add to '
    "each token's vector a **position vector** that says *where* it stands."
)
st.latex(r"\text{input}_t = \underbrace{W_E[\mathrm{id}_t]}_{\text{token embedding}} + \underbrace{PE_t}_{\text{position } t}")

st.header("1. The sinusoidal encoding")
st.markdown(
    "The original Transformer uses fixed waves: dimension pairs (2i, 2i+1) hold a sine and a cosine of the "
    "position, each pair at its own frequency. The first pairs wiggle fast, the last ones very slowly, so "
    "every position gets a different pattern, and nearby positions get similar ones."
)
st.latex(r"PE_{(pos,\,2i)} = \sin\!\left(\frac{pos}{10000^{2i/d}}\right), \qquad PE_{(pos,\,2i+1)} = \cos\!\left(\frac{pos}{10000^{2i/d}}\right)")
c1, c2 = st.columns(2)
d_default = lm.cfg.d_model if lm.cfg.d_model % 2 == 0 and lm.cfg.d_model <= 256 else 128
d = c1.slider("d (dimensions)", 2, 256, d_default, step=2, key="positions_d", help="Width of the encoding, d_model. Starts at this model's width.")
n_pos = c2.slider("Length (positions)", 2, 256, 64, key="positions_length", help="How many positions to encode, starting at 0.")
pe_fig, counter_fig, pe_rows_fig, sim_fig = cached.sinusoid_figures(d, n_pos)
ui.show_figure(pe_fig, key="positions_pe")

if "positions_dims" in st.session_state:  # keep only the dimensions that still exist after d changed
    st.session_state["positions_dims"] = [i for i in st.session_state["positions_dims"] if i < d]
    dims = st.multiselect("Dimensions to draw", range(d), key="positions_dims", help="Columns of the table above, drawn as curves over the positions.")
else:
    dims = st.multiselect(
        "Dimensions to draw", range(d), default=sorted({i for i in (0, 1, 6, d // 2) if i < d}), key="positions_dims", help="Columns of the table above, drawn as curves over the positions."
    )
if dims:
    ui.show_figure(waves(sinusoidal_encoding(n_pos, d).numpy(), dims), key="positions_waves")
    # wavelength of pair i: λ_i = 2π · 10000^(2i/d)
    st.caption("Wavelengths (positions per full wave): " + ", ".join(f"dim {i}: {2 * math.pi * 10000 ** (2 * (i // 2) / d):,.1f}" for i in dims))
else:
    st.info("Pick at least one dimension to draw.")

st.header("2. Like a binary counter")
n_count = min(n_pos, cached.COUNTER_ROWS)
st.markdown(
    f"Write the positions 0 … {n_count - 1} in binary: the lowest bit flips every step, the next every 2 steps, "
    "the next every 4, and so on — each bit is a slower clock, and together they give every position a unique "
    "code. The sinusoids do the same thing smoothly: the first columns swing fast, later columns ever more "
    "slowly, and every row is different. Unlike bits, they are continuous, so a small shift in position is a "
    "small change in the vector."
)
c1, c2 = st.columns([1, 3])
with c1:
    ui.show_figure(counter_fig, key="positions_bits")
with c2:
    ui.show_figure(pe_rows_fig, key="positions_pe_rows")

st.header("3. Position-to-position similarity")
st.markdown(
    "The dot product of two position vectors depends only on how far apart they are: every pair of "
    "dimensions adds cos(ω·(i − j)). Nearby positions score high, and the pattern is the same along every "
    'diagonal — which makes "3 tokens back" easy to recognise anywhere in the text.'
)
st.latex(r"PE_i \cdot PE_j = \sum_{k} \cos\!\big(\omega_k\,(i - j)\big), \qquad \omega_k = 10000^{-2k/d}")
ui.show_figure(sim_fig, key="positions_similarity")

st.header("4. This model's position vectors, added to its token vectors")
if lm.cfg.pos_encoding == "rotary":
    st.markdown(
        f"**{lm.name}** has no position vectors to add: it uses **rotary position embedding (RoPE)**. Inside every "
        "attention head, each query and key is turned by an angle proportional to its position, so the score "
        "between two tokens depends on how far apart they are. The token vectors enter the first block unchanged. "
        "The page **RoPE and shared heads** (sidebar) shows the rotation with this model's own numbers; pick "
        "**shakespeare-gpt** in the sidebar to see position vectors added here."
    )
    st.stop()
tr = ui.trace_or_stop(state)
labels = tr.encoding.labels
T = len(labels)
if lm.cfg.pos_encoding == "sinusoidal":
    W_pos = lm.model.W_pos.detach().numpy()  # (n_ctx, d_model)
    diff = float(np.abs(W_pos - sinusoidal_encoding(lm.cfg.n_ctx, lm.cfg.d_model).numpy()).max())
    st.markdown(f"**{lm.name}** uses the fixed sinusoids (d = {lm.cfg.d_model}, up to {lm.cfg.n_ctx} positions): its position table W_pos equals the formula above (largest difference {diff:.1g}).")
else:
    st.markdown(f"**{lm.name}** *learned* its {lm.cfg.n_ctx} position vectors W_pos during training, like GPT-2: they are not sinusoids, and the model cannot read more than {lm.cfg.n_ctx} tokens.")
if lm.cfg.family == "bert":
    st.markdown("BERT also adds a **token type** vector (sentence A or B) and then applies a LayerNorm: the right panel is that normalized sum.")
st.markdown(
    f"Your sentence has {T} tokens, so it takes rows 0 … {T - 1} of W_pos (middle). The input to the first block "
    "is the sum, token by token and dimension by dimension: the same token at two positions now gets two "
    "different input vectors."
)
for col, fig, key in zip(st.columns(3), cached.input_figures(state.model, state.sentence, tr), ("positions_sum_embed", "positions_sum_pos", "positions_sum_input"), strict=True):
    with col:
        ui.show_figure(fig, key=key)
norm_e, norm_p = np.linalg.norm(tr["hook_embed"], axis=1).mean(), np.linalg.norm(tr["hook_pos_embed"], axis=1).mean()
st.caption(
    f"Each panel has its own colour scale. Average length of a token vector here: {norm_e:.3g}; of a position vector: {norm_p:.3g}. When one is much longer than the other, it dominates the sum."
)
