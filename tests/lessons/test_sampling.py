"""lessons.sampling: temperature, top-k / top-p over the full vocabulary, inverse-CDF draws, seeded generation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lessons.sampling import (
    GREEDY_BELOW,
    actual_next,
    actual_next_note,
    distribution,
    distribution_rows,
    draw,
    generate,
    probabilities,
    reading,
    sample_next,
    step_generator,
    timeline_rows,
)
from tests.conftest import CORPUS
from transformer import Interventions, ModelConfig, TraceInputError, run_trace


def reference(logits: np.ndarray, T: float, k: int, p: float) -> tuple[np.ndarray, np.ndarray]:
    """Independent reference: (softmax(z/T), filtered). Sort with numpy, cumulative sum, keep the
    top k ∩ the nucleus, renormalise."""
    z = np.asarray(logits, dtype=np.float64) / T
    q = np.exp(z - z.max())
    q /= q.sum()
    order = np.argsort(-q, kind="stable")
    keep = np.zeros(len(q), dtype=bool)
    keep[order[: (k if k > 0 else len(q))]] = True
    if p < 1:
        reached = np.cumsum(q[order]) >= p
        n_p = int(np.argmax(reached)) + 1 if reached.any() else len(q)
        nucleus = np.zeros(len(q), dtype=bool)
        nucleus[order[:n_p]] = True
        keep &= nucleus
    out = np.where(keep, q, 0.0)
    return q, out / out.sum()


@pytest.fixture(scope="module")
def logits() -> np.ndarray:
    """A full-size row of logits (V = 4096), spread like a trained model's."""
    return np.random.default_rng(0).normal(scale=3.0, size=4096).astype(np.float32)


