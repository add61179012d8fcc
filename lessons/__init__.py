"""The computations behind the lessons, one module per thing computed
(imports the engine; never streamlit or plotly)."""
