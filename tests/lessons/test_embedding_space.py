"""Embedding-space helpers against independent computations: SVD / covariance PCA, cosine by
formula, brute-force neighbours."""

from __future__ import annotations

import numpy as np
import pytest
from tokenizers import Tokenizer as HFTokenizer
from tokenizers import models, normalizers, pre_tokenizers, processors

from lessons import embedding_space as es
from lessons.embedding_space import (
    NotOneToken,
    analogy,
    binary_bits,
    cosine_matrix,
    frequent_ids,
    merged_ids,
    nearest,
    single_token_id,
    unit_rows,
)
from lessons.pca import pca
from transformer import sinusoidal_encoding
from transformer.loading import load_model
from transformer.tokenizer import BYTE_DECODER, Tokenizer

RNG = np.random.default_rng(0)


@pytest.fixture(scope="module")
def bundled():
    return load_model("shakespeare-gpt")


def cloud(n: int = 300, d: int = 16) -> np.ndarray:
    """Points with clearly different spreads along random directions, so the components are well separated."""
    scales = np.linspace(5, 0.5, d)  # (d,)
    basis = np.linalg.qr(RNG.normal(size=(d, d)))[0]  # (d, d) orthonormal
    return (RNG.normal(size=(n, d)) * scales) @ basis.T + RNG.normal(size=d)


def test_pca_matches_svd_up_to_sign():
    x = cloud()
    fit = pca(x, 3)
    _, s, vt = np.linalg.svd(x - x.mean(0), full_matrices=False)
    for k in range(3):
        assert min(np.abs(fit.components[k] - vt[k]).max(), np.abs(fit.components[k] + vt[k]).max()) < 1e-8
    np.testing.assert_allclose(fit.explained, s[:3] ** 2 / (s**2).sum(), rtol=1e-8)
    np.testing.assert_allclose(fit.mean, x.mean(0))


def test_pca_matches_covariance_eigenvectors_and_projects():
    x = cloud(200, 8)
    fit = pca(x, 2)
    val, vec = np.linalg.eig(np.cov(x, rowvar=False))  # unsorted, independent routine
    order = np.argsort(-val.real)
    for k in range(2):
        ref = vec[:, order[k]].real
        assert abs(abs(fit.components[k] @ ref) - 1) < 1e-8  # same direction up to sign
    coords = fit.project(x)
    assert coords.shape == (200, 2) and coords.dtype == np.float32
    np.testing.assert_allclose(coords, (x - x.mean(0)) @ fit.components.T, rtol=1e-5, atol=1e-5)
    # variance along PC k = k-th eigenvalue
    np.testing.assert_allclose(coords.var(0, ddof=1), np.sort(val.real)[::-1][:2], rtol=1e-4)


def test_pca_sign_is_fixed():
    x = cloud()
    for fit in (pca(x, 4), pca(-x, 4)):  # flipping the data must not flip the map
        big = fit.components[np.arange(4), np.abs(fit.components).argmax(1)]
        assert (big > 0).all()
    np.testing.assert_allclose(pca(x, 4).components, pca(-x, 4).components, atol=1e-8)


def test_cosine_matrix_matches_formula():
    a, b = RNG.normal(size=(5, 7)), RNG.normal(size=(3, 7))
    manual = [[a[i] @ b[j] / np.sqrt((a[i] @ a[i]) * (b[j] @ b[j])) for j in range(3)] for i in range(5)]
    np.testing.assert_allclose(cosine_matrix(a, b), manual, rtol=1e-5)
    square = cosine_matrix(a)
    np.testing.assert_allclose(np.diag(square), 1, rtol=1e-6)
    np.testing.assert_allclose(square, square.T, atol=1e-7)


def test_unit_rows_keeps_a_zero_row_zero():
    u = unit_rows(np.array([[3.0, 4.0], [0.0, 0.0]]))
    np.testing.assert_allclose(u, [[0.6, 0.8], [0, 0]])


def brute_force(w: np.ndarray, v: np.ndarray, k: int, exclude: set[int]) -> list[tuple[int, float]]:
    """Every row's cosine to v, by the formula, sorted; the k best not excluded."""
    scores = [
        (i, float(w[i] @ v / (np.linalg.norm(w[i]) * np.linalg.norm(v)))) for i in range(len(w)) if i not in exclude
    ]
    return sorted(scores, key=lambda p: -p[1])[:k]


def test_nearest_matches_brute_force():
    w = RNG.normal(size=(200, 12)).astype(np.float32)
    v = RNG.normal(size=12).astype(np.float32)
    ids, cos = nearest(unit_rows(w), v, 10, exclude={3, 7})
    ref = brute_force(w, v, 10, {3, 7})
    assert list(ids) == [i for i, _ in ref]
    np.testing.assert_allclose(cos, [c for _, c in ref], rtol=1e-5)
    assert 3 not in ids and 7 not in ids


