"""The questions built from a page's numbers, and the tally of the answers."""

from __future__ import annotations

import numpy as np
import pytest
import redis

from scripts.serve import free_port
from transformer.head_scores import HeadScores
from ui.live import questions
from ui.live.classroom import StoreDown
from ui.live.redis_store import RedisStore

LABELS = ("The", "␣cat", "␣sat", "␣the")


def test_where_will_it_look_offers_what_the_query_sees_and_the_weights_row():
    weights = np.array([[1, 0, 0, 0], [0.3, 0.7, 0, 0], [0.1, 0.6, 0.3, 0], [0.4, 0.1, 0.2, 0.3]], dtype=np.float32)
    q = questions.look(LABELS, weights, 2, layer=1, head=3, causal=True)
    assert q.options == ("0: The", "1: ␣cat", "2: ␣sat")  # a decoder's token 2 sees tokens 0-2
    assert [v for _, v in q.truth] == pytest.approx([0.1, 0.6, 0.3])
    assert "2: ␣sat" in q.prompt and "Layer 1, head 3" in q.prompt
    q = questions.look(LABELS, weights.T, 0, layer=0, head=0, causal=False)  # an encoder's token sees every token
    assert len(q.options) == 4 and [v for _, v in q.truth] == pytest.approx([1, 0.3, 0.1, 0.4])
    assert len(set(questions.look(LABELS, weights, 3, 0, 0, True).options)) == 4  # a repeated word stays two


def test_what_comes_next_offers_the_likeliest_tokens_with_their_probabilities():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=50).astype(np.float32)
    vocab = [f"t{i}" for i in range(50)]
    q = questions.next_token("sat on the", logits, vocab)
    p = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    best = np.argsort(-p)[: questions.TOP_K]
    assert q.options == tuple(vocab[i] for i in best) and q.typed
    assert [v for _, v in q.truth] == pytest.approx(p[best], rel=1e-5)


def test_which_head_offers_the_layers_heads_with_their_scores():
    n = (2, 3)
    scores = HeadScores(**{name: np.arange(6, dtype=np.float32).reshape(n) * (k + 1) for k, name in enumerate(
        ("previous_token", "induction", "duplicate_token", "first_token", "self_token", "distance", "spread")
    )})
    q = questions.which_head("completes a repeated pattern (induction)", scores, layer=1)
    assert q.options == ("head 0", "head 1", "head 2")
    assert [v for _, v in q.truth] == [6.0, 8.0, 10.0]  # induction = 2 × arange, layer 1


def test_does_it_change_is_yes_a_little_or_no():
    q = questions.change("head 3 is switched off?")
    assert q.prompt == "Does this change when head 3 is switched off?" and q.options == questions.CHANGE_OPTIONS


def test_the_tally_keeps_the_options_order_then_typed_answers_by_count():
    q = questions.next_token("x", np.array([3.0, 2.0, 1.0]), ["a", "b", "c"])
    labels, counts = questions.tally(q, ["b", "zz", "b", "yy", "zz", "zz", "a"])
    assert labels == ["a", "b", "c", "zz", "yy"] and counts.tolist() == [1, 2, 0, 3, 1]


def test_a_redis_that_does_not_answer_is_said_so():
    store = RedisStore(f"redis://127.0.0.1:{free_port()}/0")  # nothing listens there
    with pytest.raises(StoreDown, match="does not answer"):
        store.read("AAAA1111")
    with pytest.raises(StoreDown):
        store.hit("k", 1.0)
    assert issubclass(StoreDown, Exception) and not issubclass(StoreDown, redis.RedisError)
