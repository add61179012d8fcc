"""What one transformer block does to the residual stream, measured from a trace; for every family.

Pre-norm (GPT, Llama):  x_mid = x + Attn(N1(x)),    x_out = x_mid + MLP(N2(x_mid))
Post-norm (BERT):       h = LN1(x + Attn(x)),       x_out = LN2(h + MLP(h))
N is LayerNorm (x − μ)/√(σ² + ε)·w + b, or Llama's RMSNorm x/√(mean(x²) + ε)·w (no mean subtracted, no bias).
The MLP is GELU(x·W_in + b_in)·W_out + b_out, or Llama's SwiGLU (SiLU(x·W_gate) ⊙ x·W_in)·W_out.
These helpers read the recorded tensors and summarise them: vector lengths, each norm's statistics per token,
the MLP's neurons. Plain numpy; nothing draws.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from transformer import ModelConfig, Trace

# which stream each norm of a block reads: pre-norm in front of each sublayer, post-norm (BERT) after each addition
NORM_INPUTS = {
    False: {"ln1": "hook_resid_pre", "ln2": "hook_resid_mid"},
    True: {"ln1": "hook_resid_mid", "ln2": "hook_resid_post"},
}


def norm_input(cfg: ModelConfig, ln: str) -> str:
    """The name (without "blocks.{l}.") of the stream norm `ln` ("ln1" or "ln2") of this family reads."""
    return NORM_INPUTS[cfg.post_norm][ln]


def input_label(cfg: ModelConfig, short: bool = False) -> str:
    """What enters block 0: token + position vector (GPT), the token vector alone (RoPE), LN of three vectors (BERT);
    short: at most 14 characters, for an axis."""
    if cfg.family == "bert":
        return "LN(e+pos+type)" if short else "LN(embed + pos + type)"
    return "embed" if cfg.pos_encoding == "rotary" else "embed + pos"


def stream_stages(cfg: ModelConfig) -> list[tuple[str, str]]:
    """(trace name, label) of every state of the residual stream, in order: the input, then per block
    + attention and + MLP (pre-norm), or + attention, LN1, + MLP, LN2 (post-norm: the norms sit on the stream)."""
    stages = [("blocks.0.hook_resid_pre", input_label(cfg, short=True))]
    for layer in range(cfg.n_layer):
        b = f"blocks.{layer}."
        if cfg.post_norm:
            stages += [(b + "hook_resid_mid", f"{layer}: + attention"), (b + "ln1.hook_normalized", f"{layer}: LN1")]
            stages += [(b + "hook_resid_post", f"{layer}: + MLP"), (b + "ln2.hook_normalized", f"{layer}: LN2 (out)")]
        else:
            stages += [(b + "hook_resid_mid", f"{layer}: + attention"), (b + "hook_resid_post", f"{layer}: + MLP")]
    return stages


def read(tr: Trace, name: str) -> np.ndarray:
    """tr[name], reading a post-norm block's output (ln2) from the next block's recorded input: the same numbers,
    without recomputing the block."""
    if name.endswith(".ln2.hook_normalized") and tr.cfg.post_norm:
        nxt = f"blocks.{int(name.split('.')[1]) + 1}.hook_resid_pre"
        if nxt in tr.cache:
            return tr[nxt]
    return tr[name]


def stand_out(norms: np.ndarray, factor: float = 5.0) -> tuple[int, float, float] | None:
    """A token whose stream grows far longer than every other token's (SmolLM2's first token reaches ~20,000:
    "massive activations"): (its position, its largest length, the largest length of any other token); None when
    no token's largest length is `factor` times every other's. norms: (n_stages, T)."""
    peak = norms.max(axis=0)  # (T,)
    if len(peak) < 2:
        return None
    p = int(peak.argmax())
    others = float(np.delete(peak, p).max())
    return (p, float(peak[p]), others) if peak[p] > factor * others else None


def block_output(tr: Trace, layer: int) -> np.ndarray:
    """(T, d) what block `layer` hands on: resid_post (pre-norm) or LN2 of it (post-norm)."""
    return read(tr, f"blocks.{layer}.{'ln2.hook_normalized' if tr.cfg.post_norm else 'hook_resid_post'}")


def residual_norms(tr: Trace) -> np.ndarray:
    """‖x_t‖₂ of the stream at every stage (see `stream_stages`) and position, shape (n_stages, T)."""
    return np.stack([np.linalg.norm(read(tr, name), axis=-1) for name, _ in stream_stages(tr.cfg)]).astype(np.float32)


def token_mean_std(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation of each row, (T,) each; the population std (divide by d), as LayerNorm uses."""
    x = np.asarray(x, dtype=np.float64)
    return x.mean(axis=-1).astype(np.float32), x.std(axis=-1).astype(np.float32)


