"""Attention Atlas: `streamlit run app.py`. Sets up the page and runs the page the address names (ui/navigation.py)."""

import streamlit as st

from ui import navigation, presenter

st.set_page_config(
    page_title="Attention Atlas", page_icon="🧭", layout="wide", initial_sidebar_state=presenter.sidebar_state()
)
navigation.run()