def test_nearest_with_k_beyond_the_vocabulary_returns_every_other_row():
    w = RNG.normal(size=(6, 3)).astype(np.float32)
    ids, cos = nearest(unit_rows(w), w[0], 50, exclude=[0, 0, 2])  # a list with a repeat
    assert sorted(ids) == [1, 3, 4, 5] and (np.diff(cos) <= 0).all()


def test_analogy_matches_brute_force():
    w = RNG.normal(size=(150, 10)).astype(np.float32)
    a, b, c = 4, 9, 20
    unit = w / np.linalg.norm(w, axis=1, keepdims=True)
    v = unit[a] - unit[b] + unit[c]
    ids, cos = analogy(unit_rows(w), a, b, c, 8)
    ref = brute_force(w, v, 8, {a, b, c})
    assert list(ids) == [i for i, _ in ref]
    np.testing.assert_allclose(cos, [c for _, c in ref], rtol=1e-5)


def test_analogy_finds_a_planted_parallelogram():
    """Build king − man + woman = queen exactly: the answer must be queen."""
    w = RNG.normal(size=(50, 6)).astype(np.float32)
    w /= np.linalg.norm(w, axis=1, keepdims=True)
    king, man, woman, queen = 1, 2, 3, 4
    w[queen] = w[king] - w[man] + w[woman]
    ids, cos = analogy(unit_rows(w), king, man, woman, 3)
    assert ids[0] == queen and cos[0] > 0.999


LABELS = ["Paris", "␣Paris", "␣paris", "␣PARIS", "␣Parises", "␣France", "France", "␣Frances", "␣Italy", "␣Italies",
          "␣Rome", "Rome", "␣Milan", "␣Parisian", "␣the", "␣Italians"]


def test_variant_ids_are_every_spelling_of_the_words():
    # case, the leading space (␣, Ġ or ▁), plural -s / -es and the singular; not a longer word (Parisian, Italians)
    got = {LABELS[i] for i in es.variant_ids(LABELS, ["Paris", "France", "Italy"])}
    assert got == {"Paris", "␣Paris", "␣paris", "␣PARIS", "␣Parises", "␣France", "France", "␣Frances", "␣Italy"}
    assert es.variant_ids(["Ġkings", "▁King", "king", "queen"], ["kings"]) == [0, 1, 2]  # a plural's singular too
    assert es.variant_ids(["␣", "a"], ["  "]) == []  # a blank word spells nothing


def synthetic_capitals(with_rome: bool) -> tuple[np.ndarray, dict[str, int]]:
    """An embedding table where Paris − France + Italy points at Paris's other spellings first, then at Milan, then
    (when present) at Rome: the raw ranking answers "Paris" respelt."""
    names = ["Paris", "␣Paris", "␣France", "␣Italy", "␣Milan", "␣Rome", "␣the"][: 7 if with_rome else 5]
    d = 8
    w = np.zeros((len(names), d), dtype=np.float32)
    w[0:2, 0] = w[2, 1] = w[3, 2] = 1.0  # Paris = e0 (twice), France = e1, Italy = e2
    v = w[1] - w[2] + w[3]  # e0 − e1 + e2, the analogy's vector
    w[0] = v / np.linalg.norm(v) + 0.01 * np.eye(d)[3]  # "Paris" without its space: nearest of all to v
    w[4] = v / np.linalg.norm(v) + 0.3 * np.eye(d)[4]  # Milan: next
    if with_rome:
        w[5] = v / np.linalg.norm(v) + 0.6 * np.eye(d)[5]  # Rome: after Milan
        w[6] = np.eye(d)[6]
    return w, {n: i for i, n in enumerate(names)}


def test_analogy_leaves_out_every_spelling_and_ranks_the_expected_answer():
    w, at = synthetic_capitals(with_rome=True)
    names = list(at)
    a, b, c = at["␣Paris"], at["␣France"], at["␣Italy"]
    assert analogy(unit_rows(w), a, b, c, 1)[0][0] == at["Paris"]  # without the spellings: "Paris" again
    exclude = {a, b, c, *es.variant_ids(names, ["Paris", "France", "Italy"])}
    ids, _ = analogy(unit_rows(w), a, b, c, 3, exclude)
    assert [names[i] for i in ids] == ["␣Milan", "␣Rome", "␣the"]
    v = es.analogy_vector(unit_rows(w), a, b, c)
    rank = es.expected_rank(unit_rows(w), v, es.variant_ids(names, ["Rome"]), exclude)
    assert rank == 2  # by hand: only Milan is nearer once every spelling of Paris is left out
    kind, text = es.analogy_verdict(("Paris", "France", "Italy"), "␣Milan", "Rome", rank, 10)
    assert kind == "warning" and "the expected «Rome» is rank **2**: the analogy **does not work** here" in text
    kind, text = es.analogy_verdict(("Paris", "France", "Italy"), "␣Milan", "Rome", 12, 10)
    assert "rank **12**, not in the top 10 listed" in text
    kind, text = es.analogy_verdict(("Paris", "France", "Italy"), "␣Rome", "Rome", 1, 10)
    assert kind == "success" and "the analogy **works** here (rank 1)" in text


