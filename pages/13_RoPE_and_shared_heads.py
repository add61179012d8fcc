"""RoPE and shared key/value heads: how a Llama-family model puts positions into attention (rotation), and how several
query heads share one key/value head (grouped-query attention), with the model's own numbers."""

import functools

import streamlit as st

import ui
from figures import rope as frope
from figures.attention import vectors_heatmap
from lessons import gqa, rope
from ui.caches import rope as cached

state = ui.sidebar()
cfg = ui.get_model(state.model).cfg
L, H = state.layer, state.head

st.title("🌀 RoPE and shared key/value heads")
ui.explain(
    "Newer decoders such as Llama and SmolLM2 change two things inside attention. "
    "**RoPE** (rotary position embedding): instead of adding a position vector to each token, every query and key "
    "is *turned* by an angle that grows with its position, so position enters the score only through how far apart "
    "the two tokens are (what q and k contain still matters). **Shared key/value heads** (grouped-query attention): "
    "several query heads read the same keys and values, which saves memory. "
    f"The layer and head are the ones every page shares ({ui.controls_place()})."
)
# turns pair i by m·ω_i
ROTATION = r"\begin{pmatrix} \cos m\omega_i & -\sin m\omega_i \\ \sin m\omega_i & \cos m\omega_i \end{pmatrix}"
st.latex(
    r"\begin{pmatrix} x'_i \\ y'_i \end{pmatrix} = "
    + ROTATION
    + r"\begin{pmatrix} x_i \\ y_i \end{pmatrix},\qquad \omega_i = \theta^{-2i/d}"
)
st.latex(r"R(m\omega)\,q \cdot R(n\omega)\,k \;=\; q \cdot R\big((n-m)\omega\big)\,k \;=\; f(m-n)")
tr = ui.trace_or_stop(state.key)
labels, T = tr.encoding.labels, len(tr.encoding)


def no_rope(part: str) -> bool:
    """Say so when the model has no RoPE, show the position vectors it adds instead and offer a model that has RoPE;
    True when there is nothing to turn."""
    if rope.has_rope(cfg):
        return False
    st.info(rope.NO_ROPE)
    rotary = ui.models_of("llama")
    if rotary:
        st.button(
            f"Switch to {rotary[0]}, which has RoPE",
            on_click=st.session_state.update,
            args=({"atlas_model": rotary[0]},),
            key="rope_switch",
        )
    title = f"Instead, position vectors added to your {T} tokens ({cfg.d_model} numbers each)"
    ui.show_figure(
        vectors_heatmap(tr["hook_pos_embed"], labels, title, value_name="position vector"),
        key=f"rope_added_positions_{part}",
    )
    return True


def positions() -> tuple[int, int]:
    """The query position m and key position n (a decoder's query meets keys n ≤ m only)."""
    c1, c2 = st.columns(2)
    m = c1.selectbox(
        "Query position m", range(T), format_func=ui.token_names(labels), **ui.choice("rope_m", range(T), T - 1)
    )
    return m, c2.selectbox(
        "Key position n",
        range(m + 1),
        format_func=ui.token_names(labels),
        **ui.choice("rope_n", range(m + 1), 0),
        help="A key of the query head's key/value head.",
    )


def part_angles() -> None:
    if no_rope("angles"):
        return
    table, waves = cached.rope_angle_figures(
        state.model, st.slider("Positions shown", 8, 512, **ui.kept("rope_npos", max(64, min(T, 512)))), T
    )
    ui.side_by_side({"rope_angles": table, "rope_waves": waves})
    st.markdown(rope.angles_text(cfg))