@pytest.mark.parametrize("T", [1.0, 0.3, 2.5])
@pytest.mark.parametrize(
    ("k", "p"),
    [
        (0, 1.0), (1, 1.0), (40, 1.0), (4096, 1.0), (10_000, 1.0), (0, 0.9), (0, 0.5), (0, 0.0), (0, 0.999), (50, 0.9),
        (3, 0.99), (500, 0.2),
    ],
)
def test_top_k_top_p_equal_the_reference(logits, T, k, p):
    d = distribution(logits, T, k, p)
    q, want = reference(logits, T, k, p)
    np.testing.assert_allclose(d.probs, q, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(d.filtered, want, rtol=1e-12, atol=1e-300)
    assert d.n_kept == np.count_nonzero(want) >= 1
    assert set(d.order[: d.n_kept].tolist()) == set(np.flatnonzero(want).tolist())
    assert d.filtered.sum() == pytest.approx(1.0)
    assert d.kept_mass == pytest.approx(q[want > 0].sum())


def test_top_p_keeps_the_smallest_set_reaching_p():
    probs = np.array([0.05, 0.5, 0.15, 0.3])  # sorted: 0.5, 0.3, 0.15, 0.05
    logits = np.log(probs)
    assert distribution(logits, 1.0, 0, 0.49).n_kept == 1
    assert distribution(logits, 1.0, 0, 0.51).n_kept == 2  # 0.5 < 0.51 ≤ 0.5 + 0.3
    assert distribution(logits, 1.0, 0, 0.81).n_kept == 3
    assert distribution(logits, 1.0, 0, 0.96).n_kept == 4
    assert distribution(logits, 1.0, 0, 0.0).n_kept == 1  # always at least one
    d = distribution(logits, 1.0, 0, 0.81)
    np.testing.assert_allclose(d.filtered, [0, 0.5 / 0.95, 0.15 / 0.95, 0.3 / 0.95])
    np.testing.assert_array_equal(d.order, [1, 3, 2, 0])
    # top-k and top-p together: the intersection, both over the full vocabulary
    assert distribution(logits, 1.0, 2, 0.81).n_kept == 2
    assert distribution(logits, 1.0, 3, 0.51).n_kept == 2


def test_temperature_and_greedy(logits):
    z = logits.astype(np.float64)
    for T in (0.05, 1.0, 3.0):
        want = np.exp(z / T - (z / T).max())
        np.testing.assert_allclose(probabilities(logits, T), want / want.sum(), rtol=1e-10)
    for T in (0.0, GREEDY_BELOW / 2):  # greedy: the limit T → 0, all mass on the largest logit
        p = probabilities(logits, T)
        assert p[np.argmax(z)] == 1.0 and p.sum() == 1.0
    # lower T sharpens, higher flattens
    assert probabilities(logits, 0.5).max() > probabilities(logits, 1.0).max() > probabilities(logits, 2.0).max()


def test_draw_is_inverse_cdf():
    d = distribution(np.log(np.array([0.1, 0.6, 0.3])), 1.0)  # order 1, 2, 0; cumulative 0.6, 0.9, 1.0
    assert [draw(d, u) for u in (0.0, 0.59, 0.61, 0.89, 0.91, 0.999999)] == [1, 1, 2, 2, 0, 0]
    # a dropped token is never drawn, whatever u
    d = distribution(np.log(np.array([0.1, 0.6, 0.3])), 1.0, top_k=2)
    assert {draw(d, u) for u in np.linspace(0, 0.999999, 200)} == {1, 2}
    # equal logits (repeated values): ties go to the lower id first
    d = distribution(np.zeros(4), 1.0)
    assert [draw(d, u) for u in (0.1, 0.3, 0.6, 0.9)] == [0, 1, 2, 3]


def test_sample_next_frequencies_and_seed():
    logits = np.log(np.array([0.05, 0.4, 0.1, 0.25, 0.2]))
    gen = torch.Generator().manual_seed(0)
    draws = [sample_next(logits, 1.0, 3, 1.0, gen)[0] for _ in range(4000)]
    _, want = reference(logits, 1.0, 3, 1.0)
    freq = np.bincount(draws, minlength=5) / len(draws)
    assert set(draws) == {1, 3, 4}  # only the top 3
    np.testing.assert_allclose(freq, want, atol=0.03)
    # the same seed gives the same draws; u is reported and picks the token
    a = [sample_next(logits, 1.0, 0, 1.0, torch.Generator().manual_seed(7)) for _ in range(3)]
    assert len({(t, u) for t, _, u in a}) == 1
    tok, d, u = a[0]
    assert tok == draw(d, u)
    # greedy flag: always the most probable, even at T = 1
    assert {sample_next(logits, 1.0, 0, 1.0, gen, greedy=True)[0] for _ in range(20)} == {1}


def test_step_generators_differ_by_seed_and_position():
    u = lambda s, pos: float(torch.rand((), generator=step_generator(s, pos), dtype=torch.float64))  # noqa: E731
    assert u(3, 10) == u(3, 10)
    assert len({u(s, pos) for s in range(3) for pos in range(3)}) == 9


def test_generate_is_reproducible(tiny_model, tokenizer):
    text = "the cat and the dog"
    kw = {"temperature": 1.2, "top_k": 0, "top_p": 1.0}
    a = generate(tiny_model, tokenizer, text, 12, seed=0, **kw)
    b = generate(tiny_model, tokenizer, text, 12, seed=0, **kw)
    c = generate(tiny_model, tokenizer, text, 12, seed=1, **kw)
    assert len(a.steps) == 12 and a.ids == b.ids and a.steps == b.steps
    prompt = tuple(tokenizer.encode(text).ids)
    assert a.prompt_ids == c.prompt_ids == prompt and a.ids[: len(prompt)] == prompt
    assert a.ids != c.ids  # checked: seeds 0 and 1 differ at 11 of the 12 steps
    # one token at a time = N at once; cutting back and continuing replays the same tokens
    one = generate(tiny_model, tokenizer, text, 0, seed=0, **kw)
    for _ in range(12):
        one = generate(tiny_model, tokenizer, text, 1, seed=0, previous=one.steps, **kw)
    assert one.steps == a.steps
    again = generate(tiny_model, tokenizer, text, 7, seed=0, previous=a.cut(5).steps, **kw)
    assert again.steps == a.steps
    assert a.text_at(0) == text and a.text_at(12) == text + tokenizer.decode([s.id for s in a.steps])


def test_generate_records_the_model_distribution(tiny_model, tokenizer):
    """Each step's numbers equal softmax(z/T) of a fresh trace of the text so far, filtered by the reference."""
    g = generate(tiny_model, tokenizer, "To be, or not", 6, temperature=0.8, top_k=20, top_p=0.9, seed=3)
    assert len(g.steps) == 6
    for i, s in enumerate(g.steps):
        ids = g.ids[: len(g.prompt_ids) + i]
        with torch.inference_mode():
            z = tiny_model(torch.tensor([ids]))[0, -1].numpy()
        q, want = reference(z, 0.8, 20, 0.9)
        assert s.position == len(ids)
        assert s.prob == pytest.approx(q[s.id], rel=1e-5) and s.chosen_prob == pytest.approx(want[s.id], rel=1e-5)
        assert want[s.id] > 0  # only a kept token is ever drawn
        top = np.argsort(-q, kind="stable")[: len(s.top)]
        assert [c.id for c in s.top] == top.tolist()
        np.testing.assert_allclose([c.prob for c in s.top], q[top], rtol=1e-5)
        np.testing.assert_allclose([c.filtered for c in s.top], want[top], rtol=1e-5, atol=1e-12)
        assert s.label == tokenizer.vocab_labels()[s.id]


def test_greedy_takes_the_argmax_and_repeated_tokens_are_fine(tiny_model, tokenizer):
    g = generate(tiny_model, tokenizer, "the the the the", 10, seed=5, greedy=True)
    # T = 0 is greedy too, whatever the seed
    assert generate(tiny_model, tokenizer, "the the the the", 10, temperature=0.0, seed=99).ids == g.ids
    assert len(g.steps) == 10
    for i, s in enumerate(g.steps):
        tr_ids = g.ids[: len(g.prompt_ids) + i]
        with torch.inference_mode():
            assert s.id == int(tiny_model(torch.tensor([tr_ids]))[0, -1].argmax())
        assert s.chosen_prob == 1.0
    assert len(set(g.ids)) < len(g.ids)  # the prompt repeats "the"


def test_generate_stops_at_the_context(tiny_model, tokenizer, tiny_cfg):
    text = CORPUS.read_text(encoding="utf-8")[:2000]
    enc = tokenizer.encode(text)
    n_ctx = tiny_cfg.n_ctx
    near = text[: enc.offsets[n_ctx - 4][1]]  # n_ctx − 3 tokens
    calls = []
    g = generate(
        tiny_model, tokenizer, near, 10, seed=0, on_step=lambda done, total, s: calls.append((done, total, s.id))
    )
    assert len(g.steps) == 3 and len(g.ids) == n_ctx and g.at_context
    assert calls == [(i + 1, 3, s.id) for i, s in enumerate(g.steps)]
    assert generate(tiny_model, tokenizer, near, 10, seed=0, previous=g.steps).steps == g.steps  # nothing more fits
    long = generate(tiny_model, tokenizer, text, 5, seed=0)  # longer than the context: cut, nothing generated
    assert long.steps == () and long.at_context and len(long.prompt_ids) == n_ctx
    short = generate(tiny_model, tokenizer, "a", 2, seed=0)
    assert not short.at_context and len(short.steps) == 2
    assert g.cut(1).at_context is False


def test_generate_uses_the_interventions(tiny_model, tokenizer):
    iv = Interventions(temperature=0.3)
    g = generate(tiny_model, tokenizer, "the cat sat", 1, seed=0, interventions=iv)
    z = run_trace(tiny_model, tokenizer, "the cat sat", iv)["logits"][-1]
    assert g.steps[0].prob == pytest.approx(reference(z, 1.0, 0, 1.0)[0][g.steps[0].id], rel=1e-5)


@pytest.mark.parametrize("text", ["", "   \n"])
def test_generate_rejects_empty_text(tiny_model, tokenizer, text):
    with pytest.raises(TraceInputError):
        generate(tiny_model, tokenizer, text, 3)


def test_table_rows(logits, tiny_model, tokenizer):
    dist = distribution(logits, 0.7, 0, 0.9)
    labels = [f"t{i}" for i in range(len(logits))]
    rows = distribution_rows(dist, logits, labels, 5)
    top = np.argsort(-logits, kind="stable")[:5]  # softmax keeps the logits' order
    assert rows["id"].tolist() == top.tolist() and rows["token"] == [f"t{i}" for i in top]
    np.testing.assert_array_equal(rows["logit z"], logits[top])
    np.testing.assert_allclose(rows["p"], dist.probs[top])
    np.testing.assert_allclose(rows["p′"], dist.filtered[top])
    third = int(top[2])
    assert actual_next(dist, third) == (pytest.approx(dist.probs[third]), 3, True)
    last = int(np.argmin(logits))
    assert actual_next(dist, last) == (pytest.approx(dist.probs[last]), len(logits), False)
    gen = generate(tiny_model, tokenizer, "the cat", 3, seed=1)
    table = timeline_rows(gen)
    assert [r["step"] for r in table] == [1, 2, 3] and [r["id"] for r in table] == [s.id for s in gen.steps]
    top = gen.steps[0].top[0]
    assert table[0]["top candidates"].startswith(f"{top.label} {100 * top.prob:.1f}%")  # the top candidate: ≥ 0.1 %


# ---- the Next token page's words ----


def test_actual_next_note_by_hand():
    # softmax(2, 1, 0, −1): e^0 / (e² + e¹ + e⁰ + e⁻¹) = 1 / 11.475 = 0.0871 for id 2, rank 3; top-2 drops it
    dist = distribution(np.array([2.0, 1.0, 0.0, -1.0]), 1.0, top_k=2)
    assert (
        actual_next_note(dist, 2, 5)
        == "The token that really follows (position 5) has p = 8.7%, rank 3 of 4: dropped by the filters."
    )
    assert actual_next_note(distribution(np.array([2.0, 1.0, 0.0, -1.0])), 0, 1).endswith("rank 1 of 4: kept.")


def test_reading_names_the_final_norm_and_the_unembedding():
    llama = reading(
        ModelConfig(family="llama", vocab_size=49152, pos_encoding="rotary", activation="silu"), "smollm2-135m"
    )
    assert (
        "a final RMSNorm, each position" in llama.intro
        and "(49,152 **logits**: in this model W_U is W_E transposed)" in llama.intro
    )
    assert llama.lens.startswith("The final RMSNorm and W_U normally read only the **last** block's output.")
    gpt = reading(ModelConfig(vocab_size=65, tie_embeddings=False), "shakespeare-gpt")
    assert (
        "a final LayerNorm" in gpt.intro
        and "(65 **logits**)" in gpt.intro
        and gpt.no_head.startswith("**shakespeare-gpt is an encoder")
    )
