"""The Masking page: masks drawn from the trace, the mask-off predictions, the padded batch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lessons.next_token import top_tokens
from lessons.words import percent
from tests import apptest_utils as u
from tests.apptest_utils import chart_z as z
from transformer import Interventions, run_trace
from ui import widths
from ui.state import DEFAULT_SENTENCE, PRESETS

PAGE = u.page_path("4_Masking")
REPEATED = "the cat and the dog and the bird"  # "␣the" and "␣and" twice
OTHER = "The cat sat."  # the page's default second sentence


def trace(lm, text=REPEATED, temperature=1.0, causal=True, head_temperature=()):
    iv = Interventions(temperature=temperature, causal=causal, head_temperature=head_temperature)
    return run_trace(lm.model, lm.tokenizer, text, iv)


def part(at, n: int):
    """Open part n's tab ("3 · Seeing the future" for 3); only the open part runs."""
    return u.open_tab(at, "masking_part", f"{n} ·")


def metrics(at) -> list[float]:
    return [float(m.value) for m in at.metric]


def test_causal_mask_and_scrubber(lm):
    at = u.run_page(PAGE, sentence=REPEATED)
    u.assert_ok(at)
    tr = trace(lm)
    T = len(tr.encoding)
    tril = np.tril(np.ones((T, T), dtype=bool))
    mask = z(at, "Causal mask")
    np.testing.assert_array_equal(~np.isnan(mask), tril)
    np.testing.assert_array_equal(mask[tril], 1)
    for pos in (3, T - 1, 0):
        if pos != at.slider(key="masking_pos").value:
            at.slider(key="masking_pos").set_value(pos).run()
        u.assert_ok(at)
        (rect,) = u.chart_titled(at, "Causal mask")["layout"]["shapes"]
        assert (rect["y0"], rect["y1"]) == (pos - 0.5, pos + 0.5)
        bars = u.array(u.chart_titled(at, f"Where position {pos} looks")["data"][0]["y"])
        np.testing.assert_allclose(bars, tr["blocks.0.attn.hook_pattern"][0, pos], rtol=1e-6)
        assert (bars[pos + 1 :] == 0).all()
        assert f"may see **{pos + 1}** token" in u.texts(at) and f"**{T - pos - 1}** later" in u.texts(at)
        assert at.text[0].value == tr.encoding.text[: tr.encoding.offsets[pos][1]]


def test_default_sentence_and_every_preset(lm):
    at = u.run_page(PAGE)
    u.assert_ok(at)
    for name, sentence in [(None, DEFAULT_SENTENCE), *PRESETS.items()]:
        if name:
            at.selectbox(key="w_preset").set_value(name).run()
            u.assert_ok(at)
        tr = trace(lm, sentence)
        T = len(tr.encoding)
        np.testing.assert_array_equal(~np.isnan(z(part(at, 1), "Causal mask")), np.tril(np.ones((T, T), dtype=bool)))
        masked = tr["blocks.0.attn.hook_scores_masked"][0]
        np.testing.assert_allclose(
            z(part(at, 2), "After the mask"), np.where(np.isneginf(masked), np.nan, masked), rtol=1e-6
        )
        assert part(at, 3).dataframe[0].value["token"].tolist() == list(tr.encoding.labels[: min(T, 8)])
        assert max(metrics(part(at, 4))) <= 1e-5


