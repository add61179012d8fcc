"""Inside a block: the residual stream, the norms (LayerNorm or RMSNorm, before or after each sublayer), the MLP
(GELU or SwiGLU), and how much attention and the MLP each add."""

import streamlit as st

import ui
from lessons import block_stats as bs
from ui.caches import block as cached

state = ui.sidebar()
cfg = ui.get_model(state.model).cfg
L, swiglu = state.layer, bs.gated(cfg)
read = bs.reading(cfg, L, ui.controls_place())  # the page's words for this model: its norms and its MLP

st.title("🧱 Inside a block")
ui.explain(read.intro)
st.latex(read.block_latex)

key = state.key.untempered  # the trace's key (no weights shown: τ on them changes nothing here); the figures read it
tr = ui.trace_or_stop(key)
labels, T = tr.encoding.labels, len(tr.encoding)
ui.as_trained(state, "Every number on this page")

st.header("1 · The residual stream")
ui.explain(read.stream)
norms_fig, norms, out = cached.stream_figure(key)  # norms: (n_stages, T)
ui.show_figure(norms_fig, key="block_norms")
st.caption(
    f"Average length over the {T} tokens: {norms[0].mean():.3g} at the start, "
    f"{norms[-1].mean():.3g} after the last block."
)
if out:
    st.caption(bs.stand_out_note(out, labels[out[0]]))

st.header(f"2 · {read.norm} (block {L})")
ui.explain(read.norm_text)
st.latex(read.norm_latex)
ln = st.radio(
    f"Which {read.norm}",
    list(read.ln_names),
    format_func=read.ln_names.get,
    horizontal=True,
    bind="query-params",
    key="block_ln",
    help="Each block has two, one for each sublayer.",
)
mean_fig, spread_fig, steps = cached.norm_figures(key, L, ln)
ui.side_by_side({"block_ln_mean": mean_fig, "block_ln_std": spread_fig})
st.caption(bs.norm_note(steps, cfg.norm, cfg.ln_eps))
help_token = "One token, shown number by number here and neuron by neuron in section 3."
tok = st.selectbox(
    "Token to inspect",
    range(T),
    format_func=ui.token_names(labels),
    **ui.choice("block_token", range(T), T - 1),
    help=help_token,
)
values_fig, act_fig, swiglu_fig = cached.token_figures(key, L, ln, tok)
ui.show_figure(values_fig, key="block_ln_token")

st.header(f"3 · The MLP (block {L})")
ui.explain(read.mlp_text)
for formula in read.mlp_latex:
    st.latex(formula)
ui.side_by_side({"block_gelu": act_fig, "block_swiglu": swiglu_fig} if swiglu else {"block_gelu": act_fig})
st.caption(bs.active_note(tr[f"blocks.{L}.mlp.hook_post"], tok, by_size=swiglu))
step, biggest = min(8, cfg.d_mlp), "|output|" if swiglu else "output"
help_n = (
    f"The N neurons with the largest {biggest} on any token of the sentence, "
    f"strongest first; {cfg.d_mlp} shows them all."
)
n_shown = st.slider(
    "Neurons shown",
    step,
    cfg.d_mlp,
    min(64, cfg.d_mlp),
    step=step,
    bind="query-params",
    key="block_neurons",
    help=help_n,
)
ui.show_figure(cached.mlp_figure(key, L, n_shown), key="block_mlp")

st.header("4 · What attention and the MLP add")
ui.explain(read.adds_text)
st.latex(read.adds_latex)
layers_fig, tokens_fig = cached.adds_figures(key, L)  # every block averaged; block L token by token
ui.side_by_side({"block_adds_layers": layers_fig, "block_adds_tokens": tokens_fig})
st.caption(bs.adds_note(tr, L))
