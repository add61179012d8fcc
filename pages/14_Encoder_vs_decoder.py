"""Encoder vs decoder, side by side: one sentence through a BERT encoder and a decoder; one word's attention, the head
that links it to another word, and the attention sinks of each."""

import os

import streamlit as st

import ui
from figures import compare as fcmp
from lessons import encoder_decoder as ed
from lessons.words import md
from transformer import TraceInputError
from transformer.loading import DEFAULT_MODEL_ENV, missing_real_models
from transformer.trace import token_limit
from ui import pairs
from ui.caches import compare as cached

state = ui.sidebar()
EXAMPLE, OWN = "The lecture's example", "The sentence in the sidebar"

st.title("↔️ Encoder vs decoder, side by side")
ui.explain(
    "An **encoder** (BERT) reads the whole sentence at once: every token may look at every other token, "
    "before and after it. A **decoder** (GPT, Llama) writes text one token at a time, so a token may look "
    "only at itself and the tokens before it. Here the same sentence goes through one model of each kind."
)
st.latex(
    r"\text{encoder: }\ \alpha_{ij} = \operatorname{softmax}_{j \in 1..T}(s_{ij}) "
    r"\qquad \text{decoder: }\ \alpha_{ij} = \operatorname{softmax}_{j \le i}(s_{ij})"
)
for hint in missing_real_models():
    st.info(f"A real pretrained model is not installed here: `{hint}` installs it (then reload the page).")
encoders, decoders = ui.models_of("bert"), ui.models_of("gpt", "llama")
with ui.folded("Models and sentence"):
    c1, c2 = st.columns(2)
    if encoders:
        enc_name = c1.selectbox(
            "Encoder",
            encoders,
            **ui.choice("compare_encoder", encoders, ed.ENCODER if ed.ENCODER in encoders else encoders[0]),
            format_func=ed.short_name,
        )
    else:
        enc_name = None
        c1.warning(
            "No encoder to compare with: this page needs MiniLM (all-MiniLM-L6-v2), "
            "installed as shown above. Until then it shows the decoder alone."
        )
    dec_name = c2.selectbox(
        "Decoder",
        decoders,
        **ui.choice("compare_decoder", decoders, ed.default_decoder(decoders, os.environ.get(DEFAULT_MODEL_ENV))),
        format_func=ed.short_name,
    )
    if ed.DECODER not in decoders:
        st.caption(
            "SmolLM2 is not installed: the decoder offered first is the bundled Shakespeare GPT, "
            "a small model whose heads are far less clear-cut."
        )
    source = st.radio(
        "Sentence", [EXAMPLE, OWN], horizontal=True, **ui.choice("compare_source", [EXAMPLE, OWN], EXAMPLE)
    )
text, cut = ed.clip(ed.EXAMPLE if source == EXAMPLE else state.sentence)
st.caption(f"«{md(text)}»")
if cut:
    st.warning(f"The text is long: this page compares its first {len(text)} characters (two models, every layer).")


def trace_of(key: ui.TraceKey):
    """The text through one model; stops the page with a message when the text cannot be run."""
    try:
        tr = ui.get_trace(key)
    except TraceInputError as err:
        st.info(f"{err} Type one in the sentence box, or choose the lecture's example.")
        st.stop()
    if tr.truncated:
        limit, name = token_limit(ui.get_model(key.model).cfg), ed.short_name(key.model)
        st.warning(f"{name} reads at most {limit} tokens here: words after its first {len(tr.encoding)} are left out.")
    return tr


CHOSEN = {"encoder": enc_name, "decoder": dec_name}
# the text through each model, with the sidebar's τ (in every layer, or on the weights shown)
KEYS = {kind: ui.TraceKey(name, text, state.key.iv, state.key.tau) for kind, name in CHOSEN.items() if name}
MODELS = {kind: (key.model, trace_of(key), kind == "decoder") for kind, key in KEYS.items()}  # (model, trace, causal)
found = ed.shared_words(text, [tr.encoding for _, tr, _ in MODELS.values()])
if len(found) < 2:
    st.info("This page follows one word to another: type a sentence with at least two words (letters or digits).")
    st.stop()
c1, c2 = st.columns(2)
word = c1.selectbox(
    "Word",
    found,
    format_func="{0[0]}: {0[1]}".format,
    **ui.choice("compare_word", found, next((f for f in found if f[1].lower() == "it"), found[-1])),
    help="The word whose attention we follow (the query).",
)
target = c2.selectbox(
    "Target word",
    found,
    format_func="{0[0]}: {0[1]}".format,
    **ui.choice("compare_target", found, next((f for f in found if f[1].lower() == "animal" and f != word), found[0])),
    help="The word we hope it looks at (the key).",
)
ui.explain(ed.tokens_text(word[1]))


