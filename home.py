"""The home page: what the app is, the pipeline at a glance, one live attention map (first, in presenter view)."""

import streamlit as st

import ui
from ui import navigation, presenter
from ui.caches.masking import pattern_figure

state = ui.sidebar()
lm = ui.get_model(state.model)

st.title("🧭 Attention Atlas")
ui.explain(
    "Type a sentence and watch a real transformer read it, one step at a time. "
    "Wherever a page shows a model, its numbers come from that model's own forward pass — nothing is made up. "
    "The sidebar holds the sentence, the model, and which **layer**, **head** and **attention "
    "temperature** to look at (on a phone or a tablet, the sentence, layer, head and temperature sit at the top of "
    "the page); they stay the same on every page and are kept in the address bar, "
    "so you can share a link that opens exactly this view."
)

navigation.page_link(
    navigation.TOUR,
    label="**New here? Take the guided tour**: ten stops from text to the next token.",
    icon=navigation.TOUR.icon,
)


def pipeline() -> None:
    st.subheader("The pipeline at a glance")
    navigation.draw_pipeline()


def live() -> None:
    st.subheader("Attention, live")
    tr = ui.trace_or_stop(state.key)
    looks = (
        "every earlier token (the keys). Rows sum to 1; the grey triangle is the future, which a decoder may not see."
        if lm.cfg.causal
        else (
            "every token, before and after it (the keys). Rows sum to 1; "
            f"{lm.name} is an encoder: no causal mask, so no grey triangle."
        )
    )
    st.markdown(
        f"**{len(tr.encoding)} tokens.** Layer {state.layer}, head {state.head}: "
        f"each row is a token (the query) and shows how much it looks at {looks}"
    )
    st.latex(r"\alpha = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}\,\tau}+M\right)")
    ui.show_figure(pattern_figure(state.key, state.layer, state.head), key="home_pattern")


first, second = st.container(), st.container()  # on a projector the first screen shows the map
with second if presenter.on() else first:
    pipeline()
with first if presenter.on() else second:
    live()  # last: a sentence it cannot read stops the page here, after the menu

with st.expander(f"Model card: {lm.name}"):
    st.markdown(lm.card or "No model card.")
