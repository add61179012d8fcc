"""Colour vision: every chart the pages draw stays readable for a student with a colour-vision deficiency.

How a colour is seen: sRGB → linear RGB, then (for a deficiency) the Machado, Oliveira & Fernandes (2009) matrix of
severity 1.0 applied in linear RGB and the result clipped to [0, 1], then CIE XYZ (sRGB primaries, D65 white) →
CIELAB. Two colours are told apart by their CIEDE2000 difference (Sharma, Wu & Dalal 2005), checked here against
their published test pairs.

Threshold: two categorical colours drawn in the same figure (trace line and marker colours) differ by
ΔE2000 ≥ MIN_DELTA_E = 10, seen normally and under each of deuteranopia, protanopia and tritanopia. (ΔE2000 ≈ 1 is
a just-noticeable difference side by side; 10 keeps two lines apart at a glance, also as thin lines.) A see-through
colour is taken as it looks over the white ground; a trace's opacity (a weight, on the line view) is not applied.
Colour scales: every heatmap is on the sequential scale (plotly's Viridis reversed), the diverging one (RdBu
reversed), the cyclic one (twilight), or a two-colour table whose two colours are checked as a pair.
"""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import plotly.colors
import pytest

from figures import colours
from figures.common import hatch, heatmap
from figures.compare import row_bars
from figures.heads_forming import head_colors, step_lines
from figures.multihead import token_lines, weight_panels
from tests.apptest_utils import assert_ok, charts, each_tab, run_page
from tests.figures.test_figure_specs import CHART_PAGES

MIN_DELTA_E = 10.0

# Machado, Oliveira & Fernandes, "A Physiologically-based Model for Simulation of Color Vision Deficiency",
# IEEE TVCG 15(6), 2009: the severity-1.0 matrices of their table (www.inf.ufrgs.br/~oliveira/pubs_files/CVD_Simulation/
# CVD_Simulation.html), for linear RGB.
MACHADO_2009 = {
    "deuteranopia": np.array(
        [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]]
    ),
    "protanopia": np.array(
        [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]]
    ),
    "tritanopia": np.array(
        [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602], [0.004733, 0.691367, 0.303900]]
    ),
}
VISIONS = ["normal", *MACHADO_2009]
# IEC 61966-2-1 (sRGB): linear RGB → XYZ; the rows' sums are the D65 white
SRGB_TO_XYZ = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])


def parse(colour: str) -> np.ndarray:
    """'#rgb', '#rrggbb', 'rgb(r, g, b)' or 'rgba(r, g, b, a)' → sRGB in [0, 1]; a see-through colour as it looks
    over white. Anything else (a colour name) raises: figures take their colours from figures.colours."""
    c = colour.strip().lower()
    if re.fullmatch(r"#[0-9a-f]{3}", c):
        c = "#" + "".join(2 * ch for ch in c[1:])
    if re.fullmatch(r"#[0-9a-f]{6}", c):
        return np.array([int(c[k : k + 2], 16) for k in (1, 3, 5)]) / 255
    m = re.fullmatch(r"rgba?\(([^)]*)\)", c)
    if not m:
        raise ValueError(f"not a colour this test reads: {colour!r}")
    parts = [float(p) for p in m.group(1).split(",")]
    alpha = parts[3] if len(parts) == 4 else 1.0
    return alpha * np.array(parts[:3]) / 255 + (1 - alpha)  # over white


def linear(srgb: np.ndarray) -> np.ndarray:
    """The sRGB transfer function undone: c ≤ 0.04045 → c / 12.92, else ((c + 0.055) / 1.055)^2.4."""
    return np.where(srgb <= 0.04045, srgb / 12.92, ((srgb + 0.055) / 1.055) ** 2.4)


