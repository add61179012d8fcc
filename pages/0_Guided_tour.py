"""The guided tour: ten stops from text to the next token, on one sentence, each opening a page at the right tab."""

import streamlit as st

import ui
from ui import navigation, presenter
from ui.tour import INDEX_KEY, SENTENCE, STOPS, move, open_stop

state = ui.sidebar()
st.title("🚶 Guided tour")
ui.explain(
    "Ten stops from text to the next token, all on one sentence: "
    f"*{SENTENCE}* Each stop opens a page at the right place; come back here (or use the menu) for the next one."
)

presenter.remember_tabs(INDEX_KEY, list(range(1, len(STOPS) + 1)))  # in presenter view, ← → move through the stops
n = st.slider("Stop", 1, len(STOPS), key=INDEX_KEY, bind="query-params")
stop = STOPS[n - 1]
page = navigation.page_of(stop.page)
st.subheader(f"{n} · {stop.title}")
st.markdown(stop.narration)
where = page.title + (f", tab “{stop.tab[1]}”" if stop.tab else "")
keys = not presenter.on()  # presenter view has its own ← → buttons
with st.container(horizontal=True):
    st.button(
        "◀ Previous stop",
        key="tour_back",
        on_click=move,
        args=(-1,),
        disabled=n == 1,
        shortcut="Left" if keys else None,
    )
    st.button(f"Open {page.icon} {where}", key="tour_open", type="primary", on_click=open_stop, args=(stop,))
    st.button(
        "Next stop ▶",
        key="tour_next",
        on_click=move,
        args=(1,),
        disabled=n == len(STOPS),
        shortcut="Right" if keys else None,
    )
if state.sentence != SENTENCE:
    st.caption("Opening a stop puts the tour's sentence in the sidebar.")

st.markdown("**All stops**")
st.markdown("\n".join(f"{i}. {s.title} — {navigation.page_of(s.page).title}" for i, s in enumerate(STOPS, 1)))
