"""Pure figure builders: arrays + labels → plotly go.Figure. No streamlit here."""
