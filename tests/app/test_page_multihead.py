"""The "Multi-head attention" page: every figure equals the engine's trace, every control changes what is shown."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import ui.models
from figures.common import tick_labels
from figures.multihead import OPACITY_STEP, mosaic_slices
from lessons.words import percent
from tests import apptest_utils as u
from tests.apptest_utils import chart_z as z
from tests.counting import block_calls
from transformer import Interventions, run_trace
from transformer.loading import shared_model

PAGE = u.page_path("7_Multi_head")
REPEATED = "the cat and the dog and the bird"  # "␣the" and "␣and" twice
NL = NH = 4  # the bundled model: 4 layers × 4 heads
MODEL = "shakespeare-gpt"


@pytest.fixture(scope="module")
def default_page():
    """The page on the repeated sentence, untouched (read-only use)."""
    at = u.run_page(PAGE, sentence=REPEATED)
    u.assert_ok(at)
    return at


def part(at, n: int):
    """Open part n's tab ("3 · Every head of the model" for 3); only the open part runs."""
    return u.open_tab(at, "multihead_part", f"{n} ·")


def trace(lm, text=REPEATED, temperature=1.0, ablate=frozenset(), head_temperature=()):
    iv = Interventions(temperature=temperature, ablate=ablate, head_temperature=head_temperature)
    return run_trace(lm.model, lm.tokenizer, text, iv)


def panels(at, title: str) -> dict[str, np.ndarray]:
    """A figure of side-by-side maps as {panel title: z}."""
    c = u.chart_titled(at, title)
    names = [a["text"] for a in c["layout"]["annotations"]]
    assert len(names) == len(c["data"])
    return {n: u.array(d["z"]) for n, d in zip(names, c["data"], strict=True)}


def shown(weights: np.ndarray, hide_first: bool = False) -> np.ndarray:
    """Weights as a map draws them: future cells (and the first column when hidden) blank."""
    T = weights.shape[-1]
    out = np.where(np.tril(np.ones((T, T), dtype=bool)), weights, np.nan)
    if hide_first:
        out[..., 0] = np.nan
    return out


def line_view(
    at, title: str = "Lines, ", head: str = ""
) -> tuple[dict[tuple[int, int], float], dict[tuple[int, int], float]]:
    """The line view (of `head`, in a view of several) as {(query, key): drawn line opacity} and {(query, key): exact
    weight of its middle dot}."""
    data = u.chart_titled(at, title)["data"]
    prefix = f"{head}: " if head else ""
    lines = {}
    for tr in data:
        if tr.get("mode") == "lines" and tr.get("name", "").startswith(prefix + "lines"):
            ends = u.array(tr["y"]).reshape(-1, 3)[:, :2].astype(int)
            for a, b in ends:
                assert (a, b) not in lines  # one line per pair
                lines[(a, b)] = tr["opacity"]
    mid = next(tr for tr in data if tr.get("name") == (head or "line middles"))
    y, opacity = u.array(mid["y"]), u.array(mid["marker"]["opacity"])
    dots = {}
    for text, o, yy in zip(mid.get("text", []), opacity, y, strict=True):
        text = text.removeprefix(prefix)
        a, b = int(text.split(":")[0].split()[-1]), int(text.split("→ key ")[1].split(":")[0])
        assert yy == pytest.approx((a + b) / 2)
        dots[(a, b)] = float(o)
    return lines, dots


def test_heads_side_by_side_equal_the_trace_on_one_scale(lm, default_page):
    at, tr = part(default_page, 1), trace(lm)
    w = tr["blocks.0.attn.hook_pattern"]
    c = u.chart_titled(at, "The heads of layer 0, one colour scale 0 … 1.000")
    maps = panels(at, "The heads of layer 0")
    assert list(maps) == [f"head {h}" for h in range(NH)]
    for h in range(NH):
        np.testing.assert_allclose(maps[f"head {h}"], shown(w[h]), rtol=1e-6)
    assert {d["coloraxis"] for d in c["data"]} == {"coloraxis"}  # one colour axis for every head
    # 0 … the largest weight shown (row 0 gives 1 to itself)
    assert (c["layout"]["coloraxis"]["cmin"], c["layout"]["coloraxis"]["cmax"]) == (0, 1.0)
    share = w[:, 1:, 0].mean(axis=1)
    assert (
        "Weight on the first token, averaged over rows 1…T−1: "
        + ", ".join(f"head {h} {share[h]:.1%}" for h in range(NH))
        in u.texts(at)
    )


