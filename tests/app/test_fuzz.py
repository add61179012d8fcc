"""Fuzzing every page (app.py and pages/*.py) through AppTest with hypothesis-generated input.

Sentences (any unicode but surrogates, emoji, RTL, control characters, combining marks, HTML and script
fragments, whitespace only, up to 25,000 characters) and sidebar values (layer, head, temperature) go in
through the widgets and through the query string, the latter also as garbage (NaN, inf, huge, not a
number, unknown or path-like model names). Every example must run without an exception; a blank
sentence must give a clear message, a too long one a notice; no raw "<" from user text may reach a figure.

ATLAS_FUZZ_EXAMPLES sets the examples per test and page. Unset, each test runs a few deterministic
examples (derandomized: the same every run, part of `make test`); set (`make fuzz`), the examples are
random. One AppTest per page is reused across examples (as one student keeps typing); it is dropped when
an example fails, so a failure never leaks into the next example, and the failure report notes the
inputs that AppTest had received before.
"""

from __future__ import annotations

import json
import math
import os
import re
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, event, example, given, note, settings
from hypothesis import strategies as st

import ui
from tests.apptest_utils import PAGE_FILES, ROOT, SENTENCE_PAGES, assert_ok, each_tab, run_page
from transformer import loading
from transformer.trace import MAX_CHARS
from transformer.vocabulary import MAX_SOURCE_CHARS
from ui.state import DEFAULT_SENTENCE, KEYS, PRESETS, TEMPERATURE_RANGE

pytestmark = pytest.mark.fuzz

FUZZING = os.environ.get("ATLAS_FUZZ_EXAMPLES")
SETTINGS = settings(
    max_examples=int(FUZZING or 6),
    deadline=None,  # an AppTest rerun takes 20-250 ms, more on a busy machine
    derandomize=FUZZING is None,  # `make test` is deterministic; `make fuzz` explores
    database=None,  # no .hypothesis/ folder in the repo; a failure prints a @reproduce_failure blob instead
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)

CONTEXT, CROSS_ATTENTION = "pages/10_Context.py", "pages/12_Cross_attention.py"  # pages with their own text boxes
LM = ui.get_model("shakespeare-gpt")
TOP_LAYER, TOP_HEAD, N_CTX = LM.cfg.n_layer - 1, LM.cfg.n_head - 1, LM.cfg.n_ctx
TAU_MIN, TAU_MAX = TEMPERATURE_RANGE

# ---------------------------------------------------------------- strategies

# what str.strip() removes: \t \n \x1c … \xa0 \u2028 \u3000
WHITESPACE = "".join(c for c in map(chr, range(0x3001)) if c.isspace())
# fmt: off
FRAGMENTS = [
    "<script>alert(1)</script>", "<ScRiPt src=//x.y>", "<img src=x onerror=alert(1)>", "<svg onload=alert(1)>",
    "<iframe src=javascript:alert(1)>", '<a href="javascript:alert(1)">x</a>', "<br>", "<b>", "</div>", "&lt;", "&#60;",
    "**bold**", "`code`", "[x](javascript:alert(1))", "$$\\frac{1}{0}$$", "\\", "'\"", "%s%n", "{{7*7}}", "${x}",
    "🐻", "🐻\u200d❄️", "👩🏽\u200d🔬", "🇫🇷", "مرحبا", "שלום", "\u202e", "\u200b", "\u200d", "\ufeff", "\u2028",
    "e\u0301", "a\u0300\u0301\u0302\u0303\u0304", "Z̴̡̢a̵l̸g̷o̶", "\x00", "\x07", "\x1b[31m", "\r\n", "\t", "\x7f",
    "\x85", "\ufffd", "\U0001d54f", "ﷺ", "𒐫", "<|endoftext|>", "bear", " the", "\n\n",
]
# fmt: on
ODD_CHARS = st.characters(categories=("Mn", "Mc", "Me", "Cc", "Cf", "Co", "Cn", "Zs", "Zl", "Zp", "So", "Sk"))
RTL_CHARS = st.characters(min_codepoint=0x0590, max_codepoint=0x08FF)
LONG_LENGTHS = st.one_of(
    st.sampled_from([MAX_CHARS - 1, MAX_CHARS, MAX_CHARS + 1, MAX_CHARS + 1000, 25_000]), st.integers(1_000, 25_000)
)