def part_rows() -> None:
    for col, (kind, (name, tr, causal)) in zip(
        ui.stacking("compare_rows_row", ui.SIDE_BY_SIDE_PX).columns(2), MODELS.items(), strict=False
    ):
        cfg = ui.get_model(name).cfg
        grid, _ = cached.compare_grid(KEYS[kind], word[0], target[0])
        best = ed.best_head(grid)
        with col:
            st.subheader(f"{kind.capitalize()}: {md(ed.short_name(name))}")
            src, tgt = ed.pair_tokens(tr.encoding, text, word[0], target[0])
            ui.show_figure(
                fcmp.token_strip(tr.encoding.labels, src, tgt, f"{len(tr.encoding)} tokens"),
                key=f"compare_{kind}_tokens",
            )
            layer = st.slider(
                "Layer", 0, cfg.n_layer - 1, **ui.kept_within(f"compare_{kind}_layer", best[0], 0, cfg.n_layer - 1)
            )
            head = st.slider(
                "Head", 0, cfg.n_head - 1, **ui.kept_within(f"compare_{kind}_head", best[1], 0, cfg.n_head - 1)
            )
            st.button(
                f"Go to the best head (layer {best[0]}, head {best[1]})",
                on_click=st.session_state.update,
                args=({f"compare_{kind}_layer": best[0], f"compare_{kind}_head": best[1]},),
                key=f"compare_{kind}_best",
            )
            if not (causal and target[0] > word[0]):
                st.caption(best_control(tr, causal, grid))
            row = ed.row(tr, layer, head, src[-1])
            title = f"Weights of “{word[1]}” (token {src[-1]}), layer {layer}, head {head}"
            ui.show_figure(
                fcmp.row_bars(row, tr.encoding.labels, src[-1], tgt, causal, title), key=f"compare_{kind}_row"
            )
            st.caption(ed.row_text(row, src[-1], tgt, target[1], causal))


def part_best() -> None:
    pair = f"how much weight does “{md(word[1])}” put on “{md(target[1])}”?"
    st.markdown(f"Every head of every layer: {pair} The red box marks the largest.")
    columns = ui.stacking("compare_best_row", ui.SIDE_BY_SIDE_PX).columns(2)
    for col, (kind, (name, tr, causal)) in zip(columns, MODELS.items(), strict=False):
        grid, fig = cached.compare_grid(KEYS[kind], word[0], target[0])
        layer, head, w = ed.best_head(grid)
        with col:
            ui.show_figure(fig, key=f"compare_{kind}_grid")
            share = f"**{w:.2f}** of “{md(word[1])}”'s attention on “{md(target[1])}”"
            st.markdown(f"**{md(ed.short_name(name))}**: layer {layer}, head {head} puts {share}.")
            if causal and target[0] > word[0]:
                st.caption("The target comes after the word: a decoder cannot look at it, so every head gives it 0.")
            else:
                st.caption(best_control(tr, causal, grid))


def best_control(tr, causal: bool, grid) -> str:
    """The best head's controls (lessons.encoder_decoder.best_head_control) for one model's trace."""
    src, tgt = ed.pair_tokens(tr.encoding, text, word[0], target[0])
    visible = src[-1] + 1 if causal else len(tr.encoding)
    return ed.best_head_control(grid, len(tgt), visible, word[1], target[1])


def part_sinks() -> None:
    fig, sinks = cached.compare_sinks(tuple(KEYS.values()))
    if fig is None:
        st.info("The text is too short to measure: the decoder needs at least two tokens.")
        return
    ui.show_figure(fig, key="compare_sinks")
    st.markdown(ed.sinks_text([(name, causal) for name, _, causal in MODELS.values()], sinks))
    st.caption("A caveat: attention weights show where information flows, not why a model predicts what it does.")


ui.lazy_tabs(
    {
        "1 · One word's attention": part_rows, "2 · The head that links two words": part_best,
        "3 · Attention sinks": part_sinks,
    },
    "compare_part",
)
src, tgt = ed.pair_tokens(MODELS["decoder"][1].encoding, text, word[0], target[0])  # a second sentence, a word changed
pairs.compare(
    KEYS["decoder"], src[-1], *(st.session_state.get(f"compare_decoder_{k}", 0) for k in ("layer", "head")), tgt[-1],
    into={"atlas_sentence": "{first}", "compare_source": OWN},
)
