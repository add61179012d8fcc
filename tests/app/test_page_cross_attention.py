"""The Cross-attention page: every figure equals the translator's trace; every control changes
what is shown; bad input is handled."""

from __future__ import annotations

import numpy as np
import pytest

from tests.apptest_utils import EACH_BAD_INPUT, array, assert_ok, chart_titled, charts, page_path, run_page, texts
from tests.apptest_utils import chart_z as z
from transformer import decoding
from transformer.data import phrases as td
from transformer.families.seq2seq import Seq2SeqInterventions
from transformer.loading import BUNDLED_TRANSLATOR, LoadedModel, get_translator

PAGE = page_path("12_Cross_attention")
DEFAULT = "the european economic area"
REPEATED = "the cat sees the dog"  # "the" twice in the source; "le" twice in the French


@pytest.fixture(scope="module")
def lt() -> LoadedModel:
    return get_translator(BUNDLED_TRANSLATOR)


def translate(lt, phrase=DEFAULT, **iv) -> decoding.TranslationTrace:
    return decoding.translate(lt.model, lt.tokenizer, phrase.split(), Seq2SeqInterventions(**iv))


def agreement(pattern: np.ndarray, gold, n: int) -> np.ndarray:
    """Independent recomputation: per head, the fraction of French words whose argmax source word is gold-linked."""
    links = {t: s for s, t in gold if t < n}
    return np.array([np.mean([pattern[h, t].argmax() == s for t, s in links.items()]) for h in range(pattern.shape[0])])


def set_phrase(at, phrase: str):
    at.text_input(key="xattn_phrase").set_value(phrase).run()
    assert_ok(at)
    return at


def test_default_page_shows_the_trace(lt):
    at = run_page(PAGE)
    assert_ok(at)
    tr = translate(lt)
    L = lt.cfg.n_layer - 1
    ref = td.reference(DEFAULT.split())
    assert tr.output == ref.target  # the trained translator gets the classic example right
    assert [c.value for c in at.code][:2] == [DEFAULT, "la zone économique européenne"]
    cross = np.stack([tr[f"decoder.blocks.{L}.cross_attn.hook_pattern"]]).mean((0, 1))
    fig = chart_titled(at, f"Cross-attention, layer {L}, mean of the heads")
    np.testing.assert_allclose(array(fig["data"][0]["z"]), cross, rtol=1e-6)
    assert (
        fig["layout"]["yaxis"]["ticktext"] == list(tr.written)
        and fig["layout"]["xaxis"]["ticktext"] == DEFAULT.split()
    )
    gold = fig["data"][1]  # the gold alignment, as open squares over the heatmap
    assert (
        sorted(zip(array(gold["x"]).astype(int).tolist(), array(gold["y"]).astype(int).tolist(), strict=True))
        == sorted(ref.alignment)
    )
    per_head = np.stack(
        [
            agreement(tr[f"decoder.blocks.{layer}.cross_attn.hook_pattern"], ref.alignment, 4)
            for layer in range(lt.cfg.n_layer)
        ]
    )
    np.testing.assert_allclose(z(at, "Agreement of every cross-attention head"), per_head, rtol=1e-6)
    assert at.metric[0].value == f"{agreement(cross[None], ref.alignment, 4)[0]:.0%}"
    assert not [c for c in charts(at) if "Q from" in str(c["layout"].get("title"))]  # Q, K, V on demand
    at.toggle(key="xattn_qkv").set_value(True).run()
    c = f"decoder.blocks.{L}.cross_attn."
    np.testing.assert_allclose(z(at, "Q from the decoder"), tr[c + "hook_q"][:, 0], rtol=1e-6)
    np.testing.assert_allclose(z(at, "K from the encoder"), tr[c + "hook_k"][:, 0], rtol=1e-6)
    np.testing.assert_allclose(z(at, "V from the encoder"), tr[c + "hook_v"][:, 0], rtol=1e-6)
    np.testing.assert_allclose(z(at, "Scores Q·Kᵀ"), tr[c + "hook_scores_scaled"][0], rtol=1e-6)
    assert not np.isnan(z(at, "Scores Q·Kᵀ")).any()  # cross-attention masks nothing
    np.testing.assert_allclose(
        z(at, "Encoder self-attention"), tr[f"encoder.blocks.{L}.attn.hook_pattern"].mean(0), rtol=1e-6
    )
    dec = z(at, "Decoder masked self-attention")
    T = len(tr.decoder_input)
    np.testing.assert_array_equal(np.isnan(dec), ~np.tril(np.ones((T, T), dtype=bool)))
    np.testing.assert_allclose(
        np.nan_to_num(dec), tr[f"decoder.blocks.{L}.attn.hook_pattern"].mean(0), rtol=1e-6, atol=1e-7
    )
    df = at.dataframe[0].value
    assert (
        df["writes"].tolist() == [s.word for s in tr.steps]
        and df["reads (last word)"].tolist() == [s.read for s in tr.steps]
    )
    np.testing.assert_allclose(df["probability"], [s.top[0][1] for s in tr.steps], rtol=1e-6)
    assert (
        [[part.rsplit(" ", 1)[0] for part in row.split(" · ")] for row in df["next best"]]
        == [[w for w, _ in s.top[1:]] for s in tr.steps]
    )
    assert "Same as the reference translation" in texts(at)


