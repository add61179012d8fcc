"""Small pieces of JavaScript in the page: Streamlit's components v2 (plain JavaScript in the page, no iframe).

A watcher watches the page: it defines `scan()`, which runs once per animation frame after the page changed or the
window was resized; one that listens to more of the page registers the listener's removal with `onStop(f)`."""

from __future__ import annotations

import logging

import streamlit as st

log = logging.getLogger("atlas.watcher")

FRAME = """
export default function ({ setStateValue }) {
  const stops = [];
  const onStop = (f) => stops.push(f);
%s
  let queued = 0;
  const queue = () => { if (!queued) queued = requestAnimationFrame(() => { queued = 0; scan(); }); };
  const watch = new MutationObserver(queue);
  watch.observe(document.body, { childList: true, subtree: true });
  window.addEventListener('resize', queue);
  queue();
  return () => {
    watch.disconnect();
    window.removeEventListener('resize', queue);
    if (queued) cancelAnimationFrame(queued);
    stops.forEach((f) => f());
  };
}
"""


def script(scan: str) -> str:
    """The component's module: `scan` inside the frame that runs it after each change."""
    return FRAME % scan


def component(name: str, without: str, **parts):
    """st.components.v2.component(name, **parts), or None, after one warning that says `without`, when Streamlit has
    no st.components.v2."""
    make = getattr(getattr(getattr(st, "components", None), "v2", None), "component", None)
    if not callable(make):
        log.warning("st.components.v2.component not found: %s", without)
        return None
    return make(name, **parts)


def watcher(name: str, scan: str, without: str):
    """The component `name` running the JavaScript `scan` (code that defines a function scan(), which may call
    setStateValue and onStop), or None, after one warning that says `without`, when Streamlit has no
    st.components.v2."""
    return component(name, without, js=script(scan))
