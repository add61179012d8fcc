"""Inside a block: the residual stream, LayerNorm, the MLP, and how much attention and the MLP each add."""

import numpy as np
import streamlit as st

import ui
from lessons import block_stats as bs
from ui import cached

st.set_page_config(page_title="Inside a block · Attention Atlas", page_icon="🧱", layout="wide")
state = ui.sidebar()
cfg = ui.get_model(state.model).cfg
L = state.layer


st.title("🧱 Inside a block")
st.markdown(
    "Attention is only half of a transformer block. Each token's vector travels along the **residual stream**: "
    "every block *reads* it, computes something, and *adds* the result back instead of replacing it. A block "
    "has two such steps: attention (tokens exchange information) and a small feed-forward network, the **MLP** "
    "(each token thinks on its own). Before each step a **LayerNorm** rescales the vector. "
    f"This model stacks {cfg.n_layer} blocks; the sidebar's layer picks block **{L}** for sections 2–4."
)
st.latex(r"x_{\mathrm{mid}} = x + \mathrm{Attn}\big(\mathrm{LN}_1(x)\big), \qquad x_{\mathrm{out}} = x_{\mathrm{mid}} + \mathrm{MLP}\big(\mathrm{LN}_2(x_{\mathrm{mid}})\big)")

tr = ui.trace_or_stop(state)
labels = tr.encoding.labels
T = len(labels)
key = (state.model, state.sentence, state.temperature)  # fixes the trace

st.header("1 · The residual stream")
st.markdown(
    "Row by row, the stream of every token: at the start (token embedding + position), then after each block's "
    "attention and after its MLP. The colour is the vector's length ‖x‖. Since every step *adds* to the stream, "
    "nothing is thrown away: a later block can still read what an earlier one wrote."
)
norms = bs.residual_norms(tr)  # (2·n_layer + 1, T)
ui.show_figure(cached.stream_figure(*key, tr), key="block_norms")
st.caption(f"Average length over the {T} tokens: {norms[0].mean():.3g} at the start, {norms[-1].mean():.3g} after the last block.")

st.header(f"2 · LayerNorm (block {L})")
st.markdown(
    "LayerNorm works on one token at a time. It subtracts the mean of the token's numbers and divides by their "
    "spread, so every token arrives with mean 0 and standard deviation 1 whatever its length in the stream. "
    "Then a learned gain w and bias b (one per dimension) rescale it, so the mean and spread move away from 0 and 1 again. "
    "In the charts: *input x* is the stream, *normalized x̂* = (x − μ)/√(σ² + ε) before the gain and bias, and "
    "*output* = x̂ ⊙ w + b, the vector the next sublayer reads. ε is a tiny number "
    f"(here {cfg.ln_eps:g}) that keeps the division safe when a token's numbers are all alike."
)
st.latex(
    r"\mathrm{LN}(x) = \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}} \odot w + b, \qquad"
    r"\mu = \frac{1}{d}\sum_{i=1}^{d} x_i, \quad \sigma^2 = \frac{1}{d}\sum_{i=1}^{d} (x_i - \mu)^2"
)
ln_names = {"ln1": "LayerNorm 1 (before attention, reads x)", "ln2": "LayerNorm 2 (before the MLP, reads x_mid)"}
ln = st.radio("Which LayerNorm", list(ln_names), format_func=ln_names.get, horizontal=True, key="block_ln", help="Each block has two: one in front of attention, one in front of the MLP.")
steps = bs.layernorm_steps(tr, L, ln, cfg.ln_eps)
for col, fig, name in zip(st.columns(2), cached.layernorm_figures(*key, L, ln, tr), ("block_ln_mean", "block_ln_std"), strict=True):
    with col:
        ui.show_figure(fig, key=name)
hat_mean, hat_std = bs.token_mean_std(steps.x_hat)
x_std = bs.token_mean_std(steps.x)[1]
st.caption(
    f"After normalizing, every token's mean lies within ±{np.abs(hat_mean).max():.1e} of 0 and its standard deviation "
    f"between {hat_std.min():.6f} and {hat_std.max():.6f} (a hair under 1 because of ε). The input's spread ranged from "
    f"{x_std.min():.3g} to {x_std.max():.3g}."
)

