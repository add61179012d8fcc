"""Inside a block: the residual stream, the norms (LayerNorm or RMSNorm, before or after each sublayer), the MLP (GELU or
SwiGLU), and how much attention and the MLP each add."""

import numpy as np
import streamlit as st

import ui
from lessons import block_stats as bs
from ui import cached_model as cm

st.set_page_config(page_title="Inside a block · Attention Atlas", page_icon="🧱", layout="wide")
state = ui.sidebar()
cfg = ui.get_model(state.model).cfg
L, post, rms, swiglu = state.layer, cfg.post_norm, cfg.norm == "rmsnorm", bs.gated(cfg)
NORM, N = ("RMSNorm", r"\mathrm{RMS}") if rms else ("LayerNorm", r"\mathrm{LN}")


def side_by_side(figs, keys) -> None:
    for col, fig, key in zip(st.columns(len(figs)), figs, keys, strict=True):
        with col:
            ui.show_figure(fig, key=key)


st.title("🧱 Inside a block")
where = f"Before each step a{'n **RMSNorm** (a simpler LayerNorm)' if rms else ' **LayerNorm**'} rescales the vector."
if post:
    where = "In BERT the **LayerNorms** come *after* each step (post-norm): the sum x + sublayer is normalized, and the normalized vector flows on."
st.markdown(
    "Attention is only half of a transformer block. Each token's vector travels along the **residual stream**: every block *reads* it, computes something, and *adds* "
    "the result back instead of replacing it. A block has two such steps: attention (tokens exchange information) and a small feed-forward network, the **MLP** (each "
    f"token thinks on its own). {where} This model stacks {cfg.n_layer} blocks; the sidebar's layer picks block **{L}** for sections 2–4."
)
if post:
    st.latex(r"x_{\mathrm{mid}} = x + \mathrm{Attn}(x), \quad h = \mathrm{LN}_1(x_{\mathrm{mid}}), \quad x_{\mathrm{out}} = \mathrm{LN}_2\big(h + \mathrm{MLP}(h)\big)")
else:
    st.latex(rf"x_{{\mathrm{{mid}}}} = x + \mathrm{{Attn}}\big({N}_1(x)\big), \qquad x_{{\mathrm{{out}}}} = x_{{\mathrm{{mid}}}} + \mathrm{{MLP}}\big({N}_2(x_{{\mathrm{{mid}}}})\big)")

tr = ui.trace_or_stop(state)
labels, T = tr.encoding.labels, len(tr.encoding)
key = (state.model, state.sentence, state.temperature)  # fixes the trace

st.header("1 · The residual stream")
stages = "then after each block's attention, its LN1, its MLP and its LN2 (whose output is the next block's input)" if post else "then after each block's attention and after its MLP"
st.markdown(
    f"Row by row, the stream of every token: at the start ({bs.input_label(cfg)}), {stages}. The colour is the vector's length ‖x‖. Since every step *adds* to the stream, "
    "nothing is thrown away: a later block can still read what an earlier one wrote" + (" (BERT's norms rescale the whole sum, so the length is reset after every step)." if post else ".")
)
norms_fig, norms, out = cm.stream_figure(*key, tr)  # norms: (n_stages, T)
ui.show_figure(norms_fig, key="block_norms")
st.caption(f"Average length over the {T} tokens: {norms[0].mean():.3g} at the start, {norms[-1].mean():.3g} after the last block.")
if out:
    st.caption(
        f"Token {out[0]} ({labels[out[0]]}) grows to {out[1]:,.0f}, far longer than any other (at most {out[2]:,.0f}), so the colours stop at {out[2]:,.0f} (hover for the real "
        "lengths). Large models often build such a huge vector on one token, usually the first: the same token most heads use as an attention sink."
    )

st.header(f"2 · {NORM} (block {L})")
if rms:
    st.markdown(
        "RMSNorm works on one token at a time. It divides the token's numbers by their root mean square, so every token arrives with root mean square 1 whatever its length "
        "in the stream. Unlike LayerNorm it does **not** subtract the mean (the mean is only rescaled) and has no bias; a learned gain w (one per dimension) then rescales it. "
        "In the charts: *input x* is the stream, *normalized x̂* = x/√(mean(x²) + ε) before the gain, and *output* = x̂ ⊙ w, the vector the next sublayer reads. "
        f"ε is a tiny number (here {cfg.ln_eps:.0e}) that keeps the division safe when a token's numbers are all near 0."
    )
    st.latex(r"\mathrm{RMSNorm}(x) = \frac{x}{\sqrt{\frac{1}{d}\sum_{i=1}^{d} x_i^2 + \varepsilon}} \odot w")
