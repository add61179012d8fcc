"""Context helpers: finding a word's tokens, its vector at every layer, cosine by layer, PCA trajectories."""

from __future__ import annotations

import numpy as np
import pytest

from lessons import context as cx
from tests.conftest import small_model
from transformer import ModelConfig, run_trace
from ui import PRESETS

BEARS = [PRESETS[k] for k in ("I love bears", "She bears the pain", "Bears won the game", "Bear country")]
BANKS = [PRESETS["River bank"], PRESETS["Money bank"]]


def covered(enc, m: cx.WordMatch) -> str:
    """The characters of the text the match's tokens cover."""
    return enc.text[enc.offsets[m.tokens[0]][0] : enc.offsets[m.tokens[-1]][1]]


def test_find_word_covers_the_word_with_contiguous_tokens(tokenizer):
    # the test tokenizer has a 400-token vocabulary: most words split into several tokens
    enc = tokenizer.encode("The hiking trail led us through bear country.")
    m = cx.find_word(enc, "country")
    assert enc.text[m.start : m.end] == "country" and m.n_found == 1
    assert len(m.tokens) > 1, enc.labels  # really a split word
    assert list(m.tokens) == list(range(m.tokens[0], m.tokens[-1] + 1))
    assert "country" in covered(enc, m)
    assert m.position == m.tokens[-1]
    # the tokens just outside do not touch the word
    assert enc.offsets[m.tokens[0] - 1][1] <= m.start and enc.offsets[m.tokens[-1] + 1][0] >= m.end


def test_find_word_is_case_insensitive_and_whole_word(lm):
    encs = [lm.tokenizer.encode(s) for s in BEARS]
    # exact: "bears" matches "bears" and "Bears", not "bear"
    exact = [cx.find_word(e, "BEARS") for e in encs[:3]]
    assert [e.text[m.start : m.end] for e, m in zip(encs, exact, strict=False)] == ["bears", "bears", "Bears"]
    with pytest.raises(cx.WordNotFound):
        cx.find_word(encs[3], "bears")
    with pytest.raises(cx.WordNotFound):
        cx.find_word(encs[0], "bear")  # not a part of a word
    with pytest.raises(cx.WordNotFound):
        cx.find_word(encs[0], "ears")  # nor its end
    # forms: "bear" also matches longer words that start with it
    forms = [cx.find_word(e, "bear", forms=True) for e in encs]
    assert [e.text[m.start : m.end] for e, m in zip(encs, forms, strict=True)] == ["bears", "bears", "Bears", "bear"]
    for e, m in zip(encs, forms, strict=True):
        assert e.text[m.start : m.end].lower() in covered(e, m).lower()


def test_find_word_takes_the_first_of_repeats_and_handles_odd_words(lm):
    enc = lm.tokenizer.encode("the cat and the dog")
    m = cx.find_word(enc, "the")
    assert m.n_found == 2 and m.start == 0 and m.tokens == (0,)
    for odd in ("", "   ", "(", "a.b", "[x]*", "🐻"):
        with pytest.raises(cx.WordNotFound):
            cx.find_word(enc, odd)


def test_find_word_finds_non_ascii_and_multi_word_phrases(lm):
    enc = lm.tokenizer.encode("I love 🐻 bears and bear country")
    m = cx.find_word(enc, "bear country")
    assert enc.text[m.start : m.end] == "bear country" and "bear country" in covered(enc, m)
    m = cx.find_word(enc, "🐻")
    assert enc.text[m.start : m.end] == "🐻"
    assert "🐻" in covered(enc, m)


def test_word_vectors_start_at_the_embedding_row(lm):
    tr = run_trace(lm.model, lm.tokenizer, BANKS[0])
    m = cx.find_word(tr.encoding, "bank")
    vec = cx.word_vectors(tr, m.position)
    n_layer = lm.cfg.n_layer
    assert vec.shape == (n_layer + 1, lm.cfg.d_model)
    W_E = lm.model.W_E.detach().numpy()
    np.testing.assert_array_equal(vec[0], W_E[tr.encoding.ids[m.position]])
    for layer in range(n_layer):
        np.testing.assert_array_equal(vec[layer + 1], tr[f"blocks.{layer}.hook_resid_post"][m.position])
    assert cx.stage_labels(n_layer) == ["embedding W_E[id]", *(f"after block {i}" for i in range(n_layer))]