def test_layer_and_head_controls(lt):
    at = run_page(PAGE)
    tr = translate(lt)
    at.toggle(key="xattn_qkv").set_value(True).run()
    at.selectbox(key="xattn_layer").set_value(0).run()
    at.selectbox(key="xattn_head").set_value(2).run()
    assert_ok(at)
    np.testing.assert_allclose(
        z(at, "Cross-attention, layer 0, head 2"), tr["decoder.blocks.0.cross_attn.hook_pattern"][2], rtol=1e-6
    )
    np.testing.assert_allclose(
        z(at, "Q from the decoder, head 2"), tr["decoder.blocks.0.cross_attn.hook_q"][:, 2], rtol=1e-6
    )
    np.testing.assert_allclose(
        z(at, "Encoder self-attention, layer 0, head 2"), tr["encoder.blocks.0.attn.hook_pattern"][2], rtol=1e-6
    )
    ref = td.reference(DEFAULT.split())
    assert (
        at.metric[0].value
        == f"{agreement(tr['decoder.blocks.0.cross_attn.hook_pattern'][2:3], ref.alignment, 4)[0]:.0%}"
    )
    at.selectbox(key="xattn_layer").set_value("mean of all layers").run()
    stack = np.stack([tr[f"decoder.blocks.{layer}.cross_attn.hook_pattern"][2] for layer in range(lt.cfg.n_layer)])
    np.testing.assert_allclose(z(at, "Cross-attention, all layers, head 2"), stack.mean(0), rtol=1e-6)


def test_step_slider_follows_the_decoding(lt):
    at = run_page(PAGE)
    tr = translate(lt)
    L = lt.cfg.n_layer - 1
    cross = tr[f"decoder.blocks.{L}.cross_attn.hook_pattern"].mean(0)
    for step in (3, 1, len(tr.steps)):
        if at.slider(key="xattn_step").value != step:
            at.slider(key="xattn_step").set_value(step).run()
        assert_ok(at)
        s = tr.steps[step - 1]
        np.testing.assert_allclose(
            array(chart_titled(at, f"Step {step}: the most likely next words")["data"][0]["y"]),
            [p for _, p in s.top],
            rtol=1e-6,
        )
        np.testing.assert_allclose(
            array(chart_titled(at, f"Step {step}: cross-attention")["data"][0]["y"]), cross[step - 1], rtol=1e-6
        )
        assert f"the decoder writes **{s.word}**" in texts(at)


def test_examples_and_new_phrase_button(lt):
    at = run_page(PAGE)
    at.selectbox(key="xattn_preset").set_value("The big red car").run()
    assert_ok(at)
    assert at.text_input(key="xattn_phrase").value == "the big red car"
    np.testing.assert_allclose(
        z(at, "Encoder self-attention"),
        translate(lt, "the big red car")[f"encoder.blocks.{lt.cfg.n_layer - 1}.attn.hook_pattern"].mean(0),
        rtol=1e-6,
    )
    examples = td.test_pairs(100, lt.meta["data_seed"])
    for n in range(2):
        at.button(key="xattn_random").click().run()
        assert_ok(at)
        phrase = " ".join(examples[n].source)
        assert at.text_input(key="xattn_phrase").value == phrase and at.code[0].value == phrase
        assert at.code[1].value == td.french_text(translate(lt, phrase).output)


def test_unknown_words_are_flagged_with_suggestions():
    at = set_phrase(run_page(PAGE), "teh big red carr")
    warning = at.warning[0].value
    assert "`teh`" in warning and "`carr`" in warning and "did you mean `the`" in warning
    assert at.code[0].value == "big red"  # what the encoder reads
    at.button(key="xattn_fix").click().run()
    assert_ok(at)
    assert at.text_input(key="xattn_phrase").value == "the big red car" and not at.warning
    assert at.code[1].value == "la grande voiture rouge"