def test_repeated_tokens_keep_their_rows(lm, default_page):
    labels = trace(lm).encoding.labels
    T = len(labels)
    assert len(set(labels)) < T
    checked = 0
    for c in [c for _ in u.each_tab(default_page) for c in u.charts(default_page)]:
        for d in c["data"]:
            if d["type"] == "heatmap" and u.array(d["z"]).shape == (T, T):
                checked += 1
                assert u.array(d["y"]).tolist() == list(range(T)) and u.array(d["x"]).tolist() == list(range(T))
                for axis in ("xaxis" + d.get("xaxis", "x")[1:], "yaxis"):
                    ticks = c["layout"][axis]["ticktext"]
                    assert ticks.count("␣the") == 2 and ticks.count("␣and") == 2 and len(ticks) == T
    assert checked == NH + 2 + 1  # the heads, the two averages, the opened head
    part(default_page, 3)
    for role in ("query", "key"):
        ends = next(d for d in u.chart_titled(default_page, "Lines, ")["data"] if d.get("name") == role + " tokens")
        assert (
            ends["text"] == [f"{role} {i}: {s}" for i, s in enumerate(labels)]
            and u.array(ends["y"]).tolist() == list(range(T))
        )
    options = part(default_page, 4).selectbox(key="multihead_token").options
    assert len(set(options)) == T and sum(o.endswith(": ␣the") for o in options) == 2


def test_averages_are_labelled_and_equal_the_mean(lm, default_page):
    at, tr = part(default_page, 2), trace(lm)
    # (NL, NH, T, T)
    stacked = np.stack([tr[f"blocks.{lay}.attn.hook_pattern"] for lay in range(NL)]).astype(np.float64)
    maps = panels(at, "Averages (not heads)")
    np.testing.assert_allclose(maps["AVERAGE of layer 0's 4 heads"], shown(stacked[0].mean(axis=0)), rtol=1e-5)
    np.testing.assert_allclose(
        maps["AVERAGE of all 16 heads"], shown(stacked.mean(axis=(0, 1))), rtol=1e-5
    )
    assert "These are averages, not heads" in u.texts(at)
    averages = u.chart_titled(at, "Averages")["data"]
    assert len(averages) == 2  # over the layer's heads, over every head
    assert all("AVERAGE" in d["hovertemplate"] and "mean weight" in d["hovertemplate"] for d in averages)


def test_overview_thumbnails_equal_the_patterns(lm, default_page):
    at, tr = part(default_page, 3), trace(lm)
    T = len(tr.encoding)
    grid = z(at, "All 16 heads")
    where, shape = mosaic_slices(NL, NH, T)
    assert grid.shape == shape and len(where) == NL * NH
    for (lay, h), (rows, cols) in where.items():
        np.testing.assert_allclose(grid[rows, cols], shown(tr[f"blocks.{lay}.attn.hook_pattern"][h]), rtol=1e-6)
    assert "every weight is shown" in u.texts(at)
    box = u.chart_titled(at, "All 16 heads")["layout"]["shapes"][0]  # the opened head (the sidebar's: 0.0) is outlined
    assert (box["x0"], box["y0"]) == (-0.5, -0.5)


def test_in_presenter_view_a_model_as_wide_as_deep_keeps_a_row_per_layer():
    """(NL = NH. A column per layer is for models deeper than wide: tests/app/test_models_model_pages.py.)"""
    at = u.open_tab(u.run_page(PAGE, present="true"), "multihead_part", "3 ·")
    assert u.chart_titled(at, "All 16 heads")["layout"]["yaxis"]["ticktext"][0] == "layer 0"
    assert "Rows are layers, columns heads" in u.texts(at)


