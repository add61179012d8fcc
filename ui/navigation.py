"""The app's pages in reading order, grouped into sections: the sidebar menu, the home page's cards and the
previous/next keys all read this one list."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from . import a11y, widths
from .menu import links as menu_links

log = logging.getLogger("atlas.navigation")

ROOT = Path(__file__).resolve().parent.parent
CURRENT_KEY = "atlas_page"
PAGES_KEY = "atlas_pages"  # this session's st.Page of each page, by section (menu())
LED_KEY = "atlas_led"  # this run shows a view someone else leads (led())
OPENED_KEY = "atlas_opened"  # this run opens its page (another page, or none, ran before it: opened())
PIPELINE_KEY = "home_pipeline"  # the home page's pipeline (draw_pipeline)


@dataclass(frozen=True)
class PageInfo:
    path: str  # from the project root
    title: str
    icon: str
    blurb: str  # one sentence for the home page's link

    @property
    def url_path(self) -> str:
        """The page's address: "pages/3_One_head.py" → "One_head", "tour.py" → "tour" (the home page: "")."""
        stem = Path(self.path).stem
        return "" if self.path == HOME.path else stem.split("_", 1)[1] if stem[0].isdigit() else stem


HOME = PageInfo("home.py", "Home", "🧭", "What the app is, the pipeline at a glance, one live attention map.")
TOUR = PageInfo(
    "pages/0_Guided_tour.py", "Guided tour", "🚶", "Ten stops from text to the next token, on one sentence."
)
SECTIONS: dict[str, tuple[PageInfo, ...]] = {
    "Start": (HOME, TOUR),
    "Inputs": (
        PageInfo(
            "pages/1_Tokens_and_embeddings.py",
            "Tokens and embeddings",
            "🔤",
            "Text is cut into sub-word tokens, each with an id and a learned vector.",
        ),
        PageInfo(
            "pages/2_Positional_encoding.py",
            "Positional encoding",
            "📍",
            "How a model knows word order: added position vectors, or RoPE.",
        ),
    ),
    "One head": (
        PageInfo(
            "pages/3_One_head.py",
            "One head",
            "🔍",
            "Q, K, V → scores → ÷√d_k → mask → softmax → weighted sum of values.",
        ),
        PageInfo("pages/4_Masking.py", "Masking", "🎭", "A decoder may not look at the future."),
        PageInfo(
            "pages/5_Softmax_and_temperature.py",
            "Softmax and temperature",
            "🌡️",
            "How scores become weights, and why we scale them.",
        ),
        PageInfo(
            "pages/6_Lecture_example.py", "Lecture example", "🎓", "The 4-word worked example, every matrix shown."
        ),
    ),
    "The whole model": (
        PageInfo("pages/7_Multi_head.py", "Multi-head", "🐙", "Heads side by side, concatenated and projected by W_O."),
        PageInfo(
            "pages/8_Inside_a_block.py", "Inside a block", "🧱", "Residual stream, LayerNorm, feed-forward network."
        ),
        PageInfo("pages/9_Next_token.py", "Next token", "🎲", "Logits → softmax → sampling; the logit lens."),
    ),
    "Beyond": (
        PageInfo(
            "pages/10_Context.py",
            "Context changes meaning",
            "🐻",
            "The same word gets different vectors in different sentences.",
        ),
        PageInfo("pages/11_Query_key_map.py", "Query–key map", "🗺️", "Queries and keys in one picture."),
        PageInfo(
            "pages/12_Cross_attention.py",
            "Cross-attention",
            "🌉",
            "Cross-attention aligns a translation with its source.",
        ),
        PageInfo(
            "pages/13_RoPE_and_shared_heads.py",
            "RoPE and shared heads",
            "🌀",
            "Llama's rotated queries and keys; query heads sharing key/value heads.",
        ),
        PageInfo(
            "pages/14_Encoder_vs_decoder.py",
            "Encoder vs decoder",
            "↔️",
            "One sentence through BERT and a decoder, side by side.",
        ),
        PageInfo(
            "pages/15_Heads_forming.py", "Heads forming", "🌱", "A tiny model learns induction heads while it trains."
        ),
    ),
}
ORDER = [p for pages in SECTIONS.values() for p in pages]  # reading order: what the next-page key follows


def page_of(path: str) -> PageInfo:
    """The entry of a page file ("pages/3_One_head.py")."""
    return next(p for p in ORDER if p.path == path)


def neighbour(path: str, step: int) -> PageInfo | None:
    """The page `step` places after (or, step < 0, before) `path` in reading order; None past either end."""
    i = [p.path for p in ORDER].index(path) + step
    return ORDER[i] if 0 <= i < len(ORDER) else None


def current() -> str | None:
    """The page file the router is running; None when a page runs on its own (as in tests)."""
    return st.session_state.get(CURRENT_KEY)


def pages_manager():
    """Streamlit's PagesManager if it still has its uses_pages_directory flag; else None, after one warning."""
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError:
        PagesManager = None  # noqa: N806
    if not hasattr(PagesManager, "uses_pages_directory"):
        log.warning(
            "PagesManager.uses_pages_directory not found: "
            "a first visit of a page's address may show the plain menu (Streamlit's default behaviour)"
        )
        return None
    return PagesManager


_pages_manager = pages_manager()


def take_over() -> None:
    """Make sure the router runs. A Streamlit server that finds a pages/ folder beside app.py starts in its older
    multipage mode, in which the first visit of a page's address (/One_head) runs that page alone, with a plain
    menu, until some run of app.py calls st.navigation. A page calls this first: it leaves that mode for the whole
    process (what st.navigation itself does) and runs again, through the router. If Streamlit no longer has the
    flag, nothing changes (the plain menu shows until the home page is opened once)."""
    if _pages_manager is not None and _pages_manager.uses_pages_directory:
        _pages_manager.uses_pages_directory = False
        st.rerun()