def test_phrase_outside_the_grammar_has_no_gold(lt):
    at = set_phrase(run_page(PAGE), "car the big")
    assert "does not fit the grammar of the phrases the translator learned from" in texts(at)
    fig = chart_titled(at, "Cross-attention")
    assert len(fig["data"]) == 1 and "Agreement" not in str([c["layout"].get("title") for c in charts(at)])
    np.testing.assert_allclose(
        array(fig["data"][0]["z"]),
        translate(lt, "car the big")[f"decoder.blocks.{lt.cfg.n_layer - 1}.cross_attn.hook_pattern"].mean(0),
        rtol=1e-6,
    )


def test_repeated_words_keep_their_rows(lt):
    at = set_phrase(run_page(PAGE), REPEATED)
    tr = translate(lt, REPEATED)
    enc = chart_titled(at, "Encoder self-attention")
    assert array(enc["data"][0]["z"]).shape == (5, 5) and enc["layout"]["xaxis"]["ticktext"] == REPEATED.split()
    fig = chart_titled(at, "Cross-attention")
    assert (
        array(fig["data"][0]["z"]).shape == (len(tr.written), 5)
        and fig["layout"]["yaxis"]["ticktext"] == list(tr.written)
    )


def test_interventions(lt):
    at = run_page(PAGE)
    L = lt.cfg.n_layer - 1
    at.toggle(key="xattn_causal").set_value(False).run()
    assert_ok(at)
    open_ = translate(lt, causal=False)
    dec = z(at, "Decoder masked self-attention")
    assert not np.isnan(dec).any()
    np.testing.assert_allclose(dec, open_[f"decoder.blocks.{L}.attn.hook_pattern"].mean(0), rtol=1e-6)
    assert "Mask off" in texts(at)
    at.toggle(key="xattn_causal").set_value(True).run()
    at.multiselect(key="xattn_ablate").set_value([f"cross L{L} H0", "encoder L0 H1"]).run()
    assert_ok(at)
    cut = translate(lt, ablate=frozenset({("cross", L, 0), ("encoder", 0, 1)}))
    np.testing.assert_allclose(
        z(at, "Cross-attention"), cut[f"decoder.blocks.{L}.cross_attn.hook_pattern"].mean(0), rtol=1e-6
    )
    assert at.code[1].value == td.french_text(cut.output)
    at.multiselect(key="xattn_ablate").set_value([]).run()
    at.toggle(key="xattn_qkv").set_value(True).run()
    at.slider(key="w_temperature").set_value(2.0).run()
    assert_ok(at)
    hot = translate(lt, temperature=2.0)
    np.testing.assert_allclose(
        z(at, "Scores Q·Kᵀ"), hot[f"decoder.blocks.{L}.cross_attn.hook_scores_scaled"][0], rtol=1e-6
    )
    np.testing.assert_allclose(
        z(at, "Cross-attention"), hot[f"decoder.blocks.{L}.cross_attn.hook_pattern"].mean(0), rtol=1e-6
    )


def test_phrase_from_the_link():
    at = run_page(PAGE, phrase="the big red car")
    assert_ok(at)
    assert at.code[0].value == "the big red car" and at.code[1].value == "la grande voiture rouge"
    assert at.query_params["phrase"] in ("the big red car", ["the big red car"])  # kept in the link
    at = run_page(PAGE, phrase="<img src=x onerror=alert(1)> the cat")
    assert_ok(at)
    assert (
        at.code[0].value == "the cat"
        and "`onerror`" in at.warning[0].value
        and "<img" not in texts(at) + str(charts(at))
    )


@EACH_BAD_INPUT
def test_bad_inputs(name, text):
    at = set_phrase(run_page(PAGE), text)
    if not text.strip():
        assert not charts(at) and "empty" in at.info[0].value
        return
    if name in ("rtl", "script", "img"):  # no lexicon word at all
        assert not charts(at) and "None of these words" in texts(at)
    if name == "very_long":  # only "the" and "question" are lexicon words: they are read, cut to the context
        assert (
            "reads at most 32" in texts(at)
            and at.code[0].value == " ".join(["the", "question"] * 16)
            and "`to`" in at.warning[0].value
        )
    if name == "emoji":
        assert at.code[0].value == "bears" and "`love`" in at.warning[0].value and "skipped" in texts(at)
    for c in charts(at):  # user text reaches plotly only escaped (here: never, only lexicon words do)
        assert "<script" not in str(c) and "<img" not in str(c)
    assert "<script" not in texts(at) and "<img" not in texts(at)
