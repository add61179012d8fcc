"""A widget's question to the session state, answered for its own key only.

Streamlit's keyed widgets (select box, radio, text input and area, number input, slider without a value, date and
time inputs) each read SafeSessionState.filtered_state: the whole session state as a new dict, every entry's value
looked up and presented, only to ask whether their own key holds None. The sidebar draws five of them on every run,
and each dict costs ~0.5 ms of the GIL with the ~40 keys of a page (a third of it presenting the components' values):
~8 % of the time a class's server runs Python, in a profile of a served rerun.

`install` puts a view in its place that looks up one key when asked (`key in view`, `view[key]`: the same lookup as
st.session_state[key]) and builds the dict only to be iterated, counted or printed (st.session_state's `for`, `len`,
`str`; its `to_dict()` returns the view, a read-only mapping). ~3 % of a served rerun's CPU (bench/history/class.md).

filtered_state is private: if a Streamlit release moves it, `install` logs one warning and leaves Streamlit's own
property.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any

log = logging.getLogger("atlas.user_keys")
TARGET = ("streamlit.runtime.state.safe_session_state", "SafeSessionState", "filtered_state")  # module, class, name


class UserKeys(Mapping):
    """SafeSessionState.filtered_state, looked up one key at a time under the state's lock."""

    def __init__(self, safe):
        self._safe = safe  # a SafeSessionState: ._lock and ._state (the SessionState)

    def full(self) -> dict[str, Any]:
        with self._safe._lock:
            return self._safe._state.filtered_state

    def __getitem__(self, key: str) -> Any:
        from streamlit.runtime.state.common import is_element_id

        if not isinstance(key, str) or is_element_id(key):  # an element id is not a user key: the whole dict
            return self.full()[key]
        with self._safe._lock:
            return self._safe._state[key]

    def __contains__(self, key: object) -> bool:
        try:
            self[key]
        except KeyError:
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(self.full())

    def __len__(self) -> int:
        return len(self.full())

    def __repr__(self) -> str:
        return repr(self.full())


def install() -> None:
    """Put UserKeys in filtered_state's place; idempotent; one warning and nothing patched if Streamlit lacks it."""
    import importlib

    module, cls_name, name = TARGET
    try:
        cls = getattr(importlib.import_module(module), cls_name, None)
    except ImportError:
        cls = None
    prop = getattr(cls, name, None) if isinstance(cls, type) else None
    if isinstance(prop, property) and getattr(prop.fget, "lazy", False):
        return
    if not isinstance(prop, property):
        log.warning("%s.%s.%s not found: widgets read the whole session state (Streamlit's default)", *TARGET)
        return

    def lazy(safe) -> UserKeys:
        return UserKeys(safe)

    lazy.lazy = True
    setattr(cls, name, property(lazy))