def test_cosine_by_layer_is_the_formula():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(5, 16)), rng.normal(size=(5, 16))
    want = [float(x @ y) / (np.linalg.norm(x) * np.linalg.norm(y)) for x, y in zip(a, b, strict=True)]
    np.testing.assert_allclose(cx.cosine_by_layer(a, b), want, rtol=1e-5)
    np.testing.assert_allclose(cx.cosine_by_layer(a, 3 * a), 1, rtol=1e-6)


def test_bank_is_identical_at_the_embedding_and_diverges_after(lm):
    """River bank vs money bank: the same token, so cos = 1 at layer 0; context makes them differ after every block."""
    traces = [run_trace(lm.model, lm.tokenizer, s) for s in BANKS]
    matches = [cx.find_word(tr.encoding, "bank") for tr in traces]
    ids = [tr.encoding.ids[m.position] for tr, m in zip(traces, matches, strict=True)]
    assert ids[0] == ids[1]
    assert matches[0].position != matches[1].position  # at different positions, too
    vec = [cx.word_vectors(tr, m.position) for tr, m in zip(traces, matches, strict=True)]
    cos = cx.cosine_by_layer(*vec)
    np.testing.assert_allclose(cos[0], 1, atol=1e-6)
    np.testing.assert_array_equal(vec[0][0], vec[1][0])
    assert np.all(cos[1:] < 0.9999), cos


