"""ui/user_keys.py: the keyed widgets' look-up of their own key answers as Streamlit's filtered_state dict would, for
every key a page's session holds; a widget whose key holds None still starts empty; without the property to replace,
one warning and nothing patched."""

from __future__ import annotations

import logging

from streamlit.runtime.state import safe_session_state as module
from streamlit.testing.v1 import AppTest

from ui import user_keys

from ..apptest_utils import TIMEOUT, assert_ok, page_path

REAL = module.SafeSessionState.__dict__["filtered_state"]  # the view, once `import ui` has installed it


def test_the_view_answers_as_the_whole_dict_for_every_key_of_a_page():
    """After a run of One head (sidebar and page: a text area, select boxes, sliders, a radio, components) and a key
    set to None: every key of Streamlit's own dict is in the view with the same value, a key it lacks is not, and the
    view lists the same keys."""
    at = AppTest.from_file(page_path("3_One_head"), default_timeout=TIMEOUT).run()
    assert_ok(at)
    at.session_state["none_key"] = None
    safe = at._session_state  # the SafeSessionState the page's widgets read
    view, whole = safe.filtered_state, safe._state.filtered_state
    assert isinstance(view, user_keys.UserKeys) and not isinstance(whole, user_keys.UserKeys)
    assert {"none_key", "w_head", "w_sentence", "chart_format"} <= whole.keys() and len(whole) > 10
    assert {k: (k in view, repr(view[k])) for k in whole} == {k: (True, repr(v)) for k, v in whole.items()}
    assert "no such key" not in view
    assert sorted(view) == sorted(whole) and len(view) == len(whole)


def keyed_widgets_set_to_none():
    import streamlit as st

    for name in ("box", "radio", "text"):
        st.session_state.setdefault(name, None)
    st.session_state["got"] = (
        st.selectbox("Box", ["a", "b"], key="box"),
        st.radio("Radio", ["a", "b"], key="radio"),
        st.text_input("Text", "typed", key="text"),
        st.selectbox("Other", ["a", "b"], key="other"),
    )


def test_a_keyed_widget_whose_key_holds_none_starts_empty():
    """What the widgets ask filtered_state for: a select box, a radio and a text input whose key was set to None are
    sent to the browser with no default (no choice, an empty box); one whose key is not set, with its default."""
    at = AppTest.from_function(keyed_widgets_set_to_none, default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    assert at.session_state["got"] == (None, None, None, "a")
    sent = [at.selectbox(key="box"), at.radio(key="radio"), at.text_input(key="text"), at.selectbox(key="other")]
    assert [w.proto.HasField("default") for w in sent] == [False, False, False, True]


def test_without_the_property_it_warns_once_and_patches_nothing(monkeypatch, caplog):
    class Safe:  # a SafeSessionState whose filtered_state moved away
        pass

    monkeypatch.setattr(module, "SafeSessionState", Safe)
    with caplog.at_level(logging.WARNING, logger="atlas.user_keys"):
        user_keys.install()
    [message] = [r.getMessage() for r in caplog.records if r.name == "atlas.user_keys"]
    assert "filtered_state" in message and "default" in message
    assert not hasattr(Safe, "filtered_state")


def test_install_puts_the_view_in_place_once(monkeypatch):
    class Safe:
        filtered_state = property(lambda self: {"k": 1})

    monkeypatch.setattr(module, "SafeSessionState", Safe)
    user_keys.install()
    prop = Safe.__dict__["filtered_state"]
    user_keys.install()
    assert prop.fget.lazy and Safe.__dict__["filtered_state"] is prop
    assert isinstance(REAL, property) and REAL.fget.lazy  # `import ui` installed it on Streamlit's class