else:
    st.markdown(
        "LayerNorm works on one token at a time. It subtracts the mean of the token's numbers and divides by their spread, so every token arrives with mean 0 and standard "
        "deviation 1 whatever its length in the stream. Then a learned gain w and bias b (one per dimension) rescale it, so the mean and spread move away from 0 and 1 again. "
        "In the charts: *input x* is the stream, *normalized x̂* = (x − μ)/√(σ² + ε) before the gain and bias, and *output* = x̂ ⊙ w + b, the vector the next step reads. "
        f"ε is a tiny number (here {cfg.ln_eps:g}) that keeps the division safe when a token's numbers are all alike."
        + (" In BERT, LN1 reads x + attention and LN2 reads h + MLP; LN2's output is the block's output." if post else "")
    )
    st.latex(r"\mathrm{LN}(x) = \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}} \odot w + b, \qquad \mu = \frac{1}{d}\sum_{i=1}^{d} x_i, \quad \sigma^2 = \frac{1}{d}\sum_{i=1}^{d} (x_i - \mu)^2")
ln_names = {"ln1": f"{NORM} 1 (before attention, reads x)", "ln2": f"{NORM} 2 (before the MLP, reads x_mid)"}
ln_names = {"ln1": "LayerNorm 1 (after attention, reads x + attn)", "ln2": "LayerNorm 2 (after the MLP, reads h + mlp: the block's output)"} if post else ln_names
ln = st.radio(f"Which {NORM}", list(ln_names), format_func=ln_names.get, horizontal=True, key="block_ln", help="Each block has two, one for each sublayer.")
mean_fig, spread_fig, steps = cm.norm_figures(*key, L, ln, tr)
side_by_side((mean_fig, spread_fig), ("block_ln_mean", "block_ln_std"))
(hat_mean, hat_spread), x_spread = bs.token_stats(steps.x_hat, cfg.norm), bs.token_stats(steps.x, cfg.norm)[1]
hair = "a hair under 1 because of ε" if hat_spread.max() < 1 - 5e-7 else f"ε = {cfg.ln_eps:g} is too small to show here"
spread = f"between {hat_spread.min():.6f} and {hat_spread.max():.6f} ({hair})"
centre = f"mean lies within ±{np.abs(hat_mean).max():.1e} of 0 and its standard deviation {spread}"
centre = f"root mean square lies {spread}; its mean is not moved to 0: {hat_mean.min():.3g} … {hat_mean.max():.3g}" if rms else centre
st.caption(f"After normalizing, every token's {centre}. The input's spread ranged from {x_spread.min():.3g} to {x_spread.max():.3g}.")
ui.keep_choice("block_token", range(T), T - 1)
tok = st.selectbox("Token to inspect", range(T), format_func=lambda p: f"{p}: {labels[p]}", key="block_token", help="One token, shown number by number here and neuron by neuron in section 3.")
values_fig, act_fig, swiglu_fig = cm.token_figures(*key, L, ln, tok, tr)
ui.show_figure(values_fig, key="block_ln_token")

st.header(f"3 · The MLP (block {L})")
size = f"{cfg.d_model} \\times {cfg.d_mlp}"
if swiglu:
    st.markdown(
        f"The feed-forward network works on each token separately. This model's is a **SwiGLU**: it widens the vector from {cfg.d_model} to {cfg.d_mlp} numbers twice, a *gate* "
        "x·W_gate and a *linear branch* x·W_in. The gate goes through SiLU (about x for large positive x, about 0 for negative x, with a small dip below 0) and multiplies the "
        f"linear branch neuron by neuron; the product, one number per **neuron**, is projected back to {cfg.d_model}. A neuron speaks when its gate is open and its linear "
        "branch is large, in either sign. Left: each neuron's gate on the SiLU curve; right: the token's strongest neurons, their two factors and the product."
    )
    mlp = r"\big(\mathrm{SiLU}(x\,W_{\mathrm{gate}}) \odot x\,W_{\mathrm{in}}\big)\,W_{\mathrm{out}}, \quad \mathrm{SiLU}(g) = \frac{g}{1 + e^{-g}}"
    st.latex(r"\mathrm{MLP}(x) = " + mlp + r", \quad W_{\mathrm{gate}}, W_{\mathrm{in}} \in \mathbb{R}^{" + size + "}")