def menu() -> dict[str, list]:
    """The st.Page of each page, by section, made at the session's first run and kept for its later ones. Each session
    has its own: st.navigation marks the page it returns as the one to run."""
    if PAGES_KEY not in st.session_state:
        st.session_state[PAGES_KEY] = {
            section: [
                st.Page(str(ROOT / p.path), title=p.title, icon=p.icon, url_path=p.url_path or None, default=p is HOME)
                for p in pages
            ]
            for section, pages in SECTIONS.items()
        }
    return st.session_state[PAGES_KEY]


def page_link(info: PageInfo, where=st, **kwargs) -> None:
    """A link to the page `info` in `where` (st.page_link's arguments): to its st.Page, which the link needs not look
    up by file path."""
    pages = [p for section in menu().values() for p in section]
    where.page_link(pages[ORDER.index(info)], **kwargs)


def run(
    first: Callable[[], bool] = lambda: False,
    before: Callable[[], None] = lambda: None,
    after: Callable[[], None] = lambda: None,
    side_head: Callable[[], None] = lambda: None,
    side_tail: Callable[[], None] = lambda: None,
) -> None:
    """`first` (app.py: a student's page opening the teacher's view), which says whether this run shows a view someone
    else leads (`led`); then the sidebar menu, grouped by section, with every page visible, unless it does; then run
    the page the address names, after a link that skips to its first chart (ui/a11y.py), `before` (app.py: the live
    class's bar) and `side_head` in the sidebar (app.py: the model and preset controls); then `side_tail` at the
    sidebar's end (app.py: the page's script). The page runs as a fragment (page_alone): what is drawn around it
    stays as it is when the page runs alone; `after` (app.py: publish the teacher's view) is what the caller does after
    a whole run, done by the page's own runs at their end."""
    page = st.navigation(menu(), position="hidden")
    path = next(p.path for p in ORDER if p.url_path == page.url_path)
    st.session_state[OPENED_KEY] = st.session_state.get(CURRENT_KEY) != path
    st.session_state[CURRENT_KEY] = path
    st.session_state[LED_KEY] = first()
    with st.sidebar:
        if not led():
            draw_menu(menu())
        widths.measure()  # it watches the page's charts, whatever redraws them
    a11y.skip_link()
    before()
    with st.sidebar:
        side_head()
    page_alone(page, after)
    with st.sidebar:
        side_tail()


@st.fragment
def page_alone(page, after: Callable[[], None]) -> None:
    """The page, as a fragment: a move of any of its controls (all but the menu and the live class's bar, drawn
    before it) runs the page alone, without the router, the menu, the skip link and the class's bar, which stay as
    they are (~5 ms of a ~40 ms run on SmolLM2: bench/history/class.md). A page's st.rerun() still runs it all."""
    ctx = get_script_run_ctx()
    alone = ctx is not None and bool(ctx.fragment_ids_this_run)
    if alone:
        st.session_state[OPENED_KEY] = False
    a11y.chart_target_ahead()
    page._can_be_called = True  # Streamlit runs the page st.navigation returned once a whole run: again here
    try:
        page.run()
    finally:
        if alone:
            after()


def opened() -> bool:
    """Whether this run of the router opens its page: the browser draws the page's controls anew, with no value of
    its own. (False for a page run without the router, as in tests.)"""
    return st.session_state.get(OPENED_KEY, False)


def led() -> bool:
    """Whether this run shows a view that someone else leads (a student following a live class): its page, sentence,
    model, layer, head and τ are the teacher's, so the run draws neither the menu nor the controls that set them."""
    return st.session_state.get(LED_KEY, False)


def draw_menu(pages: dict[str, list]) -> None:
    """The menu: a heading per section and a list of its pages' links (ui/menu.py: one element a run). Streamlit's
    own grouped menu (st.navigation in the sidebar) puts each section's <li> items in a <div> inside one <ul>
    (Streamlit 1.67), markup that screen readers cannot read as a list (axe's rules `list` and `listitem`, a serious
    violation on every page: docs/accessibility.md). Without components v2, `pages` as Streamlit's page links under
    section headings, which need no list."""
    if menu_links is not None:
        here = page_of(path).url_path if (path := current()) else ""
        sections = [[name, [[p.icon, p.title, p.url_path] for p in infos]] for name, infos in SECTIONS.items()]
        menu_links(key=a11y.MENU_KEY, data={"sections": sections, "here": here})
        return
    with st.container(key=a11y.MENU_KEY):
        for section, links in pages.items():
            st.subheader(section, anchor=False)
            for page in links:
                st.page_link(page)


def draw_pipeline() -> None:
    """The home page's pipeline: each section's pages after "Start", in reading order, a link per page that holds its
    title and what it shows, as one element (ui/menu.py, as the menu: a run of each student's page in a live class
    draws it again at each of the teacher's moves). Without components v2, Streamlit's page links under the sections'
    names."""
    sections = {name: infos for name, infos in SECTIONS.items() if name != "Start"}
    if menu_links is not None:
        links = [[name, [[p.icon, p.title, p.url_path, p.blurb] for p in infos]] for name, infos in sections.items()]
        data = {"sections": links, "here": "", "label": "The pipeline", "heading": "h4"}  # under the page's h3
        menu_links(key=PIPELINE_KEY, data=data)
        return
    for section, infos in sections.items():
        st.markdown(f"**{section}**")
        for page in infos:
            page_link(page, label=f"**{page.title}** · {page.blurb}", icon=page.icon)