def test_scores_before_and_after_the_mask_follow_layer_head_temperature(lm):
    at = u.run_page(PAGE, sentence=REPEATED)
    at.slider(key="w_layer").set_value(1).run()
    at.slider(key="w_head").set_value(2).run()
    at.slider(key="w_temperature").set_value(0.5).run()
    a = "blocks.1.attn."
    # τ on the weights shown (layer 1's heads at τ alone, as the page reads them), then τ in every layer
    for every_layer, iv in ((False, {"head_temperature": ((1, None, 0.5),)}), (True, {"temperature": 0.5})):
        at.toggle(key="w_tau_every_layer").set_value(every_layer).run()
        u.assert_ok(part(at, 2))
        tr = trace(lm, **iv)
        masked = tr[a + "hook_scores_masked"][2]
        np.testing.assert_allclose(z(at, "Scores before the mask"), tr[a + "hook_scores_scaled"][2], rtol=1e-6)
        np.testing.assert_allclose(z(at, "After the mask"), np.where(np.isneginf(masked), np.nan, masked), rtol=1e-6)
        weights = np.where(np.isneginf(masked), np.nan, tr[a + "hook_pattern"][2])
        np.testing.assert_allclose(z(at, "After softmax"), weights, rtol=1e-6)
        # the scaled scores have the future filled in, the masked ones do not
        assert not np.isnan(z(at, "Scores before the mask")).any()
        assert np.isnan(z(at, "After the mask")).sum() == np.isneginf(masked).sum() > 0
        open_weights = trace(lm, causal=False, **iv)[a + "hook_pattern"][2]
        np.testing.assert_allclose(z(part(at, 3), "Weights without the mask, layer 1, head 2"), open_weights, rtol=1e-6)
        as_trained = "The predictions, with and without the mask: the model's as trained (τ = 1)"
        assert (as_trained in u.texts(at)) != every_layer


def test_future_table_equals_traces_with_and_without_the_mask(lm):
    at = part(u.run_page(PAGE, sentence=REPEATED), 3)
    u.assert_ok(at)
    with_mask, without = trace(lm), trace(lm, causal=False)
    vocab = lm.tokenizer.vocab_labels()
    labels, ids = with_mask.encoding.labels, with_mask.encoding.ids
    T = len(ids)
    df = at.dataframe[0].value
    assert len(df) == min(T, 8) and df["token"].tolist() == list(labels[: len(df)])  # repeated tokens keep their rows
    for i, row in df.iterrows():
        for m, tr in (("with", with_mask), ("without", without)):
            tops = top_tokens(tr["logits"][i], 3)
            assert row[f"top-3 {m} mask"] == " · ".join(f"{vocab[j]} {percent(p)}" for j, p in tops)
            if i + 1 < T:
                p = torch.softmax(torch.tensor(tr["logits"][i]), dim=-1)[ids[i + 1]].item()
                assert row[f"p(actual) {m} mask"] == percent(p)  # 2.7e-7 when a percentage would print 0.0%
    changed = int((with_mask["logits"].argmax(-1) != without["logits"].argmax(-1)).sum())
    assert f"changed at **{changed} of {T}** positions" in u.texts(at)
    at.slider(key="masking_rows").set_value(3).run()
    assert len(at.dataframe[0].value) == 3


def test_padded_batch(lm):
    at = part(u.run_page(PAGE, sentence=REPEATED), 4)
    u.assert_ok(at)
    n_a, n_b = len(trace(lm).encoding), len(trace(lm, OTHER).encoding)
    assert n_a > n_b
    real = z(at, "The batch")
    np.testing.assert_array_equal(~np.isnan(real), [np.arange(n_a) < n_a, np.arange(n_a) < n_b])
    cells = u.chart_titled(at, "The batch")["data"][0]["text"]
    assert cells[1][n_b:] == ["[pad]"] * (n_a - n_b) and cells[0] == list(trace(lm).encoding.labels)
    # B's mask in the batch, as the model used it: causal AND real key
    want = np.tril(np.ones((n_a, n_a), dtype=bool)) & (np.arange(n_a) < n_b)[None, :]
    np.testing.assert_array_equal(~np.isnan(z(at, "Mask of sentence B")), want)
    assert max(metrics(at)) <= 1e-5  # real tokens: batch logits = alone logits
    # encoder-style: no causal mask, only padding hidden
    at.toggle(key="masking_encoder").set_value(True).run()
    np.testing.assert_array_equal(
        ~np.isnan(z(at, "Mask of sentence B")), np.broadcast_to(np.arange(n_a) < n_b, (n_a, n_a))
    )
    assert max(metrics(at)) <= 1e-5
    # … and without the padding mask the padded sentence's outputs change
    at.toggle(key="masking_padmask").set_value(False).run()
    u.assert_ok(at)
    assert not np.isnan(z(at, "Mask of sentence B")).any()
    a, b = metrics(at)
    assert a <= 1e-5 and b > 1e-4 and "read the padding" in at.warning[0].value
    # causal mask back on: right padding is hidden by it anyway
    at.toggle(key="masking_encoder").set_value(False).run()
    assert max(metrics(at)) <= 1e-5 and "already hides it" in u.texts(at)


