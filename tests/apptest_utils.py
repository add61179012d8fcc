"""Shared helpers for driving pages with Streamlit's AppTest."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest
from streamlit.proto.WidgetStates_pb2 import WidgetState
from streamlit.runtime.state.common import user_key_from_element_id
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted((ROOT / "pages").glob("*.py"))
PAGE_FILES = ["app.py", *(f"pages/{p.name}" for p in PAGES)]  # what a test opens: app.py shows the home page


def page_code(page_file: str) -> str:
    """The code a page file runs: app.py opens on the home page, home.py."""
    return (ROOT / ("home.py" if page_file == "app.py" else page_file)).read_text(encoding="utf-8")


# The pages that run the sidebar sentence through the model (ui.trace_or_stop); the others have their own inputs.
SENTENCE_PAGES = {f for f in PAGE_FILES if "trace_or_stop(" in page_code(f)}
TIMEOUT = 60

# The bad-input set every page must survive: (name, sentence).
# Each gives a clear message or a result, never an exception.
BAD_INPUTS = [
    ("empty", ""),
    ("whitespace", "   \n\t  "),
    ("very_long", "To be, or not to be, that is the question. " * 120),  # ~5,000 characters
    ("emoji", "I love 🐻 bears 🐻‍❄️!"),
    ("rtl", "مرحبا بالعالم — שלום"),
    ("control", "a\x00b\x07c\x1b[31mred\u202edesrever"),
    ("script", "<script>alert(1)</script>"),
    ("img", "<img src=x onerror=alert(1)>"),
]
XSS_PAYLOADS = [
    "<script>window.__xss=1</script>",
    '<img src=x onerror="window.__xss=1">',
    '<svg onload="window.__xss=1">',
]  # in a browser: any one run sets window.__xss
# a test's (name, text) arguments
EACH_BAD_INPUT = pytest.mark.parametrize("name,text", BAD_INPUTS, ids=[n for n, _ in BAD_INPUTS])


def assert_escaped(figs) -> None:
    """User text reaches plotly only escaped: no raw tag of the bad inputs in any figure."""
    for c in figs:
        assert "<script" not in str(c) and "<img" not in str(c)


def assert_bad_input_drawn(at: AppTest, name: str, figs: list, n_tokens: int) -> None:
    """A bad input the page accepted: its figures are drawn, the very long one is cut to the 256-token context with a
    note saying so, and no figure holds a raw tag."""
    assert figs, f"the page accepted the {name} input but drew no figure"
    if name == "very_long":
        assert n_tokens == 256 and "reads at most 256" in texts(at)
    assert_escaped(figs)


def page_path(name: str) -> str:
    """'3_One_head' → the page file's path."""
    return str(ROOT / "pages" / f"{name}.py")


def run_page(path: str, **query: str) -> AppTest:
    """Run a page (or "app.py"; relative paths are from the project root) once, with optional query-string state."""
    at = AppTest.from_file(str(ROOT / path), default_timeout=TIMEOUT)
    for k, v in query.items():
        at.query_params[k] = v
    return at.run()


REPEATED = "I saw the cat and the dog"  # "␣the" twice in the bundled model's tokens


def run_repeated(path: str, tokenizer) -> tuple[AppTest, list[str], list[int]]:
    """The page on REPEATED, checked to have run: (the page, the token labels, the two positions of "␣the")."""
    at = run_page(path, sentence=REPEATED)
    assert_ok(at)
    labels = tokenizer.encode(REPEATED).labels
    the = [p for p, label in enumerate(labels) if label == "␣the"]
    assert len(the) == 2
    return at, labels, the


def checked_spec(spec_json: str) -> dict:
    """A figure the page sent, as a plotly JSON dict, after checking it is exactly what plotly.py's validation gives.

    figures.common.figure skips validation for speed; this re-validates every figure a test reads: an unknown
    property raises, and a property plotly.js would not read ("marker_color", a named "RdBu_r" scale, a bare
    string title) differs from its validated form.
    """
    spec = json.loads(spec_json)
    validated = json.loads(pio.to_json(go.Figure(spec)))
    assert validated == spec, f"figure not in plotly's validated form: {first_difference(spec, validated)}"
    return spec


