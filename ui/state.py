"""State shared by every page: model, sentence, layer, head, attention temperature τ and where τ applies.

Values live in plain session_state keys (prefixed "atlas_") so they survive page switches,
and are mirrored into the URL query string so a shared link opens with the same state.
Widgets use their own keys ("w_…") and copy into the plain keys when they change.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import streamlit as st

from transformer import Interventions, ModelLoadError
from transformer.loading import REAL_MODELS, default_model
from transformer.trace import MAX_CHARS, token_limit

from . import export, navigation, page_script, presenter, widths
from .models import TraceKey, get_model, missing_models, model_choices

PRESETS = {
    "Bear country": "The hiking trail led us through bear country.",
    "I love bears": "I love bears.",
    "She bears the pain": "She bears the pain.",
    "Bears won the game": "Bears won the game.",
    "Time flies": "Time flies like an arrow.",
    "Fruit flies": "Fruit flies like a banana.",
    "The cat sat": "The cat sat on the mat.",
    "The animal and the street": "The animal didn't cross the street because it was too tired.",
    "River bank": "We sat on the bank of the river.",
    "Money bank": "She put the money in the bank.",
    "Shakespeare": "ROMEO: But, soft! what light through yonder window breaks?",
}
DEFAULT_SENTENCE = PRESETS["Bear country"]
TEMPERATURE_RANGE = (0.05, 5.0)
KEYS = ("model", "sentence", "layer", "head", "temperature", "tau_every_layer")


@dataclass(frozen=True)
class State:
    model: str
    sentence: str
    layer: int
    head: int
    temperature: float
    tau_every_layer: bool  # τ divides every head's scores in a forward pass, not only the weights shown

    @property
    def key(self) -> TraceKey:
        """The key of the sidebar's trace: its sentence through its model, with τ on every head's weights shown (the
        model runs as trained: a τ move runs nothing), or, τ in every layer, a forward pass at τ."""
        if self.tau_every_layer:
            return TraceKey(self.model, self.sentence, Interventions(temperature=float(self.temperature)))
        return TraceKey(self.model, self.sentence, tau=float(self.temperature))

    @property
    def tau_on_weights_only(self) -> bool:
        """τ ≠ 1 reshapes the attention weights shown, and the model runs as trained."""
        return self.temperature != 1 and not self.tau_every_layer


BUNDLED_MODEL = "shakespeare-gpt"


def _loadable(name: str) -> str:
    """`name` when it loads; otherwise the bundled model, with the reason shown
    (a damaged file must not stop the app)."""
    try:
        get_model(name)
        return name
    except ModelLoadError as err:
        st.error(f"The model {name} could not be loaded, so the bundled model is shown instead. {err}")
        return BUNDLED_MODEL


def _clean(raw: dict) -> dict:
    """Validated values; anything missing or invalid falls back to its default."""
    out = {
        "model": default_model(model_choices()),
        "sentence": DEFAULT_SENTENCE,
        "layer": 0,
        "head": 0,
        "temperature": 1.0,
    }
    out["tau_every_layer"] = str(raw.get("tau_every_layer")) == "True"  # the URL holds str(bool)
    if raw.get("model") in model_choices():
        out["model"] = raw["model"]
    out["model"] = _loadable(out["model"])
    if isinstance(raw.get("sentence"), str):
        out["sentence"] = raw["sentence"][:MAX_CHARS]
    cfg = get_model(out["model"]).cfg
    for key, top in (("layer", cfg.n_layer - 1), ("head", cfg.n_head - 1)):
        try:
            out[key] = min(max(int(raw.get(key, 0)), 0), top)
        except (TypeError, ValueError):
            pass
    try:
        t = float(raw.get("temperature", 1.0))
        if math.isfinite(t):
            out["temperature"] = min(max(t, TEMPERATURE_RANGE[0]), TEMPERATURE_RANGE[1])
    except (TypeError, ValueError):
        pass
    return out


def _init() -> None:
    """First run of a session, or the run that opened a teacher's view (ui/live/panel.py): take the state from the
    query string."""
    if "atlas_model" not in st.session_state:
        for key, value in _clean(st.query_params.to_dict()).items():
            st.session_state["atlas_" + key] = value


# Each value has two controls, the sidebar's ("w_…") and the bar's (presenter.BAR_PREFIX); a run that sets one from
# the other reaches the browser only when it ends. A request sent before then carries that control's older value (the
# one the browser still shows): no move of the user's, and taking it would undo the move just made with the other
# control (fast key presses under load did: head 1, 2, 3, 4 ended on 1). STALE holds, for each control the script has
# set, the values the browser may still send back (what it showed, and each value set since), with the time of the
# last set; they count as stale for presenter.STALE_S.
STALE = "atlas_stale"


# The prefixes of the value controls (sentence, layer, head, τ) the last run drew: "w_" the sidebar's, BAR_PREFIX the
# bar's. A text box that the browser drops (the bar's as a window widens past presenter.NARROW_PX, the sidebar's as it
# narrows, both when a student starts following a teacher) sends what it holds with the next request. That is no move
# of the user's: taken, an empty box blanked the sentence, and a student's box put their sentence over the teacher's.
DRAWN = "atlas_drawn"


def _copy(key: str, prefix: str) -> None:
    """Take the control's value (prefix + key) as the shared one, unless it is stale (STALE) or it is a value control
    the last run did not draw (DRAWN; the model's select box is drawn apart from them, by _model_control)."""
    if key != "model" and prefix not in st.session_state.get(DRAWN, (prefix,)):
        return
    name = prefix + key
    value, (old, since) = st.session_state[name], st.session_state.get(STALE, {}).get(name, ((), 0.0))
    if value not in old or time.monotonic() - since > presenter.STALE_S:
        st.session_state["atlas_" + key] = value


def _apply_preset(prefix: str) -> None:
    choice = st.session_state[prefix + "preset"]
    if choice in PRESETS:
        st.session_state["atlas_sentence"] = PRESETS[choice]


def _widget(key: str, prefix: str) -> dict:
    """Arguments that bind a widget (key prefix + key) to the persistent value `key`. The widget's value is set only
    when it differs, or when the run opens the page (the browser's new controls hold no value): a value set by the
    script is sent to the browser, which moves the control to it, undoing a key press made on that control while
    this run was on its way."""
    name, value, stale = prefix + key, st.session_state["atlas_" + key], st.session_state.setdefault(STALE, {})
    if name in st.session_state and st.session_state[name] == value and not navigation.opened():
        stale.pop(name, None)  # the browser shows the value
    else:
        old, _ = stale.get(name, ((), 0.0))
        stale[name] = ((*old, st.session_state.get(name), value), time.monotonic())
        st.session_state[name] = value
    return {"key": prefix + key, "on_change": _copy, "args": (key, prefix)}


def current() -> State:
    """The shared state, read from the address if nothing has set it yet (a run that opened a teacher's view)."""
    _init()
    return State(*(st.session_state["atlas_" + k] for k in KEYS))


def controls_place() -> str:
    """Where a reader finds the layer, head and τ controls, for a page's words: in the sidebar, above the page (a
    screen at most presenter.NARROW_PX wide: ui/widths.side_needed), or nowhere, set by the teacher (a following
    student's page: navigation.led)."""
    if navigation.led():
        return "set by the teacher"
    return "sidebar" if widths.side_needed() else "above the page"


def _model_control() -> None:
    model_help = (
        "Real pretrained models first, then the two small bundled ones, "
        "then any model added on this server (README: Other models)."
    )
    st.selectbox("Model", model_choices(), help=model_help, **_widget("model", "w_"))
    if st.session_state["atlas_model"] in REAL_MODELS:
        st.caption(REAL_MODELS[st.session_state["atlas_model"]].title)
    for hint in missing_models():
        st.caption(f"A real model is not installed. To add it: `{hint}`")


def _preset_control(prefix: str, box) -> None:
    """The preset sentences, in the container `box`: choosing one sets the shared sentence."""
    box.selectbox(
        "Preset sentences",
        ["(choose)", *PRESETS],
        key=prefix + "preset",
        on_change=_apply_preset,
        args=(prefix,),
        help="Sentences from the lecture: try the four 'bear' ones.",
    )


def _value_controls(prefix: str, where: tuple, cfg, compact: bool) -> None:
    """The sentence, layer, head and τ controls (τ's slider and its switch "τ in every layer"), bound to the shared
    state, drawn in the four containers `where`."""
    sentence, layer, head, tau = where
    sentence.text_area(
        "Sentence",
        max_chars=MAX_CHARS,
        height=68 if compact else 90,
        help=f"Any text; the model reads the first {token_limit(cfg)} tokens.",
        **_widget("sentence", prefix),
    )
    pickers = (
        (layer, "layer", cfg.n_layer - 1, "Layer", "Which transformer block to look at (0 = the first)."),
        (head, "head", cfg.n_head - 1, "Head", "Which attention head of that layer."),
    )
    # A slider is given its bound value as default: without one, Streamlit reads the whole session state on each
    # run to learn whether it is a range slider.
    for box, key, top, label, text in pickers:
        if top > 0:
            box.slider(label, 0, top, value=st.session_state["atlas_" + key], help=text, **_widget(key, prefix))
        else:  # a slider needs two values
            box.caption(f"{label} 0 (the model has only one)")
    tau_help = (
        "Divides the scaled scores before softmax: τ < 1 sharpens, τ > 1 flattens; 1 = as trained. It reshapes the "
        "attention weights shown, each head's from its own scores, and the rest of the model runs as trained (no new "
        "forward pass), unless τ in every layer is on."
    )
    tau.slider(
        "Attention temperature τ",
        *TEMPERATURE_RANGE,
        value=st.session_state["atlas_temperature"],
        step=0.05,
        help=tau_help,
        **_widget("temperature", prefix),
    )
    every_help = (
        "On: the whole model runs again with τ in every head of every layer, so later layers, the vectors and the "
        "prediction change too; each τ then takes a forward pass (a moment on a real model). Off: τ reshapes just the "
        "attention weights shown."
    )
    tau.toggle("τ in every layer", help=every_help, **_widget("tau_every_layer", prefix))


def side_head() -> None:
    """The sidebar's model and preset controls, drawn by the router (navigation.run) before the page, once a whole run:
    a move that runs the page alone (every other control's) leaves them as they are, two select boxes and a caption
    fewer to draw. Choosing a model or a preset runs it all. A page that follows a teacher draws neither."""
    _init()
    if not navigation.led():
        _model_control()
        _preset_control("w_", st)


def sidebar() -> State:
    """Draw the shared controls and return the current state. They sit in the sidebar and, bound to the same state, in
    a bar above the page that shows on a narrow screen (where the sidebar starts closed) and in presenter view. Once
    the browser has said its screen is wider, the bar's controls are not drawn (ui/widths.bar_wanted): 13 messages
    fewer a run; once it has said its screen is at most presenter.NARROW_PX wide, the sidebar keeps only the presets
    (ui/widths.side_wanted). A page that follows a teacher (navigation.led) draws none of them: the teacher's view sets
    the state, and the class's bar says it. Under the router, the model and preset controls and the page's script are
    the router's (side_head, page_script.mount); a page run on its own (as in tests) draws them here."""
    navigation.take_over()
    _init()
    presenter.follow()
    presenting = presenter.on()
    ours = not navigation.led()
    alone = navigation.current() is None  # no router: this page draws the whole sidebar
    if alone:
        with st.sidebar:
            side_head()
    # The model may have changed: keep layer and head inside it.
    fixed = _clean({k: st.session_state["atlas_" + k] for k in KEYS})
    for k in ("layer", "head"):
        st.session_state["atlas_" + k] = fixed[k]
    cfg = get_model(fixed["model"]).cfg
    with st.sidebar:
        # Kept in its place when empty, as the bar below (a screen at most presenter.NARROW_PX wide shows the bar)
        with st.container(key="atlas_side_controls"):
            if side := widths.side_wanted() and ours:
                _value_controls("w_", (st,) * 4, cfg, compact=False)
    presenter.style(presenting)
    # The container always, so that what follows keeps its place in the page (a browser keeps the focus and a key
    # press on a control only if the control stays where it was); its controls not on a screen its CSS hides them on.
    with st.container(key=presenter.BAR_KEY):
        if bar := widths.bar_wanted(presenting) and ours:
            preset, *where, keys = st.columns([2.3, 3.4, 1.4, 1.4, 2, 2.3], vertical_alignment="bottom")
            _preset_control(presenter.BAR_PREFIX, preset)
            _value_controls(presenter.BAR_PREFIX, where, cfg, compact=True)
            if presenting:
                with keys:
                    presenter.step_buttons()
    st.session_state[DRAWN] = tuple(p for p, drawn in (("w_", side), (presenter.BAR_PREFIX, bar)) if drawn)
    with st.sidebar:
        presenter.toggle()
        export.sidebar()
        if alone:
            page_script.mount()
    state = current()
    # Only what changed, in one message: each write sends the whole address as the server last knew it, and the
    # server's copy of the pages' own controls (bind="query-params", which the browser writes itself) is not
    # refreshed between runs, so a write on every run put an older value of a control just moved back in the address
    # (it lagged a step behind fast key presses). Not from_dict: it would clear the pages' own parameters.
    if changed := {k: str(v) for k, v in vars(state).items() if st.query_params.get(k) != str(v)}:
        st.query_params.update(changed)
    return state