def test_trajectories_are_a_pca_of_all_the_vectors():
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(3, 5, 12)) * np.linspace(3, 0.2, 12)  # (n, stages, d)
    for unit in (False, True):
        coords, explained = cx.trajectories(vectors, unit)
        assert coords.shape == (3, 5, 2)
        flat = vectors.reshape(15, 12)
        if unit:
            flat = flat / np.linalg.norm(flat, axis=1, keepdims=True)
        xc = flat - flat.mean(0)
        _, s, vt = np.linalg.svd(xc, full_matrices=False)
        for k in range(2):
            proj = xc @ vt[k]
            got = coords.reshape(15, 2)[:, k]
            sign = np.sign(got @ proj)
            np.testing.assert_allclose(got, sign * proj, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(explained, s[:2] ** 2 / (s**2).sum(), rtol=1e-5)


def test_an_encoders_word_vectors_are_its_blocks_outputs(tokenizer):
    """In BERT's post-norm blocks a block hands on LN2(h + mlp), not the sum before it."""
    model = small_model("bert", tokenizer, 3, seed=9)
    tr = run_trace(model, tokenizer, BEARS[0])
    pos = cx.find_word(tr.encoding, "bears").position
    vec = cx.word_vectors(tr, pos)
    np.testing.assert_array_equal(vec[0], model.W_E.detach().numpy()[tr.encoding.ids[pos]])
    for layer in range(3):
        np.testing.assert_array_equal(vec[layer + 1], tr[f"blocks.{layer}.ln2.hook_normalized"][pos])
        assert not np.allclose(vec[layer + 1], tr[f"blocks.{layer}.hook_resid_post"][pos])


def test_pair_cosines_and_table_rows(lm):
    rng = np.random.default_rng(2)
    vectors = rng.normal(size=(3, 4, 8))
    pairs, cos = cx.pair_cosines(vectors)
    assert pairs == [(0, 1), (0, 2), (1, 2)] and cos.shape == (3, 4)
    for (a, b), row in zip(pairs, cos, strict=True):
        np.testing.assert_allclose(row, cx.cosine_by_layer(vectors[a], vectors[b]), rtol=1e-6)
    enc = lm.tokenizer.encode(BEARS[2])
    m = cx.find_word(enc, "bear", forms=True)
    row = cx.match_row(3, BEARS[2], enc, m)
    assert row == {
        "sentence": 3, "text": BEARS[2], "word": "Bears", "tokens": " + ".join(enc.labels[p] for p in m.tokens),
        "followed token": enc.labels[m.position], "position": m.position, "id": enc.ids[m.position],
    }  # fmt: skip
    assert cx.match_row(1, "x" * 300, enc, None) == {
        "sentence": 1,
        "text": "x" * 200,
        "word": "—",
        "tokens": "—",
        "followed token": "—",
        "position": None,
        "id": None,
    }


# ---- the Context page's words ----


def test_reading_names_each_familys_first_block_and_followed_token(tiny_cfg):
    gpt = cx.reading(tiny_cfg, byte_level=True)
    assert (
        r"x^{(1)} = \mathrm{Block}_0\big(x^{(0)} + PE_t\big)" in gpt.latex
        and gpt.latex.endswith(r"\\ \cos(a, b) = \frac{a \cdot b}{\lVert a\rVert\,\lVert b\rVert}\end{gathered}")
    )
    assert (
        gpt.followed.startswith("A word may be split into several tokens (*Bears* → B + ears).")
        and "causal mask that is the first position" in gpt.followed
    )
    assert (
        "W_E[id], before the position vector is added:" in gpt.similarity
        and "after its LayerNorm" not in gpt.similarity
    )
    assert gpt.looks.startswith("The attention weights of the word's token") and "both sides" not in gpt.looks
    llama = cx.reading(ModelConfig(family="llama", pos_encoding="rotary", activation="silu"), byte_level=True)
    assert r"\mathrm{Block}_0\big(x^{(0)}\big)" in llama.latex and "RoPE turns queries and keys" in llama.similarity
    bert = cx.reading(
        ModelConfig(family="bert", pos_encoding="learned", activation="gelu", has_lm_head=False), byte_level=False
    )
    assert (
        "T_{A}" in bert.latex
        and "(*didn't* → didn + ' + t)" in bert.followed
        and "this model is an encoder" in bert.followed
    )
    assert "hands on, after its LayerNorm," in bert.similarity and "on both sides" in bert.looks


def test_context_notes_by_hand():
    assert cx.tokens_note({5}).startswith("Every sentence uses the **same token** (id 5)")
    assert cx.tokens_note({7, 3}).startswith("The sentences use **different tokens** here (ids 3, 7;")
    # two pairs: (1.0 + 0.8) / 2 = 0.9 at the embedding, (0.5 + 0.1) / 2 = 0.3 at the end
    assert cx.cosine_note(np.array([[1.0, 0.7, 0.5], [0.8, 0.4, 0.1]]), ["sentence 1 vs 2", "sentence 1 vs 3"]) == (
        "Averaged over the pairs: cos = 0.900 at the embedding, 0.300 after the last block: the vectors **moved "
        "apart** as context flowed in (cos fell by 0.600). After the last block the least alike pair is sentence 1 "
        "vs 3 (0.100), the most alike sentence 1 vs 2 (0.500)."
    )


def test_context_note_says_when_the_vectors_did_not_move_apart_or_grew_more_alike():
    # absent: 0.900 → 0.870, |Δ| = 0.030 < 0.05
    flat = cx.cosine_note(np.array([[0.9, 0.8, 0.87]]), ["sentence 1 vs 2"])
    assert flat == (
        "Averaged over the pairs: cos = 0.900 at the embedding, 0.870 after the last block: **no clear change** "
        "(|Δ cos| = 0.030, below 0.05): context did not set the vectors apart here."
    )
    # reversed: different tokens that grow more alike, 0.400 → 0.700
    rose = cx.cosine_note(np.array([[0.4, 0.5, 0.7]]), ["sentence 1 vs 2"])
    assert "**reversed**, the vectors grew more alike (cos rose by 0.300)" in rose and "moved apart" not in rose
    # on the threshold as printed: 0.9004 and 0.8504 print 0.900 and 0.850, 0.050 apart: counted as moving apart
    assert "cos fell by 0.050" in cx.cosine_note(np.array([[0.9004, 0.8504]]), ["sentence 1 vs 2"])
    assert cx.spread_note(np.array([0.5, 0.25]), 12).startswith(
        "These two directions hold 75.0% of the spread of the 12 vectors;"
    )