def repeat_to(seed: str, n: int) -> str:
    """`seed` repeated and cut to n characters: long text without drawing n characters one by one."""
    return (seed * (n // len(seed) + 1))[:n]


LONG_MIXED = repeat_to("🐻 bear <img src=x onerror=alert(1)> مرحبا e\u0301\x00 ", 25_000)


def sentences() -> st.SearchStrategy[str]:
    return st.one_of(
        st.text(max_size=300),  # any code point but surrogates
        st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=12), max_size=16).map("".join),
        st.text(st.one_of(ODD_CHARS, RTL_CHARS), max_size=80),  # combining marks, controls, format, unassigned, RTL
        st.text(alphabet=WHITESPACE, max_size=40),  # empty or whitespace only
        st.builds(repeat_to, st.text(min_size=1, max_size=40), LONG_LENGTHS),  # long, around MAX_CHARS
        st.sampled_from(list(PRESETS.values())),
    )


# fmt: off
NUMBER_GARBAGE = [
    "", " ", "nan", "NaN", "-nan", "inf", "-inf", "Infinity", "1e308", "1e999", "-1e999", "1e-320", "-0.0", "-1",
    "-2147483649", "99999999999999999999999", "0x10", "1_0", "٣", " 2 ", "2.0", "2.5", "None", "null", "[]", "{}",
    "true", "1;DROP TABLE", "\x00",
]
# fmt: on
NUMBERS = st.one_of(
    st.sampled_from(NUMBER_GARBAGE), st.integers(-(10**30), 10**30).map(str), st.floats().map(str), st.text(max_size=20)
)
# fmt: off
MODEL_NAMES = st.one_of(
    st.sampled_from(
        [
            "shakespeare-gpt", "translator-en-fr", "../../etc/passwd", "/etc/passwd", "/etc", "~", "~/.ssh",
            "assets/models/shakespeare-gpt", str(ROOT / "assets/models/shakespeare-gpt"), "../shakespeare-gpt",
            "shakespeare-gpt/../../../../etc", "./models/../../etc", "file:///etc/passwd", "SHAKESPEARE-GPT",
            "shakespeare-gpt ", "gpt2", "\x00", "", "%2e%2e%2fetc%2fpasswd", "C:\\Windows\\win.ini",
        ]
    ),
    st.text(max_size=60),
)
# fmt: on


def maybe_repeated(values: st.SearchStrategy[str]) -> st.SearchStrategy[str | list[str]]:
    """One value, or the key given several times (?layer=1&layer=x): st.query_params keeps the last."""
    return values | st.lists(values, min_size=2, max_size=3)


QUERIES = st.fixed_dictionaries(
    {},
    optional={
        "model": maybe_repeated(MODEL_NAMES),
        "sentence": maybe_repeated(sentences()),
        "layer": maybe_repeated(NUMBERS),
        "head": maybe_repeated(NUMBERS),
        "temperature": maybe_repeated(NUMBERS),
        "phrase": sentences(),  # page 12's own text
    },
)
# Temperatures a student can set: the slider's bounds, its 0.05 steps, and any value in between.
TEMPERATURES = st.one_of(
    st.sampled_from([TAU_MIN, TAU_MAX, 1.0]), st.integers(1, 100).map(lambda i: i / 20), st.floats(TAU_MIN, TAU_MAX)
)
# A crafted client can send any number for a slider; Streamlit must put it back in range.
HOSTILE_INTS = st.one_of(st.integers(-5, 10), st.sampled_from([-(2**63), 2**63 - 1, 2**40]))
HOSTILE_FLOATS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0, 1e-300, TAU_MIN - 1e-9, TAU_MAX + 1e-9])
)

# ---------------------------------------------------------------- one reused AppTest per page

_APPS: dict[str, tuple] = {}


def short(value, n: int = 120) -> str:
    r = repr(value)
    return r if len(r) <= n else f"{r[:n]}… ({len(r):,} chars)"


@contextmanager
def reused(path: str, query: dict | None = None):
    """The page's AppTest and the inputs it has had; a new one first runs with `query`.
    It is put back only when the example passes."""
    at, history = _APPS.pop(path, None) or (run_page(path, **(query or {})), [])
    assert_ok(at)
    note(f"inputs this AppTest had before (oldest first): {history}")
    yield at, history
    _APPS[path] = (at, history[-3:])


# ---------------------------------------------------------------- what every example must satisfy


def messages(at, kind: str) -> list[str]:
    return [str(e.value) for e in at.get(kind)]


# Markup the app itself writes into figure text. Any other "<" in a figure came from user text unescaped, and
# plotly would read a typed "<a href=…>" or "<b>" as markup. (The bundled BPE splits "<img" into "<", "im", "g", so
# looking for whole typed tags would miss an unescaped label; with figures.common.esc disabled this check fails.)
OWN_MARKUP = re.compile(r"</?(?:br|b|i|sup|sub|extra|span)(?:\s[^<>]*)?/?>", re.IGNORECASE)


