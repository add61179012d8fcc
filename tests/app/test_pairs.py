"""The section "Compare with a second sentence" (ui/pairs.py) through AppTest, on SmolLM2 and MiniLM: a lecture pair
gives the heads ranked by change and the best head with its control, numbers checked against the models' own traces;
on a decoder, a pair whose word differs after the token says that no head can see it and shows the encoder; bad second
sentences give a clear message. Also on Multi-head, Context and Encoder vs decoder."""

from __future__ import annotations

import numpy as np
import pytest

from tests.app.conftest import MINI, SMOL
from tests.apptest_utils import array, assert_ok, chart, charts_by_key, page_path, run_page, texts
from transformer import run_trace
from transformer.loading import missing_real_models

pytestmark = [
    pytest.mark.skipif(bool(missing_real_models()), reason="the real models are not installed"),
    pytest.mark.slow,
]

BIG = "The trophy doesn't fit in the suitcase because it is too big."
SMALL = "The trophy doesn't fit in the suitcase because it is too small."
TROPHY_PAIR = "Trophy: too big / too small"
AFTER = "comes after «␣it»: in this decoder no head can see it (the causal mask hides it)"
CONTROL = "Its control, the same head in sentence 2"


def opened(page: str, model: str | None = None, **query):
    """The page with the section unfolded."""
    at = run_page(page_path(page), **({"model": model} if model else {}), **query)
    assert_ok(at)
    at.session_state["pairs_open"] = True
    at.run()
    assert_ok(at)
    return at


def pick(at, preset: str):
    at.selectbox(key="pairs_preset").set_value(preset).run()
    assert_ok(at)
    return at


def rows(lm, text: str, position: int) -> np.ndarray:
    """Token `position`'s row in every head, from a fresh trace's recorded patterns: (n_layer, n_head, T)."""
    tr = run_trace(lm.model, lm.tokenizer, text)
    return np.stack([tr[f"blocks.{la}.attn.hook_pattern"][:, position] for la in range(tr.cfg.n_layer)])


@pytest.mark.parametrize("model", [SMOL, MINI])
def test_the_trophy_pair_shows_the_encoders_best_head_with_its_control(model, mini):
    """On SmolLM2 "big"/"small" follows "it": the section says no decoder head can see it and shows MiniLM; on
    MiniLM it shows MiniLM's own heads. Either way: the ranking, the best head for it → trophy and its control."""
    at = pick(opened("3_One_head", model), TROPHY_PAIR)
    assert at.session_state["atlas_sentence"] == BIG and at.text_area(key="pairs_second").value == SMALL
    said = texts(at)
    if model == SMOL:
        assert AFTER in said and "the largest change is 0" in said and "Here is the encoder, minilm-l6" in said
    else:
        assert "no head can see it" not in said
    labels = mini.tokenizer.encode(BIG).labels
    it, trophy = labels.index("it"), labels.index("trophy")
    pa, pb = rows(mini, BIG, it), rows(mini, SMALL, it)  # same tokens but "big"/"small": the slots are positions
    tv = 0.5 * np.abs(pa.astype(np.float64) - pb).sum(axis=-1)
    best = np.unravel_index(np.argmax(pa[..., trophy]), tv.shape)
    assert f"is **layer {best[0]}, head {best[1]}**: {pa[best][trophy]:.2f}" in said
    assert f"{CONTROL}: **{pb[best][trophy]:.2f}**" in said
    d = pb[best][trophy] - pa[best][trophy]  # "small": "it" is the suitcase, so "trophy" should lose weight
    verdict = "Yet the pair should" if abs(d) < 0.05 else "the way the pair expects" if d < 0 else "the wrong way"
    assert verdict in said
    top = np.unravel_index(np.argmax(tv), tv.shape)
    ranking = chart(at, "pairs_ranking")
    assert ranking["data"][0]["x"] is not None and array(ranking["data"][0]["y"])[0] == pytest.approx(tv[top], abs=1e-6)
    assert ranking["layout"]["xaxis"]["ticktext"][0] == f"{top[0]}.{top[1]}"
    np.testing.assert_allclose(array(ranking["data"][1]["y"])[0], abs(pb[top][trophy] - pa[top][trophy]), atol=1e-6)
    shown = chart(at, "pairs_rows_chart")  # the best head's rows by default, in both sentences
    assert at.radio(key="pairs_rows").value == "best"
    np.testing.assert_allclose(array(shown["data"][0]["y"]), pa[best], atol=1e-6)
    np.testing.assert_allclose(array(shown["data"][1]["y"]), pb[best], atol=1e-6)