def test_sidebar_layer_head_and_temperature_drive_the_page(lm):
    at = u.run_page(PAGE, sentence=REPEATED)
    at.slider(key="w_layer").set_value(2).run()
    at.slider(key="w_head").set_value(3).run()
    T = len(trace(lm).encoding)
    # τ on the weights shown (the default): no trace is made and no block runs but layer 2's, once, for its scores
    traces = len(ui.models.TRACES)
    with block_calls(shared_model(MODEL).model) as calls:
        at.slider(key="w_temperature").set_value(0.6).run()
        assert calls in ([], [(2, T)])
        at.slider(key="w_temperature").set_value(0.5).run()
    u.assert_ok(at)
    assert calls in ([], [(2, T)]) and len(ui.models.TRACES) == traces
    at_1 = trace(lm)
    masked = at_1["blocks.2.attn.hook_scores_masked"]  # (nh, T, T) at τ = 1
    e = np.exp(masked.astype(np.float64) / 0.5 - masked.max(axis=-1, keepdims=True) / 0.5)
    maps = panels(at, "The heads of layer 2")
    by_hand = e / e.sum(axis=-1, keepdims=True)  # softmax(S / τ) of the recorded scores
    for h in range(NH):
        np.testing.assert_allclose(maps[f"head {h}"], shown(by_hand[h]), rtol=1e-5, atol=1e-7)
    alone = [trace(lm, head_temperature=((layer, None, 0.5),)) for layer in range(NL)]  # τ on one layer's heads each
    tempered = np.stack([alone[layer][f"blocks.{layer}.attn.hook_pattern"] for layer in range(NL)])  # (NL, NH, T, T)
    for h in range(NH):
        np.testing.assert_allclose(maps[f"head {h}"], shown(tempered[2, h]), rtol=1e-6)
    assert part(at, 3).selectbox(key="multihead_open").value == "2.3"  # the opened head follows the sidebar
    np.testing.assert_allclose(z(at, "Opened: layer 2, head 3"), shown(tempered[2, 3]), rtol=1e-6)
    means = panels(part(at, 2), "Averages")
    np.testing.assert_allclose(means["AVERAGE of layer 2's 4 heads"], shown(tempered[2].mean(axis=0)), rtol=1e-5)
    every = means["AVERAGE of all 16 heads"]
    np.testing.assert_allclose(every, shown(tempered.mean(axis=(0, 1))), rtol=1e-5)
    # the heads' outputs: the model's as trained, and the page says so
    concat = z(part(at, 4), f"z of each head for token {T - 1}")[0]
    np.testing.assert_allclose(concat, at_1["blocks.2.attn.hook_z"][T - 1].reshape(-1), rtol=1e-6)
    assert "the model's as trained (τ = 1)" in u.texts(at)
    # τ in every layer: the model runs again at τ
    at.toggle(key="w_tau_every_layer").set_value(True).run()
    u.assert_ok(at)
    hot = trace(lm, temperature=0.5)
    concat = z(at, f"z of each head for token {T - 1}")[0]
    np.testing.assert_allclose(concat, hot["blocks.2.attn.hook_z"][T - 1].reshape(-1), rtol=1e-6)
    assert "the model's as trained" not in u.texts(at)
    maps = panels(part(at, 1), "The heads of layer 2")
    for h in range(NH):
        np.testing.assert_allclose(maps[f"head {h}"], shown(hot["blocks.2.attn.hook_pattern"][h]), rtol=1e-6)
    mean = panels(part(at, 2), "Averages")["AVERAGE of layer 2's 4 heads"]
    np.testing.assert_allclose(mean, shown(hot["blocks.2.attn.hook_pattern"].mean(axis=0)), rtol=1e-5)


def test_query_string_opens_the_same_view(lm):
    at = u.run_page(PAGE, sentence=REPEATED, layer="1", head="2")
    u.assert_ok(at)
    np.testing.assert_allclose(
        panels(at, "The heads of layer 1")["head 2"], shown(trace(lm)["blocks.1.attn.hook_pattern"][2]), rtol=1e-6
    )
    assert part(at, 3).selectbox(key="multihead_open").value == "1.2"


def test_preset_sentence(lm):
    at = u.run_page(PAGE)
    at.selectbox(key="w_preset").set_value("Fruit flies").run()
    u.assert_ok(at)
    tr = trace(lm, "Fruit flies like a banana.")
    assert u.chart_titled(at, "The heads of layer 0")["layout"]["yaxis"]["ticktext"] == tick_labels(tr.encoding.labels)
    np.testing.assert_allclose(
        panels(at, "The heads of layer 0")["head 2"], shown(tr["blocks.0.attn.hook_pattern"][2]), rtol=1e-6
    )