def strings(node) -> list[str]:
    """Every string in a plotly JSON tree."""
    if isinstance(node, str):
        return [node]
    children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
    return [s for child in children for s in strings(child)]


def assert_figures_escaped(at) -> None:
    for chart in at.get("plotly_chart"):
        raw = [s for s in strings(json.loads(chart.proto.spec)) if "<" in OWN_MARKUP.sub("", s)]
        assert not raw, f"unescaped '<' in a figure: {[short(s) for s in raw[:3]]}"


def check_sentence(at, page: str, text: str) -> None:
    """The page ran on the sidebar sentence `text`: no exception in any of its tabs, and a clear message
    where the text is unusable or cut."""
    assert_ok(at)
    assert_figures_escaped(at)
    for _ in each_tab(at):
        assert_figures_escaped(at)
    if page not in SENTENCE_PAGES:
        return
    if not text.strip():
        event("sentence: empty or whitespace")
        assert any("empty" in m or "whitespace" in m for m in messages(at, "info")), messages(at, "info")
        return
    cut = len(text) > MAX_CHARS or len(LM.tokenizer.encode(text[:MAX_CHARS])) > N_CTX
    event(f"sentence: {'longer than the context' if cut else 'fits the context'}")
    assert any("reads at most" in m for m in messages(at, "warning")) == cut, messages(at, "warning")


def last(value):
    """What st.query_params.to_dict() gives for a key: its last value."""
    return value[-1] if isinstance(value, list) else value


def expected_index(raw, top: int) -> int:
    """The spec for layer/head in the query string: a Python int, clamped into [0, top]; anything else means 0."""
    try:
        return min(max(int(raw), 0), top)
    except (TypeError, ValueError):
        return 0


def expected_temperature(raw) -> float:
    """The spec for the temperature: a finite float, clamped into the slider's range; anything else means 1."""
    try:
        t = float(raw)
    except (TypeError, ValueError):
        return 1.0
    return min(max(t, TAU_MIN), TAU_MAX) if math.isfinite(t) else 1.0


# ---------------------------------------------------------------- the fuzz tests

pages = pytest.mark.parametrize("page", PAGE_FILES, ids=[p.split("/")[-1].removesuffix(".py") for p in PAGE_FILES])


@pages
@SETTINGS
@given(text=sentences())
@example(text="")
@example(text=" \t\n\u3000\u2028")
@example(text="I")  # one token: nothing comes after it
@example(text=LONG_MIXED)
def test_typed_sentence(page, text):
    """Any text typed into the sidebar's sentence box."""
    with reused(page) as (at, history):
        history.append({"sentence": short(text)})
        at.text_area(key="w_sentence").set_value(text).run()
        kept = text[:MAX_CHARS]  # Streamlit cuts a value longer than the box's max_chars, as the browser would
        assert at.text_area(key="w_sentence").value == kept
        check_sentence(at, page, kept)


@pages
@SETTINGS
@given(text=sentences(), layer=st.integers(0, TOP_LAYER), head=st.integers(0, TOP_HEAD), tau=TEMPERATURES)
@example(text="the cat and the dog", layer=TOP_LAYER, head=TOP_HEAD, tau=TAU_MIN)
@example(text="the cat and the dog", layer=0, head=0, tau=TAU_MAX)
def test_sidebar_controls(page, text, layer, head, tau):
    """Any sentence with any layer, head and temperature the sliders allow, bounds included; the URL follows."""
    with reused(page) as (at, history):
        history.append({"sentence": short(text), "layer": layer, "head": head, "temperature": tau})
        at.text_area(key="w_sentence").set_value(text)
        at.slider(key="w_layer").set_value(layer)
        at.slider(key="w_head").set_value(head)
        at.slider(key="w_temperature").set_value(tau).run()
        check_sentence(at, page, text[:MAX_CHARS])
        assert (
            (at.slider(key="w_layer").value, at.slider(key="w_head").value, at.slider(key="w_temperature").value)
            == (layer, head, tau)
        )
        assert (
            (at.query_params["layer"], at.query_params["head"], at.query_params["temperature"])
            == (str(layer), str(head), str(tau))
        )


