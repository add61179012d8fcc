"""Inside a block: the residual stream, the norms, the MLP and what each half of a block adds."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from figures import block as fb
from figures.common import grouped_bars
from lessons import block_stats as bs

from ..models import TraceKey, get_trace, shared

NORM_STEPS = {"layernorm": ("normalized x̂", "output x̂⊙w + b"), "rmsnorm": ("normalized x̂", "output x̂⊙w")}


@shared(max_entries=16)
def stream_figure(key: TraceKey) -> tuple[go.Figure, np.ndarray, tuple[int, float, float] | None]:
    """‖x‖ of every token at every stage of the residual stream (the colours capped below a token that stands far out);
    those lengths, (n_stages, T); and the token that stands out (see block_stats.stand_out)."""
    tr = get_trace(key)
    norms = bs.residual_norms(tr)
    out = bs.stand_out(norms)
    stages = [label for _, label in bs.stream_stages(tr.cfg)]
    fig = fb.residual_norm_heatmap(norms, stages, tr.encoding.labels, zmax=None if out is None else out[2])
    return fig, norms, out


@shared(max_entries=32)
def norm_figures(key: TraceKey, layer: int, ln: str) -> tuple[go.Figure, go.Figure, bs.NormSteps]:
    """Per-token mean and spread (LayerNorm: standard deviation; RMSNorm: root mean square) of the norm's input,
    normalized vectors and output; and those vectors."""
    tr = get_trace(key)
    cfg, steps = tr.cfg, bs.norm_steps(tr, layer, ln)
    names = ("input x", *NORM_STEPS[cfg.norm])
    stats = {name: bs.token_stats(v, cfg.norm) for name, v in zip(names, (steps.x, steps.x_hat, steps.y), strict=True)}
    labels = tr.encoding.labels
    rms = cfg.norm == "rmsnorm"
    spread = (
        ("Root mean square √mean(x²)", "root mean square") if rms else ("Standard deviation σ", "standard deviation")
    )
    means, spreads = {k: m for k, (m, _) in stats.items()}, {k: s for k, (_, s) in stats.items()}
    mean_title = f"Mean μ of each token's {cfg.d_model} numbers"
    mean_fig = grouped_bars(means, labels, title=mean_title, x_title="token", y_title="mean")
    spread_fig = grouped_bars(
        spreads, labels, title=f"{spread[0]} of each token's numbers", x_title="token", y_title=spread[1]
    )
    return mean_fig, spread_fig, steps


@shared(max_entries=32)
def token_figures(key: TraceKey, layer: int, ln: str, tok: int) -> tuple[go.Figure, go.Figure, go.Figure | None]:
    """One token: its numbers before and after the norm; its MLP neurons on the activation curve (GELU, or SwiGLU's
    SiLU of the gate); and for SwiGLU the strongest neurons' SiLU(gate), linear branch and product."""
    tr = get_trace(key)
    cfg, steps = tr.cfg, bs.norm_steps(tr, layer, ln)
    label = tr.encoding.labels[tok]
    values = dict(zip(("input x", *NORM_STEPS[cfg.norm]), (steps.x[tok], steps.x_hat[tok], steps.y[tok]), strict=True))
    values_title = f"The {cfg.d_model} numbers of token {tok} ({label}) before and after {bs.norm_name(cfg)} {ln[-1]}"
    values_fig = fb.token_values(values, values_title)
    pre = tr[f"blocks.{layer}.mlp.hook_pre"][tok]  # (d_mlp,): GELU's input, or SwiGLU's gate
    curve_x, curve_y = bs.activation_curve(pre, cfg.activation)
    if not bs.gated(cfg):
        post = tr[f"blocks.{layer}.mlp.hook_post"][tok]  # (d_mlp,)
        title = f"GELU, and the {cfg.d_mlp} neurons of token {tok} ({label})"
        return values_fig, fb.activation_figure(curve_x, curve_y, pre, post, title), None
    title = f"SiLU of the gate, for the {cfg.d_mlp} neurons of token {tok} ({label})"
    act = fb.activation_figure(curve_x, curve_y, pre, bs.activation(pre, "silu"), title, fn="SiLU", pre_name="x·W_gate")
    sw = bs.swiglu(tr, layer, tok, 12)
    title = f"Token {tok}'s 12 strongest neurons: SiLU(gate) ⊙ linear = output"
    return values_fig, act, fb.swiglu_bars(sw.neurons, sw.silu_gate, sw.linear, sw.post, title)


@shared(max_entries=32)
def mlp_figure(key: TraceKey, layer: int, n: int) -> go.Figure:
    """The n most active neurons of the block's MLP (SwiGLU: the n largest in size), for every token."""
    tr = get_trace(key)
    post, swi = tr[f"blocks.{layer}.mlp.hook_post"], bs.gated(tr.cfg)  # (T, d_mlp)
    neurons = bs.top_neurons(post, n, by_size=swi)  # (n,) neuron ids
    formula = "SiLU(x·W_gate) ⊙ x·W_in" if swi else "GELU(x·W_in + b_in)"
    title = f"MLP activations {formula}: the {n} most active of {post.shape[1]} neurons"
    value_name = "SwiGLU output" if swi else "GELU output"
    return fb.mlp_heatmap(post[:, neurons], neurons, tr.encoding.labels, title, value_name, signed=swi)


@shared(max_entries=32)
def adds_figures(key: TraceKey, layer: int) -> tuple[go.Figure, go.Figure]:
    """‖attn_out‖ and ‖mlp_out‖: per block averaged over the tokens, and per token for `layer`."""
    tr = get_trace(key)
    attn, mlp = bs.contribution_norms(tr)  # (n_layer, T) each
    per_layer = {"‖attention output‖": attn.mean(axis=1), "‖MLP output‖": mlp.mean(axis=1)}
    blocks = [str(i) for i in range(len(attn))]
    layers_fig = grouped_bars(
        per_layer, blocks, title="Average over tokens, per block", x_title="block", y_title="average length"
    )
    per_token = {"‖attention output‖": attn[layer], "‖MLP output‖": mlp[layer]}
    tokens_fig = grouped_bars(
        per_token, tr.encoding.labels, title=f"Block {layer}, per token", x_title="token", y_title="length"
    )
    return layers_fig, tokens_fig