else:
    st.markdown(
        f"The feed-forward network works on each token separately (no token looks at another here). It widens the vector from {cfg.d_model} to {cfg.d_mlp} numbers, the "
        f"**neurons**, passes each through the GELU function, and projects back to {cfg.d_model}. GELU lets positive inputs through almost unchanged and squashes negative "
        "ones to about 0 (with a small dip just below 0): a neuron is *on* when its input is large and positive, *off* otherwise. Neurons often fire for recognisable patterns of the text."
    )
    st.latex(r"\mathrm{MLP}(x) = \mathrm{GELU}(x\,W_{\mathrm{in}} + b_{\mathrm{in}})\,W_{\mathrm{out}} + b_{\mathrm{out}}, \qquad W_{\mathrm{in}} \in \mathbb{R}^{" + size + "}")
    if cfg.activation == "gelu_new":
        st.latex(r"\mathrm{GELU}(x) = x\,\Phi(x) \approx \tfrac{1}{2}\,x\left(1 + \tanh\!\left[\sqrt{2/\pi}\,\big(x + 0.044715\,x^3\big)\right]\right) \quad \text{(the tanh form this model uses)}")
    else:
        st.latex(r"\mathrm{GELU}(x) = x\,\Phi(x), \quad \Phi = \text{the standard normal CDF (the exact form this model uses)}")
side_by_side((act_fig, swiglu_fig)[: 1 + swiglu], ("block_gelu", "block_swiglu")[: 1 + swiglu])
mine, share = bs.active_counts(tr[f"blocks.{L}.mlp.hook_post"], tok, by_size=swiglu)
st.caption(f"For this token {mine} of {cfg.d_mlp} neurons output {'a size |output| of ' if swiglu else ''}more than 0.1; over all tokens, {share:.1%} do.")
step, biggest = min(8, cfg.d_mlp), "|output|" if swiglu else "output"
help_n = f"The N neurons with the largest {biggest} on any token of the sentence, strongest first; {cfg.d_mlp} shows them all."
n_shown = st.slider("Neurons shown", step, cfg.d_mlp, min(64, cfg.d_mlp), step=step, key="block_neurons", help=help_n)
ui.show_figure(cm.mlp_figure(*key, L, n_shown, tr), key="block_mlp")

st.header("4 · What attention and the MLP add")
st.markdown(
    "Each sublayer's output is added to the stream. Its length ‖·‖ says how strongly it changes the token's vector, compared with the length of the stream it is added to. "
    f"Left: every block, averaged over the tokens (the average of the per-token lengths). Right: block {L}, token by token."
)
if post:
    st.latex(r"\lVert \mathrm{Attn}(x_t) \rVert_2 \ \text{vs} \ \lVert x_t \rVert_2, \qquad \lVert \mathrm{MLP}(h_t) \rVert_2 \ \text{vs} \ \lVert h_t \rVert_2")
else:
    st.latex(rf"\lVert \mathrm{{Attn}}({N}_1(x_t)) \rVert_2 \quad \text{{vs}} \quad \lVert \mathrm{{MLP}}({N}_2(x_{{\mathrm{{mid}},t}})) \rVert_2 \quad \text{{vs}} \quad \lVert x_t \rVert_2")
side_by_side(cm.adds_figures(*key, L, tr), ("block_adds_layers", "block_adds_tokens"))
a = bs.adds(tr, L)
to = "h = LN1(x + attn), of average length " if post else ""
st.caption(
    f"In block {L}, attention adds vectors of average length {a.attn:.3g} to a stream of average length {a.x:.3g} ({a.attn / a.x:.1%} of it); "
    f"the MLP adds {a.mlp:.3g} to {to}{a.x_mid:.3g} ({a.mlp / a.x_mid:.1%})."
)
