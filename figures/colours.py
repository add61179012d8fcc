"""The app's colours, in one place: every figure takes its colours from here.

Chosen so that students with a colour-vision deficiency read the charts as the others do:
- values on a scale (weights, norms, probabilities): SEQUENTIAL, plotly's "Viridis" reversed (the viridis family:
  perceptually uniform, lightness rising monotonically, so its order survives any colour-vision deficiency and
  greyscale). Reversed: a darker cell means a larger value, as on every chart of the app.
- signed values: DIVERGING, ColorBrewer's RdBu reversed (blue < 0 < red), rated colour-blind safe by ColorBrewer;
- angles: CYCLIC, "twilight" (a perceptually uniform colour wheel: 0 and 2π meet);
- things told apart by colour (series, heads, sentences, models, query and key): PALETTE, Okabe & Ito's palette
  (Wong, Nature Methods 8:441, 2011) without its yellow, too pale for a line on white, then five darker colours
  for the heads of the larger models (up to 12).
tests/figures/test_colour_vision.py simulates deuteranopia, protanopia and tritanopia and checks that every pair of
colours drawn together stays apart (CIEDE2000, threshold there), and that the scales are these.
"""

from __future__ import annotations

import functools

import plotly.colors


@functools.cache  # plotly looks the name up in ~3 ms
def named_scale(name: str) -> list:
    """A named plotly colour scale as the [[position, colour], …] list plotly.js reads
    ("RdBu_r" is a plotly.py name only). Shared: do not modify."""
    return plotly.colors.get_colorscale(name)


SEQUENTIAL = named_scale("Viridis_r")
DIVERGING = named_scale("RdBu_r")
CYCLIC = named_scale("twilight")

# Okabe–Ito (hex values as published by Wong 2011)
BLACK, ORANGE, SKY_BLUE, GREEN, BLUE, VERMILLION, PURPLE = (
    "#000000", "#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7",
)
# after Okabe–Ito's seven: chosen on a grid of sRGB colours to keep ΔE2000 ≥ 10 from all the others, seen normally
# and under the three simulated deficiencies
DARK_BROWN, DARK_GREY, INDIGO, GREY_BROWN, PLUM = "#5D2E00", "#464646", "#2E00B9", "#745D46", "#A24674"
PALETTE = (
    BLUE, ORANGE, GREEN, VERMILLION, PURPLE, SKY_BLUE, BLACK, DARK_BROWN, DARK_GREY, INDIGO, GREY_BROWN, PLUM,
)

QUERY, KEY = BLUE, ORANGE  # a query and a key, on every page
KEY_TEXT = "#8F6200"  # a key's words written on a chart: its orange darker, for a contrast of 5.4 on white (2.3)
HIGHLIGHT = VERMILLION  # the chosen row, head or word; the "red box", drawn as an outline, never a fill alone
HIGHLIGHT_TEXT = "#B34F00"  # words written in the highlight's colour: darker, for a contrast of 5.2 on white (3.9)

# light tints: chips with dark text on them, a vector before it turns
LIGHT_BLUE, LIGHT_ORANGE, LIGHT_RED, LIGHT_GREEN, LIGHT_GREY = "#9ECAE1", "#FDD0A2", "#F4A582", "#7FCDBB", "#F7F7F7"
CHIPS = (LIGHT_BLUE, LIGHT_ORANGE)  # neighbouring token chips alternate (each chip also has a border)
BINARY = [[0, LIGHT_GREY], [1, BLUE]]  # a two-valued table (no / yes): two colours, and each cell says which

# heads of a two-layer model: one family per layer, four heads told apart by lightness (ColorBrewer Blues, Oranges)
LAYER_FAMILIES = (("#C6DBEF", "#6BAED6", "#2171B5", "#08306B"), ("#FDD0A2", "#FD8D3C", "#D94801", "#7F2704"))

# neutrals: what is not a series of its own
WHITE, INK = "#FFFFFF", "#111111"  # the plot's ground (line charts), text on light chips
FAINT = "#BBBBBB"  # points and lines in the background (the vocabulary, every step's own loss)
GREY = "#888888"  # borders, guide lines
DARK = "#444444"  # marks to read against the data: the current step, lines between blocks
TEXT_MUTED = "#555555"  # notes written on a chart (contrast 7.5 on white), and its panels' titles
BLANK = "#D9D9D9"  # behind a heatmap: its masked (blank) cells, hatched (figures.common.hatch)
HATCH_LINE = "#8C8C8C"


def rgba(colour: str, alpha: float) -> str:
    """A hex colour made see-through: 'rgba(r, g, b, alpha)'."""
    r, g, b = (int(colour.lstrip("#")[k : k + 2], 16) for k in (0, 2, 4))
    return f"rgba({r}, {g}, {b}, {alpha})"