def test_on_a_phone_the_batch_has_one_column_per_text(lm):
    """On a phone's column (358 px) one position of ten side by side left ~30 px a cell, too little for a token: there
    the batch has one column per text and one row per position (figures.attention.padding_heatmap)."""
    at = u.run_page(PAGE, sentence=REPEATED)
    at.session_state[widths.KEY] = {"widths": {widths.SCREEN: 390.0, widths.MAIN: 358.0}}
    at = part(at, 4)
    u.assert_ok(at)
    n_a, n_b = len(trace(lm).encoding), len(trace(lm, OTHER).encoding)
    real = np.stack([np.arange(n_a) < n_a, np.arange(n_a) < n_b], axis=1)  # (positions, texts)
    np.testing.assert_array_equal(~np.isnan(z(at, "The batch")), real)
    a, b = zip(*u.chart_titled(at, "The batch")["data"][0]["text"], strict=True)
    assert list(a) == list(trace(lm).encoding.labels) and b[n_b:] == ("[pad]",) * (n_a - n_b)


@pytest.mark.parametrize(("chart_px", "by_column"), [(564.0, True), (1100.0, False)])
def test_a_batch_too_long_for_its_row_of_tokens_has_one_column_per_text(lm, chart_px, by_column):
    """(Masking · 4 on a 1,024 px laptop: 19 positions side by side in a 564 px chart wrote each token at 7 px.) Where
    one row per text would write its tokens under 9 px, the batch has one column per text, as on a phone."""
    sentence = "The hiking trail led us through bear country."  # 19 tokens on the bundled model
    at = u.run_page(PAGE, sentence=sentence)
    at.session_state[widths.KEY] = {"widths": {widths.SCREEN: 1024.0, "masking_batch": chart_px}}
    at = part(at, 4)
    u.assert_ok(at)
    n = len(trace(lm, sentence).encoding)
    assert n > 16
    assert z(at, "The batch").shape == ((n, 2) if by_column else (2, n))


def test_second_sentence_input(lm):
    at = part(u.run_page(PAGE, sentence="Hi"), 4)
    longer = "Now is the winter of our discontent made glorious summer"
    at.text_input(key="masking_other").set_value(longer).run()
    u.assert_ok(at)
    n = len(trace(lm, longer).encoding)
    assert z(at, "The batch").shape == (2, n) and u.chart_titled(at, "Mask of sentence A")
    at.text_input(key="masking_other").set_value("   ").run()
    u.assert_ok(at)
    assert "Second sentence" in u.texts(at) and "whitespace" in u.texts(at)
    at.text_input(key="masking_other").set_value("<script>alert(1)</script>").run()
    u.assert_ok(at)
    assert "<script" not in str(u.chart_titled(at, "The batch")["data"])
    assert (
        part(at, 1).get("plotly_chart")
        and part(at, 4).text_input(key="masking_other").value == "<script>alert(1)</script>"
    )  # kept while closed


def test_shorter_sentence_clamps_the_sliders():
    at = u.run_page(PAGE, sentence=REPEATED)
    at.slider(key="masking_pos").set_value(7).run()
    part(at, 3).slider(key="masking_rows").set_value(12).run()
    assert part(at, 1).slider(key="masking_pos").value == 7  # kept while its tab was closed
    at.text_area(key="w_sentence").set_value("Hi there").run()
    u.assert_ok(at)
    T = z(at, "Causal mask").shape[0]
    assert at.slider(key="masking_pos").value == T - 1
    assert part(at, 3).slider(key="masking_rows").value == 12 and len(at.dataframe[0].value) == T


@u.EACH_BAD_INPUT
def test_bad_inputs(name, text):
    if at := u.run_typed(PAGE, text):
        T = z(at, "Causal mask").shape[0]
        assert len(part(at, 3).dataframe[0].value) == min(T, 8)
        u.assert_bad_input_drawn(at, name, [c for _ in u.each_tab(at) for c in u.charts(at)], n_tokens=T)