ui.keep_choice("block_token", range(T), T - 1)
tok = st.selectbox("Token to inspect", range(T), format_func=lambda p: f"{p}: {labels[p]}", key="block_token", help="One token, shown number by number here and neuron by neuron in section 3.")
values_fig, gelu_fig = cached.token_figures(*key, L, ln, tok, tr)
ui.show_figure(values_fig, key="block_ln_token")

st.header(f"3 · The MLP (block {L})")
st.markdown(
    f"The feed-forward network works on each token separately (no token looks at another here). It widens the "
    f"vector from {cfg.d_model} to {cfg.d_mlp} numbers, the **neurons**, passes each through the GELU function, "
    f"and projects back to {cfg.d_model}. GELU lets positive inputs through almost unchanged and squashes "
    "negative ones to about 0 (with a small dip just below 0): a neuron is *on* when its input is large and "
    "positive, *off* otherwise. Neurons often fire for recognisable patterns of the text."
)
st.latex(
    r"\mathrm{MLP}(x) = \mathrm{GELU}(x\,W_{\mathrm{in}} + b_{\mathrm{in}})\,W_{\mathrm{out}} + b_{\mathrm{out}}, \qquad W_{\mathrm{in}} \in \mathbb{R}^{" + f"{cfg.d_model} \\times {cfg.d_mlp}" + "}"
)
if cfg.activation == "gelu_new":
    st.latex(r"\mathrm{GELU}(x) = x\,\Phi(x) \approx \tfrac{1}{2}\,x\left(1 + \tanh\!\left[\sqrt{2/\pi}\,\big(x + 0.044715\,x^3\big)\right]\right) \quad \text{(the tanh form this model uses)}")
else:
    st.latex(r"\mathrm{GELU}(x) = x\,\Phi(x), \quad \Phi = \text{the standard normal CDF}")
ui.show_figure(gelu_fig, key="block_gelu")
post = tr[f"blocks.{L}.mlp.hook_post"]  # (T, d_mlp)
st.caption(f"For this token {(post[tok] > 0.1).sum()} of {cfg.d_mlp} neurons output more than 0.1; over all tokens, {(post > 0.1).mean():.1%} do.")

n_shown = st.slider(
    "Neurons shown",
    min(8, cfg.d_mlp),
    cfg.d_mlp,
    min(64, cfg.d_mlp),
    step=min(8, cfg.d_mlp),
    key="block_neurons",
    help=f"The N neurons with the largest output on any token of the sentence, strongest first; {cfg.d_mlp} shows them all.",
)
ui.show_figure(cached.mlp_figure(*key, L, n_shown, tr), key="block_mlp")

st.header("4 · What attention and the MLP add")
st.markdown(
    "Each sublayer's output is added to the stream. Its length ‖·‖ says how strongly it changes the token's "
    "vector, compared with the length of the stream it is added to. Left: every block, averaged over the "
    f"tokens (the average of the per-token lengths). Right: block {L}, token by token."
)
st.latex(r"\lVert \mathrm{Attn}(\mathrm{LN}_1(x_t)) \rVert_2 \quad \text{vs} \quad \lVert \mathrm{MLP}(\mathrm{LN}_2(x_{\mathrm{mid},t})) \rVert_2 \quad \text{vs} \quad \lVert x_t \rVert_2")
attn, mlp = bs.contribution_norms(tr)  # (n_layer, T) each
for col, fig, name in zip(st.columns(2), cached.adds_figures(*key, L, tr), ("block_adds_layers", "block_adds_tokens"), strict=True):
    with col:
        ui.show_figure(fig, key=name)
a, m, x, x_mid = attn[L].mean(), mlp[L].mean(), norms[2 * L].mean(), norms[2 * L + 1].mean()  # averages over the tokens
st.caption(f"In block {L}, attention adds vectors of average length {a:.3g} to a stream of average length {x:.3g} ({a / x:.1%} of it); the MLP adds {m:.3g} to {x_mid:.3g} ({m / x_mid:.1%}).")
