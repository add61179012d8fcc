"""The serving configuration (.streamlit/config.toml), as written and as Streamlit
itself reads it; and the input caps."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import tomllib

import pytest
from streamlit import config
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.runtime.forward_msg_cache import populate_hash_if_needed
from streamlit.testing.v1 import AppTest
from streamlit.web.server.server_util import is_xsrf_enabled

from tests.apptest_utils import PAGE_FILES, ROOT, SENTENCE_PAGES, TIMEOUT, assert_ok, each_tab, run_page
from transformer.trace import MAX_CHARS
from transformer.vocabulary import MAX_SOURCE_CHARS

CONFIG = ROOT / ".streamlit" / "config.toml"
# What a classroom server needs, option by option.
SERVING = {
    "server.enableXsrfProtection": True,  # a page on another site cannot post into a student's session
    "server.enableStaticServing": False,  # nothing under ./static is published
    "server.fileWatcherType": "none",  # no watcher threads burning CPU under load
    "browser.gatherUsageStats": False,  # no telemetry from a classroom
    "client.showErrorDetails": "none",  # an uncaught error shows no message, type or traceback
    "runner.postScriptGC": False,  # no full gc (~80 ms holding the GIL with torch loaded) after every rerun
    "global.minCachedMessageSize": 1e15,  # no message sent as a reference to the browser's cache (config.toml)
    "theme.base": "light",  # the theme whose colours ui/a11y.py checks, whatever the student's system prefers
}
MAX_MESSAGE_MB = 200  # Streamlit's default; a figure never needs more


def file_options() -> dict[str, object]:
    """The file's options as "section.name" → value."""
    raw = tomllib.loads(CONFIG.read_text(encoding="utf-8"))
    return {f"{section}.{name}": value for section, options in raw.items() for name, value in options.items()}


@pytest.fixture
def served(monkeypatch, tmp_path):
    """Streamlit's config as `streamlit run app.py` from the repo root reads it: this file only (no ~/.streamlit, no
    STREAMLIT_* variables). Re-read afterwards, so other tests see the config they started with."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("HOME", str(tmp_path))
    for var in [v for v in os.environ if v.startswith("STREAMLIT_")]:
        monkeypatch.delenv(var)
    monkeypatch.setattr(config, "_main_script_path", str(ROOT / "app.py"))
    yield config.get_config_options(force_reparse=True)
    monkeypatch.undo()
    config.get_config_options(force_reparse=True)


def test_config_file_holds_the_serving_values():
    opts = file_options()
    for key, value in SERVING.items():
        assert key in opts and type(opts[key]) is type(value) and opts[key] == value, key
    assert opts.get("server.enableCORS", True) is True  # not switched off (the default is on)
    assert 0 < opts["server.maxMessageSize"] <= MAX_MESSAGE_MB


def test_streamlit_reads_every_option_from_the_file(served):
    """A typo'd key ("server.enableXSRFProtection") or section would be ignored by Streamlit
    with a mere log line: here it fails."""
    for key, value in file_options().items():
        assert key in served, f"{key!r} is not a Streamlit option"
        assert served[key].where_defined == str(CONFIG), key
        assert config.get_option(key) == value, key


def test_effective_serving_values(served):
    for key, value in SERVING.items():
        assert config.get_option(key) == value, key
    assert config.get_option("server.enableCORS") is True
    assert 0 < config.get_option("server.maxMessageSize") <= MAX_MESSAGE_MB
    assert is_xsrf_enabled()


def test_no_message_is_sent_as_a_reference_to_the_browser_s_cache(served):
    """A chart of 2 MB (within maxMessageSize, 50 MB) is sent whole: not marked cacheable, so no later run
    refers to it by its hash (Streamlit's default marks any element of 10 kB or more)."""
    msg = ForwardMsg()
    msg.delta.new_element.plotly_chart.spec = "x" * 2_000_000
    populate_hash_if_needed(msg)
    assert msg.hash and not msg.metadata.cacheable


def _fails():
    raise RuntimeError("secret detail /home/teacher/key.txt")


def test_an_uncaught_error_shows_no_detail(served):
    """With the served config, an uncaught exception reaches the browser without its message, type or traceback."""
    at = AppTest.from_function(_fails, default_timeout=TIMEOUT).run()
    (err,) = at.exception
    assert "secret detail" not in err.proto.message and "This app has encountered an error" in err.proto.message
    assert not err.proto.stack_trace and not err.proto.type


# ---------------------------------------------------------------- input caps


def test_the_sentence_box_is_capped_at_max_chars():
    assert isinstance(MAX_CHARS, int) and 1_000 <= MAX_CHARS <= 100_000
    at = run_page("app.py")
    assert at.text_area(key="w_sentence").max_chars == MAX_CHARS  # the browser refuses more


TOO_LONG = ("To be, or not to be, that is the question. " * 600)[: MAX_CHARS + 1000]


@pytest.mark.parametrize("page", PAGE_FILES, ids=[p.split("/")[-1].removesuffix(".py") for p in PAGE_FILES])
@pytest.mark.parametrize("how", ["typed", "link"])
def test_over_long_sentence_is_cut_with_a_notice(page, how):
    """MAX_CHARS + 1,000 characters, typed (a client can send more than the box allows) or in a shared link: the
    sentence is cut to MAX_CHARS, a page that runs it says it reads only the first tokens, and nothing breaks."""
    if how == "typed":
        at = run_page(page)
        at.text_area(key="w_sentence").set_value(TOO_LONG).run()
    else:
        at = run_page(page, sentence=TOO_LONG)
    assert_ok(at)
    assert at.text_area(key="w_sentence").value == TOO_LONG[:MAX_CHARS]
    if page in SENTENCE_PAGES:  # said where the page runs the sentence (Softmax: in its part 3)
        views = itertools.chain([None], each_tab(at))  # the page as opened, then each of its tabs
        assert any(any("reads at most" in w.value for w in at.warning) for _ in views)


def test_over_long_phrase_is_cut():
    """Page 12's phrase box: capped at the translator's MAX_CHARS, in the box and from a link."""
    long = ("the big red car " * 300)[: MAX_SOURCE_CHARS + 1000]
    at = run_page("pages/12_Cross_attention.py", phrase=long)
    assert_ok(at)
    box = at.text_input(key="xattn_phrase")
    assert box.max_chars == MAX_SOURCE_CHARS and box.value == long[: MAX_SOURCE_CHARS]


def test_torch_threads_setting_is_read_safely():
    """ATLAS_TORCH_THREADS: a whole number ≥ 1; anything else gives 1 thread instead of stopping the server."""
    from ui.models import threads_from

    assert threads_from(None) == 1 and threads_from("2") == 2 and threads_from(" 4 ") == 4
    for bad in ("", "abc", "0", "-1", "1.5", "2 threads"):
        assert threads_from(bad) == 1


def test_a_served_process_collects_garbage_rarely():
    """A process that loads the app's models module collects its young objects after ~10,000 allocations, not
    Python's 700: counted, in a fresh interpreter, over 200,000 objects kept alive."""
    code = (
        "import gc, ui.models\n"
        "before = gc.get_stats()[0]['collections']\n"
        "kept = [[] for _ in range(200_000)]\n"
        "print(gc.get_stats()[0]['collections'] - before)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert int(run.stdout.split()[-1]) <= 30  # Python's default threshold makes ~260 here