def test_a_decoder_sees_a_word_before_the_token(smol):
    """SmolLM2, the last token "." after an inserted "big": no message, the ranking's top TV equals one computed from
    the traces' patterns (the shared tokens paired, "big" alone), the most changed head's rows shown."""
    a, b = "The cat sat on the mat.", "The big cat sat on the mat."
    at = opened("3_One_head", SMOL, sentence=a)
    at.text_area(key="pairs_second").set_value(b).run()
    assert_ok(at)
    assert "no head can see it" not in texts(at) and CONTROL not in texts(at)  # no target: no best head
    n = len(smol.tokenizer.encode(a))
    big = smol.tokenizer.encode(b).labels.index("␣big")
    pa, pb = rows(smol, a, n - 1).astype(np.float64), rows(smol, b, n)
    tv = 0.5 * (sum(np.abs(pa[..., i] - pb[..., i if i < big else i + 1]) for i in range(n)) + pb[..., big])
    top = np.unravel_index(np.argmax(tv), tv.shape)
    assert at.selectbox(key="pairs_token").value == n - 1
    assert array(chart(at, "pairs_ranking")["data"][0]["y"])[0] == pytest.approx(tv[top], abs=1e-6)
    assert at.radio(key="pairs_rows").value == "changed"
    assert f"Most changed: **layer {top[0]}, head {top[1]}**" in texts(at)


@pytest.mark.parametrize(
    "second,message",
    [
        ("", "Type a second sentence that differs"),
        ("   \n\t ", "The text holds only whitespace"),
        ("To be, or not to be, that is the question. " * 600, "the model reads its first 256"),
        ("<script>alert(1)</script> <img src=x onerror=alert(1)>.", None),
        ("Nothing in common", "has no counterpart in the second sentence"),  # the page's token is its last, "."
    ],
    ids=["empty", "whitespace", "very_long", "html", "no_counterpart"],
)
def test_a_bad_second_sentence_gives_a_clear_message(second, message):
    at = opened("3_One_head")  # the bundled model
    at.text_area(key="pairs_second").set_value(second).run()
    assert_ok(at)
    figs = charts_by_key(at)
    if message:
        assert message in texts(at)
    if second.strip() and "common" not in second:  # run: its tokens reach the charts escaped
        assert "pairs_ranking" in figs and "pairs_rows_chart" in figs
        assert "<script" not in str(figs) and "<img" not in str(figs)
    else:
        assert "pairs_ranking" not in figs


@pytest.mark.parametrize(
    "page,model,preset,after",
    [
        ("7_Multi_head", SMOL, "Animal: too tired / too wide", True),
        ("14_Encoder_vs_decoder", None, TROPHY_PAIR, True),
        ("10_Context", MINI, "Bank: river / money", False),
    ],
)
def test_the_section_on_the_other_pages(page, model, preset, after, mini):
    at = pick(opened(page, model), preset)
    said = texts(at)
    assert ("no head can see it" in said) == after
    assert "pairs_ranking" in charts_by_key(at) and "pairs_rows_chart" in charts_by_key(at)
    assert (CONTROL in said) == (preset != "Bank: river / money")  # a pair with a target: the best head's control
    if page == "10_Context":
        assert at.text_area(key="context_sentences").value.splitlines() == [
            "We sat on the bank of the river.",
            "She put the money in the bank.",
        ]
        bank = mini.tokenizer.encode("We sat on the bank of the river.").labels.index("bank")
        assert at.selectbox(key="pairs_token").value == bank
    if page == "14_Encoder_vs_decoder":
        assert at.radio(key="compare_source").value == "The sentence in the sidebar"
