"""The sentences that state a result, on SmolLM2 through AppTest: each follows the numbers shown and says when the
expected effect is absent (Tokens' analogy, Multi-head's one-click switch-offs and their random control)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lessons.words import md, percent
from tests.app.conftest import SENTENCE, SMOL
from tests.apptest_utils import assert_ok, chart, open_tab, page_path, run_page, texts
from transformer import Interventions, run_trace
from transformer import head_scores as hs
from transformer.loading import missing_real_models

pytestmark = pytest.mark.skipif(bool(missing_real_models()), reason="the real models are not installed")


def brute_rank(smol, words: tuple[str, str, str], expected: str) -> tuple[list[str], int]:
    """Independently: the ranking of a − b + c over SmolLM2's W_E with every spelling of the three words left out
    (case, leading space, -s/-es), and the rank of the expected word's best spelling."""
    W = smol.model.W_E.detach().numpy().astype(np.float64)
    unit = W / np.linalg.norm(W, axis=1, keepdims=True)
    a, b, c = (smol.tokenizer.encode(" " + w).ids[0] for w in words)
    v = unit[a] - unit[b] + unit[c]
    cos = unit @ v / np.linalg.norm(v)
    text = [smol.tokenizer.decode([i]).strip().lower() for i in range(len(W))]
    spelt = {f"{w.lower()}{end}" for w in words for end in ("", "s", "es")}
    cos[[i for i, t in enumerate(text) if t in spelt] + [a, b, c]] = -np.inf
    best = max(cos[i] for i, t in enumerate(text) if t == expected.lower())
    labels = smol.tokenizer.vocab_labels()
    return [labels[i] for i in np.argsort(-cos)[:10]], 1 + int((cos > best).sum())


@pytest.mark.slow
def test_paris_france_italy_on_smollm2_leaves_paris_out_and_says_rome_is_not_first(smol):
    at = run_page(page_path("1_Tokens_and_embeddings"), model=SMOL, sentence=SENTENCE, tokens_part="6 · a − b + c")
    assert_ok(at)
    assert "the analogy **works** here (rank 1)" in texts(at)  # king − man + woman → queen, the default
    at.button(key="tokens_analogy_preset_Paris_France").click().run()
    assert_ok(at)
    assert [at.text_input(key=f"tokens_analogy_{n}").value for n in ("a", "b", "c", "expected")] == [
        "Paris", "France", "Italy", "Rome"
    ]
    top, rank = brute_rank(smol, ("Paris", "France", "Italy"), "Rome")
    bars = chart(at, "tokens_analogy")["data"][0]["text"]
    assert bars == top and not {"␣Paris", "Paris", "␣Italy", "␣France"} & set(bars)
    assert rank > 1  # measured: 19 (the nearest is ␣Milan)
    shown = texts(at)
    assert f"The nearest token to Paris − France \\+ Italy is **{top[0]}**" in shown
    assert f"the expected «Rome» is rank **{rank}**" in shown and "the analogy **does not work** here" in shown
    assert ("not in the top 10 listed" in shown) == (rank > 10)


def printed(text: str) -> float:
    """A probability as printed: "12.3%" → 0.123, "2.7e-7" → 2.7e-7."""
    return float(text.removesuffix("%")) / (100 if text.endswith("%") else 1)


def printed_effect(smol, heads: frozenset) -> tuple[str, str, str, str]:
    """Independently, through the engine's intervention: the share of probability moved by switching `heads` off and
    the top next token's probability before and after, as the page prints them."""
    before = run_trace(smol.model, smol.tokenizer, SENTENCE)["logits"][-1]
    after = run_trace(smol.model, smol.tokenizer, SENTENCE, Interventions(ablate=heads))["logits"][-1]
    p, q = (torch.softmax(torch.tensor(x, dtype=torch.float64), -1).numpy() for x in (before, after))
    top = int(p.argmax())
    return percent(0.5 * np.abs(p - q).sum()), smol.tokenizer.vocab_labels()[top], percent(p[top]), percent(q[top])


@pytest.mark.slow
def test_multihead_switches_off_the_labelled_heads_and_as_many_random_ones_on_smollm2(smol):
    at = open_tab(run_page(page_path("7_Multi_head"), model=SMOL, sentence=SENTENCE), "multihead_part", "5 ·")
    assert_ok(at)
    scores = hs.probe_scores(smol.model, smol.tokenizer)  # the badges' measure, made again here
    checked = 0
    demos = (("induction", "induction"), ("previous-token", "previous-token"), ("first-token (sink)", "sink"))
    for label, short in demos:
        labelled = frozenset((layer, head) for layer, head, _ in hs.heads_with(scores, label))
        if not labelled:
            assert at.button(key=f"multihead_demo_{short}").disabled
            continue
        at.button(key=f"multihead_demo_{short}").click().run()
        assert_ok(at)
        chosen = at.multiselect(key="multihead_ablate").value
        assert {tuple(map(int, n.split("."))) for n in chosen} == labelled
        moved, top, p, q = printed_effect(smol, labelled)
        shown = texts(at)
        assert f"**{moved}** of the probability moved" in shown
        assert f"The most likely next token, {md(top)}, went from {p} to {q}." in shown
        # reversed when the top token prints higher without the heads; absent below 1 % moved (measured on this
        # sentence: the induction heads' top token ↵ rises, 18.4% → 20.2%)
        assert ("It became **more** likely without these heads" in shown) == (printed(q) > printed(p))
        assert ("**Hardly any effect** (less than 1.0% moved)" in shown) == (printed(moved) < 0.01)
        # the control: one click switches off the random heads it names; its numbers equal a manual ablation of them
        at.button(key="multihead_demo_random").click().run()
        random = frozenset(tuple(map(int, n.split("."))) for n in at.multiselect(key="multihead_ablate").value)
        assert len(random) == len(labelled) and not random & labelled
        c_moved, c_top, c_p, c_q = printed_effect(smol, random)
        assert f"switched off: **{c_moved}** moved; {md(c_top)}: {c_p} → {c_q}" in shown  # the line under the labelled
        assert f"**{c_moved}** of the probability moved" in texts(at)
        checked += 1
    assert checked >= 2  # SmolLM2 has induction and previous-token heads