def token_rms(x: np.ndarray) -> np.ndarray:
    """Root mean square √(mean(x²)) of each row, (T,): the size RMSNorm divides by."""
    x = np.asarray(x, dtype=np.float64)
    return np.sqrt((x**2).mean(axis=-1)).astype(np.float32)


def token_stats(x: np.ndarray, norm: str) -> tuple[np.ndarray, np.ndarray]:
    """(mean, spread) of each row: the spread is the std for LayerNorm, the root mean square for RMSNorm."""
    mean, std = token_mean_std(x)
    return mean, (token_rms(x) if norm == "rmsnorm" else std)


def normalize(x: np.ndarray, eps: float, norm: str = "layernorm") -> np.ndarray:
    """The norm without its gain (and bias), per row:
    LayerNorm x̂ = (x − mean) / √(var + ε);  RMSNorm x̂ = x / √(mean(x²) + ε)."""
    x = np.asarray(x, dtype=np.float64)
    if norm == "rmsnorm":
        return (x / np.sqrt((x**2).mean(axis=-1, keepdims=True) + eps)).astype(np.float32)  # (T, d)
    mean = x.mean(axis=-1, keepdims=True)  # (T, 1)
    var = x.var(axis=-1, keepdims=True)  # (T, 1), divided by d (not d − 1)
    return ((x - mean) / np.sqrt(var + eps)).astype(np.float32)  # (T, d)


@dataclass(frozen=True)
class NormSteps:
    """One norm of one block, for every token (T tokens, d = d_model)."""

    x: np.ndarray  # (T, d) input: the stream the norm reads
    x_hat: np.ndarray  # (T, d) normalized, before the gain (and bias)
    y: np.ndarray  # (T, d) x̂·w (+ b), as the model recorded it (…{ln}.hook_normalized)



def norm_steps(tr: Trace, layer: int, ln: str) -> NormSteps:
    """The input, the normalized vectors and the output of norm `ln` ("ln1" or "ln2") of block `layer`."""
    cfg = tr.cfg
    x = tr[f"blocks.{layer}.{norm_input(cfg, ln)}"]  # (T, d)
    return NormSteps(x, normalize(x, cfg.ln_eps, cfg.norm), tr[f"blocks.{layer}.{ln}.hook_normalized"])


def contribution_norms(tr: Trace) -> tuple[np.ndarray, np.ndarray]:
    """How much each block writes into the stream: ‖attn_out_t‖ and ‖mlp_out_t‖, shape (n_layer, T) each."""
    L = tr.cfg.n_layer
    attn = np.stack([np.linalg.norm(tr[f"blocks.{layer}.hook_attn_out"], axis=-1) for layer in range(L)])  # (L, T)
    mlp = np.stack([np.linalg.norm(tr[f"blocks.{layer}.hook_mlp_out"], axis=-1) for layer in range(L)])  # (L, T)
    return attn.astype(np.float32), mlp.astype(np.float32)


@dataclass(frozen=True)
class Adds:
    """Average lengths over the tokens, in one block: what attention adds to what stream, and the MLP likewise."""

    attn: float  # ‖attn_out‖
    x: float  # ‖the stream attention's output is added to‖: the block's input
    mlp: float  # ‖mlp_out‖
    x_mid: float  # ‖the stream the MLP's output is added to‖: x_mid (pre-norm) or h = LN1(x_mid) (post-norm)