def test_open_another_head(lm):
    at = part(u.run_page(PAGE, sentence=REPEATED), 3)
    at.selectbox(key="multihead_open").set_value("3.1").run()
    u.assert_ok(at)
    tr = trace(lm)
    w = tr["blocks.3.attn.hook_pattern"][1]
    np.testing.assert_allclose(z(at, "Opened: layer 3, head 1"), shown(w), rtol=1e-6)
    T = len(tr.encoding)
    rows, cols = mosaic_slices(NL, NH, T)[0][(3, 1)]
    box = u.chart_titled(at, "All 16 heads")["layout"]["shapes"][0]
    assert (
        (box["x0"], box["x1"], box["y0"], box["y1"])
        == (cols.start - 0.5, cols.stop - 0.5, rows.start - 0.5, rows.stop - 0.5)
    )
    _, dots = line_view(at, "Lines, layer 3, head 1")
    assert dots == pytest.approx({(a, b): float(w[a, b]) for a in range(T) for b in range(a + 1) if w[a, b] >= 0.1})
    assert u.chart_titled(part(at, 1), "The heads of layer 0")  # the side-by-side maps still show the sidebar's layer
    assert part(at, 3).selectbox(key="multihead_open").value == "3.1"  # kept while its tab was closed


def test_line_view_opacity_is_the_weight(lm, default_page):
    tr = trace(lm)
    w = tr["blocks.0.attn.hook_pattern"][0]
    T = len(tr.encoding)
    lines, dots = line_view(part(default_page, 3))
    want = {(a, b): float(w[a, b]) for a in range(T) for b in range(a + 1) if w[a, b] >= 0.1}  # default threshold 0.1
    assert want[0, 0] == pytest.approx(1.0) and len(want) > 1  # query 0 sees only itself: at least that line
    assert set(lines) == set(want) and dots == pytest.approx(want, rel=1e-6)  # each dot's opacity: the exact weight
    for pair, o in lines.items():  # each line's opacity: the weight rounded to steps of OPACITY_STEP, at least one step
        assert o == pytest.approx(max(1, round(want[pair] / OPACITY_STEP)) * OPACITY_STEP)
        assert abs(o - want[pair]) <= OPACITY_STEP / 2 + 1e-6  # (the default threshold 0.1 keeps only weights ≥ 0.1)
    assert f"{len(want)} lines." in u.texts(default_page)


def test_line_view_threshold_and_token(lm):
    at = part(u.run_page(PAGE, sentence=REPEATED), 3)
    w = trace(lm)["blocks.0.attn.hook_pattern"][0]
    T = len(w)
    at.slider(key="multihead_threshold").set_value(0.3).run()
    lines, dots = line_view(at)
    assert set(lines) == set(dots) == {(a, b) for a in range(T) for b in range(a + 1) if w[a, b] >= 0.3}
    the = trace(lm).encoding.labels.index("␣the")  # the first of two
    at.slider(key="multihead_threshold").set_value(0.01).run()
    at.selectbox(key="multihead_line_token").set_value(the).run()
    u.assert_ok(at)
    lines, _ = line_view(at)
    want = {(a, b) for a in range(T) for b in range(a + 1) if w[a, b] >= 0.01 and the in (a, b)}
    assert (
        set(lines) == want
        and {b for a, b in want if a == the} == set(range(the + 1))
        and any(a > the for a, _ in want)
    )
    at.slider(key="multihead_threshold").set_value(1.0).run()  # nothing reaches 1 except row 0 → key 0
    lines, _ = line_view(at)
    assert set(lines) <= {(0, 0)}


def test_every_head_of_the_layer_as_lines_in_its_own_colour(lm):
    at = part(u.run_page(PAGE, sentence=REPEATED), 3)
    w = trace(lm)["blocks.0.attn.hook_pattern"]  # (NH, T, T)
    T = w.shape[-1]
    spec = u.chart_titled(at, "Every head of layer 0 as lines")
    legend = {t["name"]: t["marker"]["color"] for t in spec["data"] if t.get("showlegend")}
    assert list(legend) == [f"head {h}" for h in range(NH)] and len(set(legend.values())) == NH  # a colour per head
    assert spec["layout"]["legend"]["itemclick"] == "toggleothers"  # a click on a head shows it alone
    for h in range(NH):
        lines, dots = line_view(at, "Every head of layer 0", head=f"head {h}")
        want = {(a, b): float(w[h, a, b]) for a in range(T) for b in range(a + 1) if w[h, a, b] >= 0.1}
        assert set(lines) == set(want) and dots == pytest.approx(want, rel=1e-6)