@pages
@SETTINGS
@given(layer=HOSTILE_INTS, head=HOSTILE_INTS, tau=HOSTILE_FLOATS)
@example(layer=TOP_LAYER + 1, head=-1, tau=math.nan)
def test_hostile_slider_values(page, layer, head, tau):
    """Slider values no browser would send (a crafted websocket message):
    the page runs and every value stays in range."""
    with reused(page) as (at, history):
        history.append({"layer": layer, "head": head, "temperature": tau})
        at.slider(key="w_layer").set_value(layer)
        at.slider(key="w_head").set_value(head)
        at.slider(key="w_temperature").set_value(tau).run()
        assert_ok(at)
        values = [at.session_state["atlas_" + k] for k in ("layer", "head", "temperature")]  # what the pages read
        assert 0 <= values[0] <= TOP_LAYER and 0 <= values[1] <= TOP_HEAD and TAU_MIN <= values[2] <= TAU_MAX, values


@pages
@SETTINGS
@given(query=QUERIES)
@example(
    query={"model": "../../etc/passwd", "layer": "nan", "head": ["1", "-1e9"], "temperature": "inf", "sentence": " \n"}
)
@example(
    query={
        "model": "translator-en-fr",
        "layer": "3",
        "head": "2",
        "temperature": "0.05",
        "sentence": LONG_MIXED,
        "phrase": LONG_MIXED,
    }
)
def test_query_string(page, query):
    """Any query string, garbage included, when a session starts: valid values are kept,
    others fall back, nothing is loaded."""
    if page == CROSS_ATTENTION:  # its phrase is a widget's value: only a new AppTest reads it from the URL again
        _APPS.pop(page, None)
    with reused(page, query) as (at, history):
        history.append({k: short(v) for k, v in query.items()})
        for key in KEYS:  # a new session: the sidebar state is read from the query string again
            if "atlas_" + key in at.session_state:
                del at.session_state["atlas_" + key]
        at.query_params.clear()
        at.query_params.update(query)
        models_before = set(loading._REGISTRY)
        at.run()

        sentence = str(last(query.get("sentence", DEFAULT_SENTENCE)))[:MAX_CHARS]
        check_sentence(at, page, sentence)
        assert set(loading._REGISTRY) == models_before  # no name from the URL reaches the model loader
        assert at.selectbox(key="w_model").value == "shakespeare-gpt"
        assert at.text_area(key="w_sentence").value == sentence
        assert at.slider(key="w_layer").value == expected_index(last(query.get("layer")), TOP_LAYER)
        assert at.slider(key="w_head").value == expected_index(last(query.get("head")), TOP_HEAD)
        assert at.slider(key="w_temperature").value == expected_temperature(last(query.get("temperature", "1.0")))
        if page == CROSS_ATTENTION and "phrase" in query:
            assert at.text_input(key="xattn_phrase").value == query["phrase"][: MAX_SOURCE_CHARS]


SHARED_WORD = st.sampled_from(["bear", "bank", "flies", "the", "🐻", "<b>", "x" * 40])
CONTEXT_LINES = st.one_of(
    st.lists(sentences(), max_size=5).map("\n".join),
    st.builds(
        lambda w, lines: "\n".join(f"{s} {w} {s}" for s in lines),
        SHARED_WORD,
        st.lists(st.text(max_size=30), min_size=2, max_size=5),
    ),
)


@SETTINGS
@given(lines=CONTEXT_LINES, word=SHARED_WORD | st.text(max_size=40), forms=st.booleans())
def test_context_page_inputs(lines, word, forms):
    """Page 10's own sentences box, word box and toggle."""
    page = CONTEXT
    with reused(page) as (at, history):
        history.append({"sentences": short(lines), "word": word, "forms": forms})
        at.text_area(key="context_sentences").set_value(lines)
        at.text_input(key="context_word").set_value(word)
        at.toggle(key="context_forms").set_value(forms).run()
        assert_ok(at)
        assert_figures_escaped(at)
        if sum(1 for s in lines.splitlines() if s.strip()) < 2:
            assert any("at least two sentences" in m for m in messages(at, "info"))
        elif not word.strip():
            assert any("Type the word" in m for m in messages(at, "info"))


@SETTINGS
@given(
    phrase=sentences()
    | st.sampled_from(["the big red car", "the european economic area", "THE Big, red; car!!", "car car car " * 400])
)
def test_cross_attention_phrase(phrase):
    """Page 12's English phrase box."""
    page = CROSS_ATTENTION
    with reused(page) as (at, history):
        history.append({"phrase": short(phrase)})
        at.text_input(key="xattn_phrase").set_value(phrase).run()
        assert_ok(at)
        assert_figures_escaped(at)
        if not phrase.strip():
            assert any("empty" in m for m in messages(at, "info"))