def adds(tr: Trace, layer: int) -> Adds:
    b = f"blocks.{layer}."
    mid = tr[b + ("ln1.hook_normalized" if tr.cfg.post_norm else "hook_resid_mid")]  # (T, d)
    lengths = [
        np.linalg.norm(np.asarray(tr[b + n], dtype=np.float64), axis=-1).mean()
        for n in ("hook_attn_out", "hook_resid_pre", "hook_mlp_out")
    ]
    return Adds(
        *(float(v) for v in lengths[:3]), float(np.linalg.norm(np.asarray(mid, dtype=np.float64), axis=-1).mean())
    )


def top_neurons(post: np.ndarray, n: int, by_size: bool = False) -> np.ndarray:
    """The n neurons with the largest activation on any token (by_size: the largest |activation|), strongest first.
    post: (T, d_mlp) → (n,) neuron ids."""
    peak = (np.abs(post) if by_size else post).max(axis=0)  # (d_mlp,)
    return np.argsort(-peak, kind="stable")[:n]


def activation(x: np.ndarray, name: str) -> np.ndarray:
    """The MLP's activation as the model computes it: "gelu_new" = GPT-2's tanh approximation, "gelu" = exact x·Φ(x),
    "silu" = x·σ(x) (the gate of Llama's SwiGLU)."""
    t = torch.tensor(np.asarray(x, dtype=np.float32))
    if name == "silu":
        return F.silu(t).numpy()
    return F.gelu(t, approximate="tanh" if name == "gelu_new" else "none").numpy()


def gelu(x: np.ndarray, activation_name: str) -> np.ndarray:
    """GELU as the model computes it ("gelu_new" tanh form or exact "gelu")."""
    return activation(x, activation_name)