def test_sink_checkbox_hides_the_first_column_without_renormalising(lm):
    at = u.run_page(PAGE, sentence=REPEATED)
    before = panels(at, "The heads of layer 0")["head 1"]
    at.checkbox(key="multihead_sink").check().run()
    u.assert_ok(at)
    tr = trace(lm)
    w = tr["blocks.0.attn.hook_pattern"]
    top = float(np.nanmax(shown(w, hide_first=True)))
    c = u.chart_titled(at, f"The heads of layer 0, one colour scale 0 … {top:.3f}")
    # the shared scale stretched to the largest weight still shown
    assert c["layout"]["coloraxis"]["cmax"] == pytest.approx(top)
    maps = panels(at, "The heads of layer 0")
    for h in range(NH):
        # the other weights unchanged
        np.testing.assert_allclose(maps[f"head {h}"], shown(w[h], hide_first=True), rtol=1e-6)
    assert np.isnan(maps["head 1"][:, 0]).all() and not np.isnan(before[:, 0]).any()
    np.testing.assert_allclose(
        panels(part(at, 2), "Averages")["AVERAGE of layer 0's 4 heads"],
        shown(w.mean(axis=0), hide_first=True),
        rtol=1e-5,
    )
    opened = u.chart_titled(part(at, 3), "Opened: layer 0, head 0")["data"][0]
    np.testing.assert_allclose(u.array(opened["z"]), shown(w[0], hide_first=True), rtol=1e-6)
    # its hover keeps the real weight
    assert "first-token column" in opened["text"][4][0] and f"{w[0, 4, 0]:.4g}" in opened["text"][4][0]
    grid = z(at, "All 16 heads")
    rows, cols = mosaic_slices(NL, NH, len(tr.encoding))[0][(0, 2)]
    np.testing.assert_allclose(grid[rows, cols], shown(w[2], hide_first=True), rtol=1e-6)
    lines, _ = line_view(at)
    assert lines and all(b != 0 for _, b in lines)
    assert (
        f"add up to {w[0, -1, 1:].sum():.3f}, not 1 (the hidden {w[0, -1, 0]:.3f} went to the first token)"
        in u.texts(at)
    )