def part_query_key() -> None:
    if no_rope("query_key"):
        return
    m, n = positions()
    qk = rope.query_key(tr, cfg, L, H, m, n)
    title = f"Query head {H} at m = {m} and its key (K/V head {qk.kv_head}) at n = {n}, layer {L}"
    ui.show_figure(
        frope.before_after_heatmap(qk.vectors, ["q before", "q turned", "k before", "k turned"], title),
        key="rope_vectors",
    )
    P = cfg.d_head // 2
    chosen = st.multiselect(
        "Pairs to draw",
        range(P),
        max_selections=6,
        **ui.kept_subset("rope_pairs", sorted({0, 1, P // 4, P - 1}), P),
        help="Pair i is dimensions i and i + d/2.",
    )
    if chosen:
        ui.show_figure(
            frope.clock_hands(
                *rope.pairs(qk.vectors), sorted(chosen), qk.angle_m, qk.angle_n, m, n, "Each pair is a clock hand"
            ),
            key="rope_clocks",
        )
    ui.show_figure(
        frope.pair_bars(qk.pair_dots, f"What each pair adds to the score q_{m}·k_{n} = {qk.score:.4f}"),
        key="rope_pair_bars",
    )
    st.caption(rope.score_text(qk))


def part_shift() -> None:
    if no_rope("shift"):
        return
    m, n = positions()
    sh = cached.rope_shifts(state.key.untempered, L, H, m, n)  # q and k before any weights: τ changes neither
    lo, hi = int(sh.shifts[0]), int(sh.shifts[-1])
    help_shift = "Move the query to m + s and the key to n + s."
    s = st.slider("Shift s", lo, hi, **ui.kept_within("rope_shift", 100, lo, hi), help=help_shift)
    k = sh.index(s)
    st.markdown(rope.shift_text(m, n))
    ui.show_figure(
        frope.shift_chart(
            sh.shifts, sh.both, sh.query_only, s, m, n, f"Layer {L}, head {H}: the score when the positions move"
        ),
        key="rope_shift_chart",
    )
    c1, c2, c3 = st.columns(3)
    c1.metric(f"q_{m} · k_{n}", f"{sh.score:.4f}")
    c2.metric(f"both moved by {s}", f"{sh.both[k]:.4f}", f"{sh.both[k] - sh.score:+.1e}", delta_color="off")
    c3.metric(
        f"only the query moved by {s}",
        f"{sh.query_only[k]:.4f}",
        f"{sh.query_only[k] - sh.score:+.4f}",
        delta_color="off",
    )
    st.caption(rope.shift_caption(sh))


def part_shared() -> None:
    st.latex(
        r"g = \left\lfloor h \,/\, (n_{\mathrm{head}} / n_{\mathrm{kv}}) \right\rfloor "
        rf"= \left\lfloor h / {gqa.group_size(cfg)} \right\rfloor"
    )
    c1, c2 = ui.stacking("gqa_intro", ui.SIDE_BY_SIDE_PX).columns([1, 2])
    with c1:
        ui.show_figure(
            frope.sharing_heatmap(
                gqa.sharing_table(cfg), f"{cfg.n_head} query heads, {cfg.n_kv_heads} key/value heads"
            ),
            key="gqa_table",
        )
    if not gqa.has_gqa(cfg):
        c2.info(
            "**No shared heads here:** every head has its own keys and "
            f"values ({cfg.n_head} query heads, {cfg.n_head} key/value heads)."
        )
        return
    c2.markdown(gqa.sharing_text(cfg))
    g = st.selectbox(
        "Key/value head",
        range(cfg.n_kv_heads),
        **ui.choice("gqa_group", range(cfg.n_kv_heads), cfg.kv_head(H)),
        format_func=functools.partial(gqa.kv_head_name, cfg),
    )
    per_row = (
        ui.panels_per_row("gqa_patterns", cfg.n_head // cfg.n_kv_heads),
        ui.panels_per_row("gqa_keys", cfg.n_kv_heads),
    )  # the values' chart is as wide
    k_fig, v_fig, p_fig, grp = cached.gqa_figures(state.key, L, g, per_row)
    ui.show_figure(p_fig, key="gqa_patterns")
    st.caption(gqa.differences_text(grp))
    ui.show_figure(k_fig, key="gqa_keys")
    ui.show_figure(v_fig, key="gqa_values")


PARTS = {
    "1 · Angles": part_angles, "2 · One query, one key": part_query_key, "3 · Only the offset counts": part_shift,
    "4 · Shared key/value heads": part_shared,
}
ui.lazy_tabs(PARTS, "rope_part")