def lab(colour: str, vision: str = "normal") -> np.ndarray:
    """CIELAB (D65) of a colour as seen with `vision`."""
    rgb = linear(parse(colour))
    if vision != "normal":
        rgb = np.clip(MACHADO_2009[vision] @ rgb, 0, 1)
    t = SRGB_TO_XYZ @ rgb / SRGB_TO_XYZ.sum(axis=1)  # X/Xn, Y/Yn, Z/Zn
    # f(t) = t^(1/3) above (6/29)³, else t / (3·(6/29)²) + 4/29
    f = np.where(t > (6 / 29) ** 3, np.cbrt(t), t / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def ciede2000(lab1: np.ndarray, lab2: np.ndarray) -> float:
    """ΔE2000 (kL = kC = kH = 1), following Sharma, Wu & Dalal (2005), eqs. (1)–(22)."""
    (L1, a1, b1), (L2, a2, b2) = lab1, lab2
    c_mean = (math.hypot(a1, b1) + math.hypot(a2, b2)) / 2
    g = 0.5 * (1 - math.sqrt(c_mean**7 / (c_mean**7 + 25**7)))
    a1p, a2p = (1 + g) * a1, (1 + g) * a2  # a' = (1 + G)·a
    c1p, c2p = math.hypot(a1p, b1), math.hypot(a2p, b2)
    h1p = math.degrees(math.atan2(b1, a1p)) % 360 if c1p else 0.0
    h2p = math.degrees(math.atan2(b2, a2p)) % 360 if c2p else 0.0
    dl, dc = L2 - L1, c2p - c1p
    dh = h2p - h1p  # Δh', brought into [−180, 180]
    if c1p * c2p == 0:
        dh = 0.0
    elif dh > 180:
        dh -= 360
    elif dh < -180:
        dh += 360
    dh_big = 2 * math.sqrt(c1p * c2p) * math.sin(math.radians(dh / 2))  # ΔH'
    l_mean, cp_mean = (L1 + L2) / 2, (c1p + c2p) / 2
    if c1p * c2p == 0:
        hp_mean = h1p + h2p
    elif abs(h1p - h2p) <= 180:
        hp_mean = (h1p + h2p) / 2
    else:
        hp_mean = (h1p + h2p + 360) / 2 if h1p + h2p < 360 else (h1p + h2p - 360) / 2
    rad = math.radians
    t = (
        1
        - 0.17 * math.cos(rad(hp_mean - 30))
        + 0.24 * math.cos(rad(2 * hp_mean))
        + 0.32 * math.cos(rad(3 * hp_mean + 6))
        - 0.20 * math.cos(rad(4 * hp_mean - 63))
    )
    d_theta = 30 * math.exp(-(((hp_mean - 275) / 25) ** 2))
    r_c = 2 * math.sqrt(cp_mean**7 / (cp_mean**7 + 25**7))
    s_l = 1 + 0.015 * (l_mean - 50) ** 2 / math.sqrt(20 + (l_mean - 50) ** 2)
    s_c = 1 + 0.045 * cp_mean
    s_h = 1 + 0.015 * cp_mean * t
    r_t = -math.sin(rad(2 * d_theta)) * r_c
    tl, tc, th = dl / s_l, dc / s_c, dh_big / s_h
    return math.sqrt(tl**2 + tc**2 + th**2 + r_t * tc * th)


def delta_e(c1: str, c2: str, vision: str) -> float:
    return ciede2000(lab(c1, vision), lab(c2, vision))


# Sharma, Wu & Dalal, "The CIEDE2000 color-difference formula: implementation notes, supplementary test data, and
# mathematical observations", Color Res. Appl. 30(1), 2005, Table 1: pairs 1, 4, 7, 13, 14, 15, 17, 20, 25, 34.
SHARMA_PAIRS = [
    ((50.0, 2.6772, -79.7751), (50.0, 0.0, -82.7485), 2.0425),
    ((50.0, -1.3802, -84.2814), (50.0, 0.0, -82.7485), 1.0000),
    ((50.0, 0.0, 0.0), (50.0, -1.0, 2.0), 2.3669),
    ((50.0, 2.49, -0.001), (50.0, -2.49, 0.0009), 7.1792),
    ((50.0, 2.49, -0.001), (50.0, -2.49, 0.0010), 7.1792),
    ((50.0, 2.49, -0.001), (50.0, -2.49, 0.0011), 7.2195),
    ((50.0, 2.5, 0.0), (73.0, 25.0, -18.0), 27.1492),
    ((50.0, 2.5, 0.0), (58.0, 24.0, 15.0), 19.4535),
    ((60.2574, -34.0099, 36.2677), (60.4626, -34.1751, 39.4387), 1.2644),
    ((2.0776, 0.0795, -1.1350), (0.9033, -0.0636, -0.5514), 0.9082),
]


@pytest.mark.parametrize("lab1,lab2,expected", SHARMA_PAIRS)
def test_ciede2000_matches_the_published_pairs(lab1, lab2, expected):
    assert ciede2000(np.array(lab1), np.array(lab2)) == pytest.approx(expected, abs=5e-5)
    assert ciede2000(np.array(lab2), np.array(lab1)) == pytest.approx(expected, abs=5e-5)  # symmetric


def test_colour_conversions():
    """sRGB white is L* = 100, a* = b* = 0; pure red is (53.24, 80.09, 67.20) (Lindbloom's calculator, D65); grey
    stays grey under every simulation (each matrix's rows sum to 1); deuteranopia merges red and green much more
    than normal vision does."""
    assert lab("#ffffff") == pytest.approx([100, 0, 0], abs=0.01)
    assert lab("#ff0000") == pytest.approx([53.24, 80.09, 67.20], abs=0.05)
    for vision in MACHADO_2009:
        assert np.allclose(MACHADO_2009[vision].sum(axis=1), 1, atol=1e-5)
        assert lab("#808080", vision) == pytest.approx(lab("#808080"), abs=0.01)
    assert delta_e("#ff0000", "#00ff00", "deuteranopia") < delta_e("#ff0000", "#00ff00", "normal") / 3
    assert parse("rgba(0, 0, 0, 0.5)") == pytest.approx([0.5, 0.5, 0.5])  # half black over white


# ---- what a figure draws --------------------------------------------------------------------------------------


def categorical_colours(fig: dict) -> set[str]:
    """The line and marker colours of a figure's traces (one colour or one per point); numeric marker colours (on a
    colour scale) are not categorical."""
    found = set()
    for trace in fig["data"]:
        for part in ("line", "marker"):
            value = (trace.get(part) or {}).get("color")
            for c in value if isinstance(value, list) else [value]:
                if isinstance(c, str):
                    found.add(c.lower())
    return found


def scales(fig: dict) -> list[list]:
    """Every colour scale a figure uses: its heatmaps' own, and its shared colour axes'."""
    found = [t["colorscale"] for t in fig["data"] if t.get("type") == "heatmap" and "coloraxis" not in t]
    found += [ax["colorscale"] for key, ax in fig["layout"].items() if key.startswith("coloraxis")]
    return found


def same_scale(scale: list, reference: list) -> bool:
    """Two [[position, colour], …] scales with the same stops (colours compared as RGB)."""
    return len(scale) == len(reference) and all(
        abs(p - q) < 1e-9 and np.allclose(parse(a), parse(b), atol=1 / 255)
        for (p, a), (q, b) in zip(scale, reference, strict=True)
    )


def evenly(colour_list: list[str]) -> list[list]:
    return [[k / (len(colour_list) - 1), c] for k, c in enumerate(colour_list)]


# the named scales, built here from plotly's colour lists (not from figures.colours)
VIRIDIS_REVERSED = evenly(plotly.colors.sequential.Viridis[::-1])
RDBU_REVERSED = evenly(plotly.colors.diverging.RdBu[::-1])
TWILIGHT = evenly(plotly.colors.cyclical.Twilight)


def check_figure(name: str, fig: dict) -> int:
    """Assert a figure's colours: its scales are the named ones, every pair of its categorical colours is
    ΔE2000 ≥ MIN_DELTA_E apart under every vision. Returns the number of pairs checked."""
    drawn = categorical_colours(fig)
    for scale in scales(fig):
        if len(scale) == 2:  # a two-valued table: its two colours are categories
            drawn |= {scale[0][1].lower(), scale[1][1].lower()}
        else:
            assert any(same_scale(scale, ref) for ref in (VIRIDIS_REVERSED, RDBU_REVERSED, TWILIGHT)), (name, scale)
    pairs = list(itertools.combinations(sorted(drawn), 2))
    for a, b in pairs:
        for vision in VISIONS:
            assert delta_e(a, b, vision) >= MIN_DELTA_E, (name, a, b, vision, round(delta_e(a, b, vision), 2))
    return len(pairs)


@pytest.mark.parametrize("page", CHART_PAGES, ids=lambda p: p.rsplit("/", 1)[-1])
def test_every_chart_of_every_page_and_tab(page):
    """The figures a page draws (the sentence of tests/figures/test_figure_specs.py), in each of its tabs."""
    at = run_page(page, sentence="The cat sat on the mat, and the cat slept.")
    assert_ok(at)
    figures = [("first view", c) for c in charts(at)]
    for label in each_tab(at):
        figures += [(label, c) for c in charts(at)]
    assert figures
    for where, fig in figures:
        check_figure(f"{page} · {where} · {(fig['layout'].get('title') or {}).get('text')}", fig)


def test_pairs_are_checked_on_the_pages():
    """The page test above is not vacuous: the home page's and the Softmax page's charts hold pairs of colours."""
    counted = 0
    for page in ("app.py", "pages/5_Softmax_and_temperature.py"):
        at = run_page(page, sentence="The cat sat on the mat, and the cat slept.")
        counted += sum(check_figure(page, c) for c in charts(at))
    assert counted > 0


def test_the_largest_sets_of_colours():
    """The most colours one figure can draw: a line view of 12 heads (MiniLM's layers; with the query and key
    ends), and the heads of the two-layer induction model, four a layer."""
    T = 6
    i, j = np.tril_indices(T)
    heads = [(f"head {h}", i, j, np.full(len(i), 0.5, dtype=np.float32)) for h in range(12)]
    lines = token_lines(heads, [f"t{k}" for k in range(T)], "every head").to_dict()
    assert len(categorical_colours(lines)) == 12
    assert check_figure("line view, 12 heads", lines) == 12 * 11 // 2
    steps = np.arange(5)
    series = {f"head {h}": np.linspace(0, 1, 5) for h in range(8)}
    scores = step_lines(steps, series, "scores", "score", current=2, colors=head_colors(2, 4)).to_dict()
    assert len(categorical_colours(scores)) == 8
    assert check_figure("head scores, 2 layers × 4 heads", scores) == 28


def test_the_diverging_scale_keeps_its_two_sides_apart():
    """On the diverging scale a value and its negative stay apart under every vision (0.1, 0.25, 0.5 from the
    middle)."""
    for d in (0.1, 0.25, 0.5):
        low, high = plotly.colors.sample_colorscale(colours.DIVERGING, [0.5 - d, 0.5 + d])
        for vision in VISIONS:
            assert delta_e(low, high, vision) >= MIN_DELTA_E, (d, vision)


def test_the_sequential_scale_orders_by_lightness_under_every_vision():
    """Viridis reversed: L* falls at every stop, normally and under each deficiency, so darker means more for
    everyone."""
    assert same_scale(colours.SEQUENTIAL, VIRIDIS_REVERSED)
    for vision in VISIONS:
        lightness = [lab(c, vision)[0] for _, c in colours.SEQUENTIAL]
        assert all(a > b for a, b in zip(lightness, lightness[1:], strict=False)), vision


# ---- not colour alone ----------------------------------------------------------------------------------------


def test_masked_cells_are_hatched():
    """A heatmap with masked (−∞) cells lays the hatching under its plot: the blank cells show it; a map without
    masked cells has none. Several maps: one hatching per map, on that map's axes."""
    z = np.where(np.tri(4, dtype=bool), 0.5, -np.inf).astype(np.float32)
    masked = heatmap(z, list("abcd"), list("abcd")).to_dict()["layout"]
    assert masked["images"] == [hatch()] and masked["images"][0]["layer"] == "below"
    assert masked["plot_bgcolor"] == colours.BLANK
    assert "images" not in heatmap(np.ones((4, 4)), list("abcd"), list("abcd")).to_dict()["layout"]
    maps = np.full((3, 4, 4), 0.25, dtype=np.float32)
    panels = weight_panels(maps, list("abcd"), np.tri(4, dtype=bool), ["h0", "h1", "h2"], "heads").to_dict()
    axes = [(t.get("xaxis", "x"), t.get("yaxis", "y")) for t in panels["data"]]
    assert len(axes) == 3
    refs = [(im["xref"], im["yref"]) for im in panels["layout"]["images"]]
    assert refs == [(f"{x} domain", f"{y} domain") for x, y in axes]


def test_the_word_and_the_target_are_hatched_as_well_as_coloured():
    """Encoder vs decoder's attention row: the word's bar and the target's carry a pattern each, the others none."""
    bar = row_bars(np.full(5, 0.2), list("abcde"), 1, [3], True, "row").to_dict()["data"][0]
    shapes = bar["marker"]["pattern"]["shape"]
    assert shapes[1] and shapes[3] and shapes[1] != shapes[3] and shapes[0] == shapes[2] == shapes[4] == ""
