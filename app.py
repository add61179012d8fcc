"""Attention Atlas: `streamlit run app.py`. Sets up the page and runs the page the address names (ui/navigation.py)."""

import streamlit as st

from ui import navigation, page_script, presenter, state
from ui.live import panel

st.set_page_config(
    page_title="Attention Atlas", page_icon="🧭", layout="wide", initial_sidebar_state=presenter.sidebar_state()
)
try:
    # the live class: a student follows; the class's bar; a run of the page alone ends as a whole run does (below)
    navigation.run(
        first=panel.follow,
        before=panel.bar,
        after=panel.publish,
        side_head=state.side_head,
        side_tail=page_script.mount,
    )
finally:
    panel.publish()  # a teacher's view, as the page left the address, goes to the class