def activation_curve(pre: np.ndarray, name: str, n: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """The activation drawn over the range of `pre`, at least −3…3: (x, f(x)), (n,) each."""
    x = np.linspace(min(float(np.min(pre)), -3.0), max(float(np.max(pre)), 3.0), n, dtype=np.float32)
    return x, activation(x, name)


def gated(cfg: ModelConfig) -> bool:
    """A SwiGLU MLP: post = SiLU(x·W_gate) ⊙ x·W_in (recorded as mlp.hook_pre = the gate, mlp.hook_pre_linear)."""
    return cfg.activation == "silu"


@dataclass(frozen=True)
class SwiGLU:
    """One token's SwiGLU neurons, the n with the largest |post| first."""

    neurons: np.ndarray  # (n,) neuron ids
    gate: np.ndarray  # (n,) x·W_gate
    silu_gate: np.ndarray  # (n,) SiLU(x·W_gate)
    linear: np.ndarray  # (n,) x·W_in
    post: np.ndarray  # (n,) SiLU(gate) ⊙ linear, as the model recorded it


def swiglu(tr: Trace, layer: int, tok: int, n: int) -> SwiGLU:
    b = f"blocks.{layer}.mlp."
    gate, lin, post = tr[b + "hook_pre"][tok], tr[b + "hook_pre_linear"][tok], tr[b + "hook_post"][tok]  # (d_mlp,) each
    ids = np.argsort(-np.abs(post), kind="stable")[:n]
    return SwiGLU(ids, gate[ids], activation(gate[ids], "silu"), lin[ids], post[ids])


def active_counts(post: np.ndarray, tok: int, threshold: float = 0.1, by_size: bool = False) -> tuple[int, float]:
    """(neurons of token `tok` above the threshold, share of all tokens' neurons above it); by_size compares |post|."""
    big = (np.abs(post) if by_size else post) > threshold  # (T, d_mlp)
    return int(big[tok].sum()), float(big.mean())


# --- The Inside a block page's words for one model ---


@dataclass(frozen=True)
class Reading:
    """What the Inside a block page says about one model's block: where its norms sit (pre- or post-norm), which norm
    it uses (LayerNorm or RMSNorm), which MLP (GELU or SwiGLU), with their formulas."""

    intro: str  # the page's opening paragraph
    block_latex: str
    stream: str  # section 1: the residual stream
    norm: str  # "LayerNorm" or "RMSNorm"
    norm_text: str  # section 2: what the norm does
    norm_latex: str
    ln_names: dict[str, str]  # "ln1"/"ln2" → what each norm reads
    mlp_text: str  # section 3: what the MLP does
    mlp_latex: tuple[str, ...]  # its formula, then (GELU) the activation's form
    adds_text: str  # section 4: what attention and the MLP add
    adds_latex: str


def norm_name(cfg: ModelConfig) -> str:
    """What the model's norms are called: "RMSNorm" or "LayerNorm"."""
    return "RMSNorm" if cfg.norm == "rmsnorm" else "LayerNorm"


def reading(cfg: ModelConfig, layer: int, place: str) -> Reading:
    """The Inside a block page's texts for this model and block `layer`; `place` says where the layer is chosen
    (ui.state.controls_place)."""
    post, rms = cfg.post_norm, cfg.norm == "rmsnorm"
    norm, N = norm_name(cfg), (r"\mathrm{RMSNorm}" if rms else r"\mathrm{LN}")
    where = (
        f"Before each step a{'n **RMSNorm** (a simpler LayerNorm)' if rms else ' **LayerNorm**'} rescales the vector."
    )
    if post:
        where = (
            "In BERT the **LayerNorms** come *after* each step (post-norm): "
            "the sum x + sublayer is normalized, and the normalized vector flows on."
        )
    intro = (
        "Attention is only half of a transformer block. Each token's vector travels along the **residual stream**: "
        "every block *reads* it, computes something, and *adds* the result back instead of replacing it. "
        "A block has two such steps: attention (tokens exchange information) and a small feed-forward network, "
        f"the **MLP** (each token thinks on its own). {where} This model stacks {cfg.n_layer} blocks; "
        f"the shared layer ({place}) picks block **{layer}** for sections 2–4."
    )
    block_latex = (
        rf"x_{{\mathrm{{mid}}}} = x + \mathrm{{Attn}}\big({N}_1(x)\big), \qquad "
        rf"x_{{\mathrm{{out}}}} = x_{{\mathrm{{mid}}}} + \mathrm{{MLP}}\big({N}_2(x_{{\mathrm{{mid}}}})\big)"
    )
    if post:
        block_latex = (
            r"x_{\mathrm{mid}} = x + \mathrm{Attn}(x), \quad h = \mathrm{LN}_1(x_{\mathrm{mid}}), "
            r"\quad x_{\mathrm{out}} = \mathrm{LN}_2\big(h + \mathrm{MLP}(h)\big)"
        )
    stages = (
        "then after each block's attention, its LN1, its MLP and its LN2 (whose output is the next block's input)"
        if post
        else "then after each block's attention and after its MLP"
    )
    stream = (
        f"Row by row, the stream of every token: at the start ({input_label(cfg)}), {stages}. "
        "The colour is the vector's length ‖x‖. Since every step *adds* to the stream, "
        "nothing is thrown away: a later block can still read what an earlier one wrote"
    ) + (" (BERT's norms rescale the whole sum, so the length is reset after every step)." if post else ".")
    ln_names = {"ln1": f"{norm} 1 (before attention, reads x)", "ln2": f"{norm} 2 (before the MLP, reads x_mid)"}
    if post:
        ln_names = {
            "ln1": "LayerNorm 1 (after attention, reads x + attn)",
            "ln2": "LayerNorm 2 (after the MLP, reads h + mlp: the block's output)",
        }
    adds_text = (
        "Each sublayer's output is added to the stream. Its length ‖·‖ says how strongly it "
        "changes the token's vector, compared with the length of the stream it is added to. Left: every block, "
        f"averaged over the tokens (the average of the per-token lengths). Right: block {layer}, token by token."
    )
    adds_latex = (
        rf"\lVert \mathrm{{Attn}}({N}_1(x_t)) \rVert_2 \quad \text{{vs}} \quad "
        rf"\lVert \mathrm{{MLP}}({N}_2(x_{{\mathrm{{mid}},t}})) \rVert_2 \quad \text{{vs}} \quad \lVert x_t \rVert_2"
    )
    if post:
        adds_latex = (
            r"\lVert \mathrm{Attn}(x_t) \rVert_2 \ \text{vs} \ \lVert x_t \rVert_2, "
            r"\qquad \lVert \mathrm{MLP}(h_t) \rVert_2 \ \text{vs} \ \lVert h_t \rVert_2"
        )
    return Reading(
        intro, block_latex, stream, norm, *_norm_words(cfg), ln_names, *_mlp_words(cfg), adds_text, adds_latex
    )


def _norm_words(cfg: ModelConfig) -> tuple[str, str]:
    """What the block's norm does, in words and as a formula: RMSNorm, or LayerNorm (pre- or post-norm)."""
    if cfg.norm == "rmsnorm":
        text = (
            "RMSNorm works on one token at a time. It divides the token's numbers by their root mean square, "
            "so every token arrives with root mean square 1 whatever its length in the stream. Unlike LayerNorm it "
            "does **not** subtract the mean (the mean is only rescaled) and has no bias; a learned gain w (one per "
            "dimension) then rescales it. In the charts: *input x* is the stream, *normalized x̂* = x/√(mean(x²) "
            "+ ε) before the gain, and *output* = x̂ ⊙ w, the vector the next sublayer reads. ε is a tiny "
            f"number (here {cfg.ln_eps:.0e}) that keeps the division safe when a token's numbers are all near 0."
        )
        return text, r"\mathrm{RMSNorm}(x) = \frac{x}{\sqrt{\frac{1}{d}\sum_{i=1}^{d} x_i^2 + \varepsilon}} \odot w"
    text = (
        "LayerNorm works on one token at a time. It subtracts the mean of the token's numbers and divides by "
        "their spread, so every token arrives with mean 0 and standard deviation 1 whatever its length in the "
        "stream. Then a learned gain w and bias b (one per dimension) rescale it, so the mean and spread move "
        "away from 0 and 1 again. In the charts: *input x* is the stream, *normalized x̂* = (x − μ)/√(σ² + ε) "
        "before the gain and bias, and *output* = x̂ ⊙ w + b, the vector the next step reads. ε is a "
        f"tiny number (here {cfg.ln_eps:g}) that keeps the division safe when a token's numbers are all alike."
    ) + (
        " In BERT, LN1 reads x + attention and LN2 reads h + MLP; LN2's output is the block's output."
        if cfg.post_norm
        else ""
    )
    moments = r"\mu = \frac{1}{d}\sum_{i=1}^{d} x_i, \quad \sigma^2 = \frac{1}{d}\sum_{i=1}^{d} (x_i - \mu)^2"
    return text, r"\mathrm{LN}(x) = \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}} \odot w + b, \qquad " + moments


def _mlp_words(cfg: ModelConfig) -> tuple[str, tuple[str, ...]]:
    """What the block's MLP does, in words, and its formulas: SwiGLU, or GELU in its tanh or exact form."""
    size = f"{cfg.d_model} \\times {cfg.d_mlp}"
    if gated(cfg):
        text = (
            "The feed-forward network works on each token separately. This model's is a **SwiGLU**: "
            f"it widens the vector from {cfg.d_model} to {cfg.d_mlp} numbers twice, a *gate* x·W_gate and a *linear "
            "branch* x·W_in. The gate goes through SiLU (about x for large positive x, about 0 for negative x, "
            "with a small dip below 0) and multiplies the linear branch neuron by neuron; the product, "
            f"one number per **neuron**, is projected back to {cfg.d_model}. A neuron speaks when its gate "
            "is open and its linear branch is large, in either sign. Left: each neuron's gate on the SiLU curve; "
            "right: the token's strongest neurons, their two factors and the product."
        )
        mlp = (
            r"\mathrm{MLP}(x) = \big(\mathrm{SiLU}(x\,W_{\mathrm{gate}}) \odot x\,W_{\mathrm{in}}\big)"
            r"\,W_{\mathrm{out}}, \quad W_{\mathrm{gate}}, W_{\mathrm{in}} \in \mathbb{R}^{" + size + "}"
        )
        return text, (mlp, r"\mathrm{SiLU}(g) = \frac{g}{1 + e^{-g}}")
    text = (
        "The feed-forward network works on each token separately (no token looks at another here). "
        f"It widens the vector from {cfg.d_model} to {cfg.d_mlp} numbers, the **neurons**, passes each through the "
        f"GELU function, and projects back to {cfg.d_model}. GELU lets positive inputs through almost unchanged "
        "and squashes negative ones to about 0 (with a small dip just below 0): a neuron is *on* when its "
        "input is large and positive, *off* otherwise. Neurons often fire for recognisable patterns of the text."
    )
    mlp = (
        r"\mathrm{MLP}(x) = \mathrm{GELU}(x\,W_{\mathrm{in}} + b_{\mathrm{in}})\,W_{\mathrm{out}} "
        r"+ b_{\mathrm{out}}, \qquad W_{\mathrm{in}} \in \mathbb{R}^{" + size + "}"
    )
    gelu_form = (
        r"\begin{gathered}\mathrm{GELU}(x) = x\,\Phi(x), \quad "
        r"\Phi = \text{the standard normal CDF} \\ \text{(the exact form this model uses)}\end{gathered}"
    )
    if cfg.activation == "gelu_new":
        tanh = r"\tfrac{1}{2}\,x\left(1 + \tanh\!\left[\sqrt{2/\pi}\,\big(x + 0.044715\,x^3\big)\right]\right)"
        gelu_form = (
            r"\begin{gathered}\mathrm{GELU}(x) = x\,\Phi(x) \approx "
            + tanh
            + r" \\ \text{(the tanh form this model uses)}\end{gathered}"
        )
    return text, (mlp, gelu_form)


def stand_out_note(out: tuple[int, float, float], label: str) -> str:
    """The caption under the stream's lengths when one token's stream is far longer
    than the others' (see `stand_out`)."""
    p, peak, others = out
    return (
        f"Token {p} ({label}) grows to {peak:,.0f}, far longer than any other (at most {others:,.0f}), "
        f"so the colours stop at {others:,.0f} (hover for the real lengths). Large models often build such "
        "a huge vector on one token, usually the first: the same token most heads use as an attention sink."
    )


def norm_note(steps: NormSteps, norm: str, eps: float) -> str:
    """What one norm did to every token, in words: the mean and spread (LayerNorm) or root mean square (RMSNorm) of x̂,
    against the spread of the input."""
    (hat_mean, hat_spread), x_spread = token_stats(steps.x_hat, norm), token_stats(steps.x, norm)[1]  # (T,) each
    hair = "a hair under 1 because of ε" if hat_spread.max() < 1 - 5e-7 else f"ε = {eps:g} is too small to show here"
    spread = f"between {hat_spread.min():.6f} and {hat_spread.max():.6f} ({hair})"
    centre = f"mean lies within ±{np.abs(hat_mean).max():.1e} of 0 and its standard deviation {spread}"
    if norm == "rmsnorm":
        centre = (
            f"root mean square lies {spread}; its mean is not moved to 0: {hat_mean.min():.3g} … {hat_mean.max():.3g}"
        )
    return (
        f"After normalizing, every token's {centre}. "
        f"The input's spread ranged from {x_spread.min():.3g} to {x_spread.max():.3g}."
    )


def active_note(post: np.ndarray, tok: int, by_size: bool) -> str:
    """How many of token `tok`'s neurons are active (output, or by_size |output|, above 0.1), and the share
    over all tokens; post (T, d_mlp)."""
    mine, share = active_counts(post, tok, by_size=by_size)
    return (
        f"For this token {mine} of {post.shape[1]} neurons have {'|output|' if by_size else 'an output'} above 0.1; "
        f"over all tokens, {share:.1%} do."
    )


def adds_note(tr: Trace, layer: int) -> str:
    """What attention and the MLP of block `layer` add to the stream, on average, in words (see `adds`)."""
    a = adds(tr, layer)
    to = "h = LN1(x + attn), of average length " if tr.cfg.post_norm else ""
    return (
        f"In block {layer}, attention adds vectors of average length {a.attn:.3g} "
        f"to a stream of average length {a.x:.3g} ({a.attn / a.x:.1%} of it); "
        f"the MLP adds {a.mlp:.3g} to {to}{a.x_mid:.3g} ({a.mlp / a.x_mid:.1%})."
    )
