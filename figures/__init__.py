"""Pure figure builders: arrays + labels → plotly go.Figure. No streamlit here."""

# plotly imports it lazily: sessions drawing their first figures at once raced on a half-imported module
import pandas  # noqa: F401
import plotly.io as pio

# No plotly template: Streamlit styles every chart with its own theme in the browser, and copying
# the default template into each figure was the largest single cost of building one (deepcopy).
pio.templates.default = "none"