def test_concat_and_w_o_for_a_chosen_token(lm):
    at = part(u.run_page(PAGE, sentence=REPEATED), 4)
    tr = trace(lm)
    i = tr.encoding.labels.index("␣the")  # the first of two
    at.selectbox(key="multihead_token").set_value(i).run()
    u.assert_ok(at)
    a = "blocks.0.attn."
    nh, hs, d = NH, 32, 128
    fig = u.chart_titled(at, f"z of each head for token {i}, ({nh} × {hs}), side by side = concat, (1, {nh * hs})")
    concat = u.array(fig["data"][0]["z"])
    np.testing.assert_allclose(concat, tr[a + "hook_concat"][i][None], rtol=1e-6)
    # concat = the heads' z side by side
    np.testing.assert_allclose(concat[0], tr[a + "hook_z"][i].reshape(-1), rtol=1e-6)
    assert fig["layout"]["xaxis"]["ticktext"] == [f"z, head {h}" for h in range(nh)]
    assert "multihead_wo" not in u.chart_keys(at)  # drawn on request only
    at.toggle(key="multihead_show_wo").set_value(True).run()
    W_O = z(at, f"W_O of layer 0, ({nh * hs}, {d})")
    attn = lm.model.blocks[0].attn
    np.testing.assert_allclose(W_O, attn.W_O.detach().reshape(nh * hs, d).numpy(), rtol=1e-6)
    out = z(at, f"Attention output of token {i} = concat·W_O + b_O, (1, {d})")
    assert out.shape == (nh + 2, d)
    np.testing.assert_allclose(out[:nh], tr[a + "hook_result"][i], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(out[nh], attn.b_O.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(out[nh + 1], tr["blocks.0.hook_attn_out"][i], rtol=1e-6)
    # the equation the page states: concat·W_O + b_O = attn_out (and = Σ_h shares + b_O)
    np.testing.assert_allclose(concat[0].astype(np.float64) @ W_O + out[nh], out[nh + 1], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(out[:nh].sum(axis=0) + out[nh], out[nh + 1], rtol=1e-4, atol=1e-6)
    assert f"({len(tr.encoding)}, {nh}, {hs})" in u.texts(at) and f"({len(tr.encoding)}, {nh * hs})" in u.texts(at)
    assert f"for token {i} by at most" in u.texts(at)


def test_ablation_equals_the_engine_intervention(lm):
    at = part(u.run_page(PAGE, sentence=REPEATED), 5)
    before_fig = u.chart_titled(at, "Next-token probabilities")
    before = [u.array(bar["y"]) for bar in before_fig["data"][:2]]
    np.testing.assert_allclose(*before)  # nothing off yet
    assert "No head is switched off" in u.texts(at)
    at.multiselect(key="multihead_ablate").set_value(["0.1", "2.3"]).run()
    at.slider(key="multihead_topk").set_value(5).run()
    u.assert_ok(at)
    # independently: softmax of the model's last logits, with and without the two heads
    p = torch.softmax(torch.tensor(trace(lm)["logits"][-1], dtype=torch.float64), -1).numpy()
    q = torch.softmax(
        torch.tensor(trace(lm, ablate=frozenset({(0, 1), (2, 3)}))["logits"][-1], dtype=torch.float64), -1
    ).numpy()
    top_p, top_q = list(np.argsort(-p)[:5]), list(np.argsort(-q)[:5])
    ids = top_p + [t for t in top_q if t not in top_p]
    fig = u.chart_titled(at, "Next-token probabilities, 2 heads switched off")
    np.testing.assert_allclose(u.array(fig["data"][0]["y"]), p[ids], rtol=1e-5)
    np.testing.assert_allclose(u.array(fig["data"][1]["y"]), q[ids], rtol=1e-5)
    vocab = lm.tokenizer.vocab_labels()
    assert fig["layout"]["xaxis"]["ticktext"] == tick_labels([vocab[t] for t in ids])
    table = at.dataframe[0].value
    assert list(table["next token"]) == [vocab[t] for t in ids]
    assert list(table["p, switched off"]) == [percent(x) for x in q[ids]]  # printed as every page prints them
    assert f"**{0.5 * np.abs(p - q).sum():.1%}** of the probability moved" in u.texts(at)
    assert "Switched off: 0.1, 2.3" in u.texts(at)
    # kept while its tab was closed
    assert part(part(at, 1), 5).multiselect(key="multihead_ablate").value == ["0.1", "2.3"]


def test_one_token(lm):
    at = u.run_page(PAGE, sentence="a")
    u.assert_ok(at)
    assert panels(at, "The heads of layer 0")["head 0"].tolist() == [[1.0]]
    assert "Weight on the first token" not in u.texts(at)
    at.checkbox(key="multihead_sink").check().run()
    u.assert_ok(at)
    assert np.isnan(panels(at, "The heads of layer 0")["head 0"]).all()


def test_long_text_pools_the_overview(lm):
    text = dict(u.BAD_INPUTS)["very_long"]
    at = u.run_page(PAGE, sentence=text)
    u.assert_ok(at)
    tr = trace(lm, text)
    T = len(tr.encoding)
    assert T == 256 and "reads at most 256" in u.texts(at)
    np.testing.assert_allclose(
        panels(at, "The heads of layer 0")["head 3"], shown(tr["blocks.0.attn.hook_pattern"][3]), rtol=1e-6
    )
    grid = z(part(at, 3), "All 16 heads")
    where, shape = mosaic_slices(NL, NH, 32)
    assert grid.shape == shape
    w = shown(tr["blocks.1.attn.hook_pattern"][2]).reshape(32, 8, 32, 8)  # 8 × 8 blocks
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # blocks wholly in the future are empty
        want = np.nanmean(w, axis=(1, 3))
    rows, cols = where[(1, 2)]
    np.testing.assert_allclose(grid[rows, cols], want, rtol=1e-5)
    assert "8 × 8 block" in u.texts(at)


@u.EACH_BAD_INPUT
def test_bad_inputs(name, text):
    if at := u.run_typed(PAGE, text):
        figs = [c for _ in u.each_tab(at) for c in u.charts(at)]
        assert len(figs) == 9  # every chart of the five parts (W_O, drawn on request, shows no text of the sentence)
        u.assert_bad_input_drawn(at, name, figs, n_tokens=len(u.array(figs[0]["data"][0]["z"])))
