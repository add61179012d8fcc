"""The "Query–key map" page: the points are an independent PCA of the trace's queries and keys,
the lines its strongest weights."""

from __future__ import annotations

import numpy as np
import pandas as pd

from tests.apptest_utils import (
    EACH_BAD_INPUT,
    array,
    assert_bad_input_drawn,
    assert_ok,
    charts,
    page_path,
    run_page,
    run_typed,
    texts,
)
from transformer import Interventions, run_trace

PAGE = page_path("11_Query_key_map")
REPEATED = "the cat and the dog and the bird"  # "␣the" and "␣and" twice


def trace(lm, text=REPEATED, temperature=1.0, head_temperature=()):
    iv = Interventions(temperature=temperature, head_temperature=head_temperature)
    return run_trace(lm.model, lm.tokenizer, text, iv)


def figure(at) -> dict:
    (fig,) = charts(at)
    return fig


def traces(at) -> dict[str, dict]:
    return {d["name"]: d for d in figure(at)["data"]}


def reference_map(tr, layer: int, head: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Independent PCA of the stacked [Q; K]: the 2T points (queries first) and the
    variance share of the first two axes."""
    a = f"blocks.{layer}.attn."
    m = np.vstack([tr[a + "hook_q"][:, head], tr[a + "hook_k"][:, head]]).astype(np.float64)  # (2T, hs)
    c = m - m.mean(axis=0)
    u, s, _ = np.linalg.svd(c, full_matrices=False)
    return u[:, :2] * s[:2], (s**2 / (s**2).sum())[:2], c


def shown_points(at) -> np.ndarray:
    t = traces(at)
    return np.vstack([np.c_[array(t[n]["x"]), array(t[n]["y"])] for n in ("queries", "keys")])  # (2T, 2)


def assert_map(at, tr, layer: int, head: int) -> np.ndarray:
    """The queries and keys drawn equal the reference PCA up to the sign of each axis; returns the drawn points."""
    pts = shown_points(at)
    want, share, _ = reference_map(tr, layer, head)
    for c in range(2):
        sign = np.sign(pts[:, c] @ want[:, c])
        np.testing.assert_allclose(pts[:, c], sign * want[:, c], rtol=1e-4, atol=1e-4)
    layout = figure(at)["layout"]
    assert layout["xaxis"]["title"]["text"] == f"axis 1 ({share[0]:.0%} of the spread)"
    assert layout["yaxis"]["title"]["text"] == f"axis 2 ({share[1]:.0%} of the spread)"
    assert [m.value for m in at.metric] == [f"{share[0]:.1%}", f"{share[1]:.1%}", f"{1 - share.sum():.1%}"]
    return pts


def drawn_lines(at) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each line segment of the figure as (start, end)."""
    t = traces(at)["query → its strongest key"]
    x, y = array(t["x"]).reshape(-1, 3), array(t["y"]).reshape(-1, 3)
    return [(np.array([a[0], b[0]]), np.array([a[1], b[1]])) for a, b in zip(x, y, strict=True)]


def expected_pairs(
    w: np.ndarray, top_k: int, min_weight: float = 0.0, query: int | None = None
) -> list[tuple[int, int]]:
    """Independently: each query's top_k visible keys by weight, weights ≥ min_weight."""
    out = []
    for i in range(len(w)) if query is None else [query]:
        keys = sorted(range(i + 1), key=lambda j: -w[i, j])[:top_k]
        out += [(i, j) for j in keys if w[i, j] >= min_weight]
    return out


def assert_lines(at, pts: np.ndarray, pairs: list[tuple[int, int]]) -> None:
    T = len(pts) // 2
    lines = drawn_lines(at)
    assert len(lines) == len(pairs)
    for (start, end), (i, j) in zip(lines, pairs, strict=True):
        np.testing.assert_allclose(start, pts[i], rtol=1e-6)  # from query i …
        np.testing.assert_allclose(end, pts[T + j], rtol=1e-6)  # … to key j
    assert f"{len(pairs)} line" in texts(at)  # "1 line", "5 lines"


def test_default_map_equals_an_independent_pca(lm):
    at = run_page(PAGE, sentence=REPEATED)
    assert_ok(at)
    tr = trace(lm)
    pts = assert_map(at, tr, 0, 0)
    w = tr["blocks.0.attn.hook_pattern"][0]
    assert_lines(at, pts, expected_pairs(w, 1))
    mid = traces(at)["line middles"]
    assert [t.split("<br>")[1] for t in mid["text"]] == [f"weight = {w[i, j]:.4f}" for i, j in expected_pairs(w, 1)]
    assert r"\lVert q_i - k_j \rVert^2" in texts(at) and "dot product" in texts(at)


def test_repeated_tokens_keep_their_points(lm):
    at = run_page(PAGE, sentence=REPEATED)
    labels = trace(lm).encoding.labels
    for name, role in (("queries", "query"), ("keys", "key")):
        t = traces(at)[name]
        assert t["text"] == list(labels) and len(array(t["x"])) == len(labels)
        assert t["text"].count("␣the") == 2 and array(t["customdata"]).tolist() == list(range(len(labels)))
        assert t["hovertemplate"].startswith(f"{role} %{{customdata}}")
    options = at.selectbox(key="qkmap_query").options
    assert len(set(options)) == len(labels) + 1


def test_preset_and_query_string(lm):
    at = run_page(PAGE, layer="2", head="1")
    at.selectbox(key="w_preset").set_value("Time flies").run()
    assert_ok(at)
    tr = trace(lm, "Time flies like an arrow.")
    assert traces(at)["queries"]["text"] == list(tr.encoding.labels)
    assert figure(at)["layout"]["title"]["text"] == "Queries and keys, layer 2, head 1"
    assert_map(at, tr, 2, 1)


def test_top_k_min_weight_and_query_controls(lm):
    at = run_page(PAGE, sentence=REPEATED)
    tr = trace(lm)
    w = tr["blocks.0.attn.hook_pattern"][0]
    pts = shown_points(at)
    at.slider(key="qkmap_topk").set_value(3).run()
    assert_lines(at, pts, expected_pairs(w, 3))
    at.slider(key="qkmap_min_weight").set_value(0.2).run()
    assert_lines(at, pts, expected_pairs(w, 3, 0.2))
    assert len(expected_pairs(w, 3, 0.2)) < len(expected_pairs(w, 3))
    q = tr.encoding.labels.index("␣the")
    at.slider(key="qkmap_min_weight").set_value(0.0).run()
    at.selectbox(key="qkmap_query").set_value(q).run()
    assert_ok(at)
    assert_lines(at, pts, expected_pairs(w, 3, query=q))


def test_layer_head_and_temperature_drive_the_map(lm):
    at = run_page(PAGE, sentence=REPEATED)
    before = shown_points(at)
    at.slider(key="w_layer").set_value(3).run()
    at.slider(key="w_head").set_value(2).run()
    assert_ok(at)
    pts = assert_map(at, trace(lm), 3, 2)
    assert not np.allclose(np.abs(before), np.abs(pts))
    at.slider(key="w_temperature").set_value(0.3).run()  # τ on the weights shown: the lines change, not the points
    alone = trace(lm, head_temperature=((3, None, 0.3),))  # layer 3's heads at τ, the layers before as trained
    np.testing.assert_allclose(assert_map(at, alone, 3, 2), pts, rtol=1e-6)
    assert_lines(at, pts, expected_pairs(alone["blocks.3.attn.hook_pattern"][2], 1))
    at.toggle(key="w_tau_every_layer").set_value(True).run()  # τ in every layer: the layers before change Q and K too
    tr = trace(lm, temperature=0.3)
    assert_lines(at, assert_map(at, tr, 3, 2), expected_pairs(tr["blocks.3.attn.hook_pattern"][2], 1))
    assert not np.allclose(np.abs(shown_points(at)), np.abs(pts), atol=1e-3)
    assert "layer 3, head 2" in figure(at)["layout"]["title"]["text"]


def spearman_rows(measure: np.ndarray, w: np.ndarray) -> float:
    """Independently (pandas ranks): the mean over queries with ≥ 3 keys of ρ(measure, weight) over their keys."""
    rhos = [pd.Series(measure[i, : i + 1]).rank().corr(pd.Series(w[i, : i + 1]).rank()) for i in range(2, len(w))]
    return float(np.nanmean(rhos))


def test_correlation_table_is_honest(lm):
    at = run_page(PAGE, sentence=REPEATED, layer="1", head="1")
    tr = trace(lm)
    a = "blocks.1.attn."
    w = tr[a + "hook_pattern"][1]
    q, k = tr[a + "hook_q"][:, 1].astype(np.float64), tr[a + "hook_k"][:, 1].astype(np.float64)
    pts, _, _ = reference_map(tr, 1, 1)
    T = len(w)
    q2, k2 = pts[:T], pts[T:]
    want = [
        spearman_rows(tr[a + "hook_scores_scaled"][1], w),
        spearman_rows(np.linalg.norm(q[:, None] - k[None], axis=-1), w),
        spearman_rows(np.linalg.norm(q2[:, None] - k2[None], axis=-1), w),
        spearman_rows(q2 @ k2.T, w),  # the dot product of the points is the same whatever the axes' signs
    ]
    table = at.dataframe[0].value
    assert table["measure"][0].startswith("q·k") and "2-D" in table["measure"][2]
    np.testing.assert_allclose(table["ρ with the weight"], np.round(want, 3), atol=1e-9)
    assert table["ρ with the weight"][0] == 1.0  # softmax keeps the order of the real scores
    assert f"average over the {T - 2} queries that see at least 3 keys" in texts(at)


def test_short_text_has_no_correlation(lm):
    at = run_page(PAGE, sentence="Hi")
    assert_ok(at)
    assert len(trace(lm, "Hi").encoding) < 3
    assert not at.dataframe and "too short" in texts(at)
    assert charts(at)  # the map is still drawn


@EACH_BAD_INPUT
def test_bad_inputs(name, text):
    if at := run_typed(PAGE, text):
        assert_bad_input_drawn(at, name, [figure(at)], n_tokens=len(array(traces(at)["queries"]["x"])))