def test_an_expected_answer_absent_from_the_vocabulary_is_said_so():
    w, at = synthetic_capitals(with_rome=False)
    names = list(at)
    a, b, c = at["␣Paris"], at["␣France"], at["␣Italy"]
    exclude = {a, b, c, *es.variant_ids(names, ["Paris", "France", "Italy"])}
    v = es.analogy_vector(unit_rows(w), a, b, c)
    assert es.variant_ids(names, ["Rome"]) == []
    assert es.expected_rank(unit_rows(w), v, [], exclude) is None
    assert es.expected_rank(unit_rows(w), v, [a], exclude) is None  # the expected word is one of the inputs
    kind, text = es.analogy_verdict(("Paris", "France", "Italy"), "␣Milan", "Rome", None, 10)
    assert kind == "info" and "No token of this vocabulary spells «Rome» as one token" in text
    assert "works" not in text
    kind, text = es.analogy_verdict(("Paris", "France", "Italy"), "␣Milan", "  ", None, 10)
    assert kind == "info" and "Type an expected answer" in text and "works" not in text


def test_single_token_id(bundled):
    tok = bundled.tokenizer
    i = single_token_id(tok, " the")
    assert tok.decode([i]) == " the"
    with pytest.raises(NotOneToken) as err:
        single_token_id(tok, " antidisestablishmentarianism")
    assert len(err.value.labels) > 1 and "".join(err.value.labels).replace("␣", " ") == " antidisestablishmentarianism"
    with pytest.raises(NotOneToken) as err:
        single_token_id(tok, "")
    assert err.value.labels == ()


def test_merged_ids_are_multi_byte_in_learned_order(bundled):
    tok = bundled.tokenizer
    ids = merged_ids(tok)
    assert (np.diff(ids) > 0).all()
    specials = {t.content for t in tok.hf.get_added_tokens_decoder().values()}
    for i in range(tok.vocab_size):
        s = tok.hf.id_to_token(i)
        is_merged = s not in specials and len(bytes(BYTE_DECODER[c] for c in s)) > 1
        assert (i in set(ids.tolist())) == is_merged
    np.testing.assert_array_equal(frequent_ids(tok, 10), ids[:10])


def test_merged_ids_of_a_small_trained_tokenizer(tokenizer):
    ids = merged_ids(tokenizer)
    assert len(ids) == tokenizer.vocab_size - 1 - 256  # everything but <|endoftext|> and the 256 bytes
    assert all(len(tokenizer.decode([i]).encode("utf-8")) > 1 for i in ids)


def test_binary_bits():
    bits = binary_bits(16, 4)
    for pos in range(16):
        assert "".join(str(int(b)) for b in bits[pos][::-1]) == format(pos, "04b")


# ---- a WordPiece vocabulary (BERT's kind), built here ----

WORDPIECE = [
    "[PAD]", "[unused0]", "[UNK]", "[CLS]", "[SEP]", "a", "b", "k", "!", "##s", "the", "king", "man", "woman", "queen",
    "bank", "walk", "##ing", "he", "she",
]


@pytest.fixture(scope="module")
def wordpiece() -> Tokenizer:
    hf = HFTokenizer(models.WordPiece({t: i for i, t in enumerate(WORDPIECE)}, unk_token="[UNK]"))
    hf.normalizer = normalizers.BertNormalizer(lowercase=True)
    hf.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    hf.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 3), ("[SEP]", 4)]
    )
    for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]"):
        hf.add_special_tokens([t])
    return Tokenizer(hf, add_special_tokens=True)


def test_wordpiece_words_without_cls_and_sep(wordpiece):
    assert wordpiece.encode("Walking").labels == ("[CLS]", "walk", "##ing", "[SEP]")  # a sentence gets [CLS] … [SEP]
    assert es.word_pieces(wordpiece, "Walking") == ((16, 17), ("walk", "##ing"))  # a word alone does not
    assert single_token_id(wordpiece, "King") == 11  # lowercased
    with pytest.raises(NotOneToken) as err:
        single_token_id(wordpiece, "walking")
    assert err.value.labels == ("walk", "##ing")
    ids, bad = es.read_words(wordpiece, {"a": "king", "b": " man ", "c": "walking", "d": "  "}, space=False)
    assert ids == {"a": 11, "b": 12} and bad == {"c": ("walk", "##ing"), "d": ()}
    assert es.analogy_words(wordpiece) == ("king", "man", "woman", "queen")