def first_difference(a, b, path: str = "") -> str:
    """Where two JSON values first differ, e.g. 'data.0.marker_color: 'red' vs <missing>'."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if a.get(k, "<missing>") != b.get(k, "<missing>"):
                return first_difference(a.get(k, "<missing>"), b.get(k, "<missing>"), f"{path}.{k}")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return first_difference(x, y, f"{path}.{i}")
    return f"{path.lstrip('.')}: {str(a)[:80]!r} vs {str(b)[:80]!r}"


def charts(at: AppTest) -> list[dict]:
    """The figures on the page, as (checked) plotly JSON dicts."""
    return [checked_spec(c.proto.spec) for c in at.get("plotly_chart")]


def charts_by_key(at: AppTest) -> dict[str, dict]:
    """The figures on the page by their st.plotly_chart key, as (checked) plotly JSON dicts."""
    return {user_key_from_element_id(c.proto.id): checked_spec(c.proto.spec) for c in at.get("plotly_chart")}


def mounted(at: AppTest, key: str) -> list:
    """The sidebar's components v2 elements with the user key `key`."""
    return [c for c in at.sidebar.get("bidi_component") if c.proto.id.endswith(key)]


def run_with_dropped_box(at: AppTest, box_id: str, text: str) -> AppTest:
    """Run `at` with the request a browser sends after a run that dropped the text box `box_id` (an element id): the
    page's widgets, and the box with what it held as it went (AppTest's own calls send only the widgets drawn)."""
    request = at._tree.get_widget_states()
    request.widgets.append(WidgetState(id=box_id, string_value=text))
    return at._run(request)


def chart_keys(at: AppTest) -> list[str]:
    return list(charts_by_key(at))


def chart(at: AppTest, key: str) -> dict:
    """The figure drawn with st.plotly_chart(key=key), as a plotly JSON dict."""
    figs = charts_by_key(at)
    if key not in figs:
        raise KeyError(f"no chart {key!r}; charts: {list(figs)}")
    return figs[key]


def chart_titled(at: AppTest, title: str) -> dict:
    """The one figure whose title starts with `title`."""
    found = [c for c in charts(at) if c["layout"].get("title", {}).get("text", "").startswith(title)]
    assert len(found) == 1, [c["layout"].get("title") for c in charts(at)]
    return found[0]


def chart_z(at: AppTest, title: str, trace: int = 0) -> np.ndarray:
    """The z values of one trace of the one figure whose title starts with `title`."""
    return array(chart_titled(at, title)["data"][trace]["z"])


def lazy_tabs(at: AppTest) -> dict[str, list[str]]:
    """The page's lazy tab containers, st.tabs(key=…, on_change="rerun"): {key: their labels}."""
    found, stack = {}, [at._tree]
    while stack:
        node = stack.pop()
        children = list(getattr(node, "children", {}).values())
        if getattr(node, "type", None) == "tab_container" and node.proto.id:
            found[user_key_from_element_id(node.proto.id)] = [c.label for c in children]
        stack.extend(children)
    return found


def each_tab(at: AppTest) -> Iterator[str]:
    """Open every tab of every lazy tab container in turn (a rerun each, checked to raise nothing); yields the label
    open. A page without tabs yields none: a caller that expects tabs asserts how many it opened."""
    for key, labels in lazy_tabs(at).items():
        for label in labels:
            at.session_state[key] = label
            at.run()
            assert_ok(at)
            yield label


def open_tab(at: AppTest, key: str, label_start: str) -> AppTest:
    """Open the one tab whose label starts with `label_start` in the lazy tabs
    st.tabs(key=key, on_change="rerun"), and rerun."""
    found = [t.label for t in at.tabs if t.label.startswith(label_start)]
    assert len(found) == 1, [t.label for t in at.tabs]
    at.session_state[key] = found[0]
    return at.run()


def texts(at: AppTest) -> str:
    """All markdown, captions, infos, warnings and errors on the page, joined."""
    parts = []
    for kind in ("markdown", "caption", "info", "warning", "error", "success", "latex", "metric", "text"):
        for el in at.get(kind):
            parts.append(str(getattr(el, "value", getattr(el, "body", ""))))
    return "\n".join(parts)


def run_typed(path: str, text: str) -> AppTest | None:
    """Open a page and type `text` into the sidebar's sentence box. Unusable text (empty, whitespace only)
    must be refused with a message and no figure: then None is returned and there is nothing more to check."""
    at = run_page(path)
    at.text_area(key="w_sentence").set_value(text).run()
    assert_ok(at)
    if text.strip():
        return at
    assert not charts(at) and at.info and ("empty" in texts(at) or "whitespace" in texts(at))
    return None


def assert_ok(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def array(value) -> np.ndarray:
    """A plotly JSON array as numpy: plain lists, or base64 typed arrays {"dtype", "bdata", "shape"}."""
    if isinstance(value, dict) and "bdata" in value:
        arr = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = value.get("shape")
        return arr.reshape([int(s) for s in str(shape).split(",")]) if shape else arr
    return np.array(value, dtype=float)