def test_wordpiece_frequent_ids_skip_specials_and_single_characters(wordpiece):
    # [PAD] [unused0] [UNK] [CLS] [SEP] are special; a b k ! ##s are one character: the rest, in vocabulary order
    assert merged_ids(wordpiece).tolist() == list(range(10, len(WORDPIECE)))


def test_analogy_words_fall_back_when_woman_is_two_tokens(bundled):
    assert len(bundled.tokenizer.encode(" woman")) > 1
    assert es.analogy_words(bundled.tokenizer) == ("king", "he", "she", "queen")
    ids, bad = es.read_words(bundled.tokenizer, {"a": "king", "b": "he"}, space=True)
    assert (
        ids == {"a": bundled.tokenizer.encode(" king").ids[0], "b": bundled.tokenizer.encode(" he").ids[0]}
        and not bad
    )


def test_directions_equal_unit_rows():
    w = RNG.normal(size=(80, 9)).astype(np.float32)
    w[5] = 0  # a zero row
    d, unit = es.directions(w), unit_rows(w)
    v = RNG.normal(size=9).astype(np.float32)
    np.testing.assert_allclose(d.cosines(v), unit @ (v / np.linalg.norm(v)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(d.unit(3), unit[3], rtol=1e-6)
    for a, b in (
        (nearest(d, v, 7, {1}), nearest(unit, v, 7, {1})),
        (analogy(d, 2, 3, 4, 6), analogy(unit, 2, 3, 4, 6)),
    ):
        assert a[0].tolist() == b[0].tolist()
        np.testing.assert_allclose(a[1], b[1], rtol=1e-5)


def test_position_helpers():
    pe = sinusoidal_encoding(20, 16).numpy().astype(np.float64)
    np.testing.assert_allclose(
        es.position_similarity(pe), [[pe[i] @ pe[j] for j in range(20)] for i in range(20)], rtol=1e-6
    )
    assert es.wavelengths([0, 1, 6], 16) == pytest.approx([2 * np.pi, 2 * np.pi, 2 * np.pi * 10000 ** (6 / 16)])
    assert (
        es.counter_bits(16).shape == (16, 4)
        and es.counter_bits(10).shape == (10, 4)
        and es.counter_bits(2).shape == (2, 1)
    )
    assert es.sinusoid_difference(sinusoidal_encoding(30, 8).numpy()) == 0
    assert es.sinusoid_difference(sinusoidal_encoding(30, 8).numpy() + 0.25) == pytest.approx(0.25)
    assert es.mean_length(np.array([[3.0, 4.0], [0.0, 1.0]])) == pytest.approx(3.0)


# ---- the Tokens & embeddings page's words ----


def test_reading_for_byte_level_bpe(tokenizer):
    r = es.reading(tokenizer, 64, ("king", "he", "she"))
    assert "(byte-pair encoding, BPE): common words" in r.intro and "A token like `<F0>` holds one byte" in r.chips
    assert (
        r.map.startswith("Each token is a point in 64 dimensions.")
        and '"Frequent" here means the first tokens BPE learned' in r.map
    )
    assert "Here the defaults are *king − he + she*, because *woman* is two tokens" in r.analogy
    # this 400-token vocabulary splits it
    pieces = [tokenizer.label(t) for t in tokenizer.hf.encode(" bank", add_special_tokens=False).tokens]
    assert (
        len(pieces) > 1
        and f"This small vocabulary splits ␣bank into {' + '.join(pieces)}, but the point stands" in r.bank
    )


def test_reading_for_wordpiece(wordpiece):
    r = es.reading(wordpiece, 384, ("king", "man", "woman"))
    assert (
        "(WordPiece, BERT's tokenizer)" in r.intro
        and "**[CLS]** at the start" in r.chips
        and "the first words of the WordPiece vocabulary" in r.map
    )
    assert (
        "Here the defaults are *king − man + woman*. Type" in r.analogy
        and "In this vocabulary bank is a single token, so every sense shares one row" in r.bank
    )


def test_analogy_note():
    assert es.analogy_note("smollm2-135m", ("king", "man", "woman"), "␣queen").startswith(
        "An honest note: smollm2-135m learned its embeddings from billions of words, "
        "so classic analogies often work when every word is one token (king − man + woman gives ␣queen here)."
    )
    assert es.analogy_note("shakespeare-gpt", ("king", "he", "she"), None).startswith(
        "An honest note: this is a small model trained on about a million characters of Shakespeare."
    )
