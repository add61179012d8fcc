"""lessons/rope.py, lessons/gqa.py and lessons/encoder_decoder.py on small random Llama and BERT checkpoints built here
(Hugging Face directories, loaded by the app's own loader), checked by hand-written formulas."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from tokenizers import Tokenizer as HFTokenizer
from tokenizers import decoders, models, normalizers, pre_tokenizers, processors, trainers

from lessons import encoder_decoder as ed
from lessons import gqa, rope
from transformer import run_trace
from transformer.loading import load_model
from transformer.tokenizer import Tokenizer

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpora" / "tinyshakespeare.txt"
SENTENCE = "The animal didn't cross the street because it was too tired."
THETA = 500.0  # a small base: the slow pairs turn visibly within a short sentence


def corpus_lines(n_chars: int = 60_000) -> list[str]:
    return [*CORPUS.read_text(encoding="utf-8")[:n_chars].splitlines(), SENTENCE]


def write_llama(out: Path, n_head: int = 6, n_kv: int = 2, seed: int = 0) -> Path:
    """A 2-layer random LlamaForCausalLM (hidden 48, head 8, GQA n_head/n_kv) and a byte-level
    BPE tokenizer, as an HF directory."""
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = Tokenizer.train(corpus_lines(), vocab_size=400)
    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=tok.vocab_size,
        hidden_size=48,
        intermediate_size=80,
        num_hidden_layers=2,
        num_attention_heads=n_head,
        num_key_value_heads=n_kv,
        rope_theta=THETA,
        max_position_embeddings=128,
        tie_word_embeddings=True,
        initializer_range=0.2,  # far from uniform attention
    )
    LlamaForCausalLM(cfg).save_pretrained(out)
    tok.save(out / "tokenizer.json")
    return out


def write_bert(out: Path, seed: int = 0) -> Path:
    """A 2-layer random BertModel (hidden 48, 4 heads) and a lower-casing WordPiece tokenizer adding
    [CLS] … [SEP], as an HF directory."""
    from transformers import BertConfig, BertModel

    hf = HFTokenizer(models.WordPiece(unk_token="[UNK]"))
    hf.normalizer = normalizers.BertNormalizer(lowercase=True)
    hf.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    hf.decoder = decoders.WordPiece()
    hf.train_from_iterator(
        corpus_lines(),
        trainers.WordPieceTrainer(vocab_size=400, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]),
    )
    cls, sep = hf.token_to_id("[CLS]"), hf.token_to_id("[SEP]")
    hf.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    torch.manual_seed(seed)
    cfg = BertConfig(
        vocab_size=hf.get_vocab_size(), hidden_size=48, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=96, max_position_embeddings=128, initializer_range=0.2,
    )
    BertModel(cfg, add_pooling_layer=False).save_pretrained(out)
    hf.save(str(out / "tokenizer.json"))
    return out


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    return load_model(write_llama(tmp_path_factory.mktemp("models") / "tiny-llama"))


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return load_model(write_bert(tmp_path_factory.mktemp("models") / "tiny-bert"))


@pytest.fixture(scope="module")
def llama_trace(llama):
    return run_trace(llama.model, llama.tokenizer, SENTENCE)


# ---- RoPE ---------------------------------------------------------------------------------------------------


def test_checkpoint_is_a_rotary_gqa_model(llama):
    cfg = llama.cfg
    assert (
        (cfg.family, cfg.pos_encoding, cfg.n_head, cfg.n_kv_heads, cfg.d_head, cfg.rope_theta)
        == ("llama", "rotary", 6, 2, 8, THETA)
    )
    assert rope.has_rope(cfg) and gqa.has_gqa(cfg)


def test_angle_table_is_m_times_theta_power_by_hand(llama):
    cfg = llama.cfg
    table = rope.angle_table(cfg, 40)
    d = cfg.d_head
    assert table.shape == (40, d // 2)
    for m in range(40):
        for i in range(d // 2):
            assert table[m, i] == pytest.approx(m * THETA ** (-2 * i / d), rel=1e-6, abs=1e-6)
    np.testing.assert_allclose(
        rope.wavelengths(cfg), [2 * math.pi * THETA ** (2 * i / d) for i in range(d // 2)], rtol=1e-6
    )


def test_pairs_are_i_and_i_plus_half():
    x = np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(rope.pairs(x), [[0, 4], [1, 5], [2, 6], [3, 7]])


def test_query_key_reads_the_trace_and_rotating_by_hand_gives_the_rotated_vectors(llama, llama_trace):
    cfg, tr = llama.cfg, llama_trace
    m, n, head = 9, 3, 4  # query head 4 reads key/value head 1
    qk = rope.query_key(tr, cfg, 1, head, m, n)
    assert qk.kv_head == 1
    np.testing.assert_array_equal(qk.q, tr["blocks.1.attn.hook_q"][m, 4])
    np.testing.assert_array_equal(qk.k, tr["blocks.1.attn.hook_k"][n, 1])
    # each pair turned by hand: (x, y) → (x cos a − y sin a, y cos a + x sin a), a = pos · θ^(−2i/d)
    for vec, rot, pos in ((qk.q, qk.rot_q, m), (qk.k, qk.rot_k, n)):
        for i, (x, y) in enumerate(rope.pairs(vec.astype(np.float64))):
            a = pos * THETA ** (-2 * i / cfg.d_head)
            np.testing.assert_allclose(
                rope.pairs(rot)[i], [x * math.cos(a) - y * math.sin(a), y * math.cos(a) + x * math.sin(a)], atol=1e-5
            )
    assert qk.score == pytest.approx(float(qk.rot_q.astype(np.float64) @ qk.rot_k), abs=1e-4)
    assert qk.pair_dots.sum() == pytest.approx(qk.score, abs=1e-4)
    np.testing.assert_allclose(rope.rotate_at(qk.q, np.array([m]), cfg)[0], qk.rot_q, atol=1e-5)


def test_shift_invariance_on_the_models_own_vectors(llama, llama_trace):
    """Both moved by s: the score stays (to 1e-4); only the query moved: it changes."""
    cfg = llama.cfg
    for layer, head, m, n in ((0, 0, 7, 2), (1, 5, 11, 11), (1, 2, 4, 0)):
        qk = rope.query_key(llama_trace, cfg, layer, head, m, n)
        sh = rope.shift_scores(qk.q, qk.k, m, n, np.arange(-min(m, n), 60), cfg)
        assert sh.score == pytest.approx(qk.score, abs=1e-4)  # s = 0 is the trace's own score
        np.testing.assert_allclose(sh.both, qk.score, atol=1e-4)
        assert sh.largest_change < 1e-4
        assert np.ptp(sh.query_only) > 100 * 1e-4  # an unequal shift changes the offset, and the score
        # the query-only line is f(m − n + s): the same q and k with both rotated to (m + s, n) by hand
        s = 13
        rq, rk = rope.rotate_at(qk.q, np.array([m + s]), cfg)[0], rope.rotate_at(qk.k, np.array([n]), cfg)[0]
        assert sh.query_only[list(sh.shifts).index(s)] == pytest.approx(float(rq.astype(np.float64) @ rk), abs=1e-4)


def test_a_wrong_rotation_breaks_the_invariance(llama, llama_trace):
    """The check has teeth: with the pairs taken as neighbours (0, 1), (2, 3)… instead of (i, i + d/2) the rotated q
    no longer equals the trace's."""
    cfg = llama.cfg
    qk = rope.query_key(llama_trace, cfg, 0, 1, 6, 2)
    perm = np.r_[0 : cfg.d_head : 2, 1 : cfg.d_head : 2]  # interleaved layout
    wrong = rope.rotate_at(qk.q[perm], np.array([6]), cfg)[0][np.argsort(perm)]
    assert np.abs(wrong - qk.rot_q).max() > 1e-2


def test_negative_positions_are_refused(llama):
    with pytest.raises(ValueError):
        rope.shift_scores(np.ones(8, np.float32), np.ones(8, np.float32), 2, 5, np.array([-3, 0]), llama.cfg)


def test_the_pages_numbers_and_texts_by_hand(llama, llama_trace):
    cfg = llama.cfg
    qk = rope.query_key(llama_trace, cfg, 1, 4, 9, 3)
    np.testing.assert_array_equal(qk.vectors, [qk.q, qk.rot_q, qk.k, qk.rot_k])
    shares = [
        float(qk.rot_q[i]) * float(qk.rot_k[i]) + float(qk.rot_q[i + 4]) * float(qk.rot_k[i + 4]) for i in range(4)
    ]  # pair i = (i, i + 4)
    assert qk.top_pairs() == sorted(range(4), key=lambda i: -abs(shares[i]))[:3]
    assert (
        f"pairs {', '.join(map(str, qk.top_pairs()))} add the most here" in rope.score_text(qk)
        and "= 6·ω_i" in rope.score_text(qk)
    )
    sh = rope.shift_scores(qk.q, qk.k, 9, 3, np.arange(-3, 50), cfg)
    assert sh.index(-3) == 0 and sh.index(37) == 40 and sh.shifts[sh.index(37)] == 37
    assert f"Over all 53 shifts the blue line moves by at most {sh.largest_change:.1e}" in rope.shift_caption(sh)
    assert "q_9 and k_3 (before turning)" in rope.shift_text(9, 3) and "at 9 + s and 3 + s" in rope.shift_text(9, 3)
    w = [2 * math.pi * THETA ** (2 * i / 8) for i in range(4)]
    assert (
        f"Each head has 4 pairs of numbers. Pair 0 turns fastest, once every {w[0]:.1f} positions"
        in rope.angles_text(cfg)
    )
    assert f"once every {w[-1]:,.0f} positions" in rope.angles_text(cfg) and "(θ = 500, d = 8)" in rope.angles_text(cfg)


# ---- grouped-query attention --------------------------------------------------------------------------------


def test_sharing_table_matches_kv_head(llama):
    cfg = llama.cfg
    table = gqa.sharing_table(cfg)
    assert table.shape == (6, 2) and table.sum() == 6
    for h in range(6):
        assert table[h].argmax() == cfg.kv_head(h) == h // 3
    assert gqa.group_heads(cfg, 0) == [0, 1, 2] and gqa.group_heads(cfg, 1) == [3, 4, 5] and gqa.group_size(cfg) == 3


def scores_from_shared_keys(tr, cfg, layer: int) -> np.ndarray:
    """score_h = Q_h · K_gᵀ with g = kv_head(h), for every query head, from the queries and
    keys the page shows: (nh, T, T)."""
    rot = "rot_" if cfg.pos_encoding == "rotary" else ""
    q, k = tr[f"blocks.{layer}.attn.hook_{rot}q"], gqa.keys_used(tr, cfg, layer)  # (T, nh, d), (T, n_kv, d)
    return np.stack([q[:, h] @ k[:, cfg.kv_head(h)].T for h in range(cfg.n_head)])


def test_raw_scores_are_rot_q_times_the_groups_rot_k(llama, llama_trace):
    cfg, tr = llama.cfg, llama_trace
    for layer in range(cfg.n_layer):
        ours = scores_from_shared_keys(tr, cfg, layer)
        np.testing.assert_allclose(ours, tr[f"blocks.{layer}.attn.hook_scores_raw"], atol=1e-4)
        q, k = tr[f"blocks.{layer}.attn.hook_rot_q"], tr[f"blocks.{layer}.attn.hook_rot_k"]
        wrong_key = q[:, 0] @ k[:, 1].T  # head 0 belongs to group 0, not 1
        assert np.abs(wrong_key - tr[f"blocks.{layer}.attn.hook_scores_raw"][0]).max() > 1e-2


def test_group_holds_its_keys_values_and_patterns(llama, llama_trace):
    cfg, tr = llama.cfg, llama_trace
    grp = gqa.group(tr, cfg, 1, 1)
    assert grp.heads == [3, 4, 5]
    np.testing.assert_array_equal(grp.keys, tr["blocks.1.attn.hook_rot_k"][:, 1])
    np.testing.assert_array_equal(grp.values, tr["blocks.1.attn.hook_v"][:, 1])
    np.testing.assert_array_equal(grp.patterns, tr["blocks.1.attn.hook_pattern"][[3, 4, 5]])
    diff = grp.differences()
    assert diff.shape == (3, 3) and np.allclose(np.diag(diff), 0)
    a, b = grp.patterns[0], grp.patterns[1]
    assert diff[0, 1] == pytest.approx(float(np.mean(0.5 * np.abs(a - b).sum(axis=1))), abs=1e-6)
    assert diff[0, 1] > 0.01  # shared keys, own queries: the patterns differ
    assert grp.mean_difference() == pytest.approx((diff[0, 1] + diff[0, 2] + diff[1, 2]) / 3, abs=1e-6)
    assert f"two heads of this group differ by {grp.mean_difference():.2f} on average" in gqa.differences_text(grp)
    assert (
        "Each key/value head serves 3 query heads" in gqa.sharing_text(cfg)
        and "keeps 2 keys and values per token and layer instead of 6: 3× less" in gqa.sharing_text(cfg)
    )


def test_gpt_has_one_kv_head_per_query_head(lm):
    cfg = lm.cfg
    assert not rope.has_rope(cfg) and not gqa.has_gqa(cfg)
    np.testing.assert_array_equal(gqa.sharing_table(cfg), np.eye(cfg.n_head))
    tr = run_trace(lm.model, lm.tokenizer, "the cat and the dog")
    np.testing.assert_allclose(scores_from_shared_keys(tr, cfg, 0), tr["blocks.0.attn.hook_scores_raw"], atol=1e-4)


# ---- encoder vs decoder -------------------------------------------------------------------------------------


def test_words_and_their_tokens_in_both_tokenizers(llama, bert):
    ws = ed.words(SENTENCE)
    assert (
        [w.text for w in ws]
        == ["The", "animal", "didn't", "cross", "the", "street", "because", "it", "was", "too", "tired"]
    )
    it = ws[7]
    for lm in (llama, bert):
        enc = lm.tokenizer.encode(SENTENCE)
        toks = ed.tokens_of(enc, it)
        assert toks, lm.name
        joined = "".join(enc.tokens[i] for i in toks).replace("Ġ", "").replace("##", "")
        assert joined.lower() == "it"
    enc = bert.tokenizer.encode(SENTENCE)
    assert enc.tokens[0] == "[CLS]" and enc.tokens[-1] == "[SEP]" and ed.special_positions(enc) == [0, len(enc) - 1]
    didnt = ed.tokens_of(enc, ws[2])  # WordPiece splits at the apostrophe: didn ' t (perhaps in smaller pieces)
    assert len(didnt) >= 3 and didnt == list(range(didnt[0], didnt[-1] + 1))
    assert "".join(enc.tokens[i] for i in didnt).replace("##", "") == "didn't"


def test_weight_grid_and_best_head(llama, bert):
    ws = ed.words(SENTENCE)
    for lm in (llama, bert):
        tr = run_trace(lm.model, lm.tokenizer, SENTENCE)
        src, tgt = ed.tokens_of(tr.encoding, ws[7]), ed.tokens_of(tr.encoding, ws[1])
        grid = ed.weight_grid(tr, lm.cfg.n_layer, src, tgt)
        assert grid.shape == (lm.cfg.n_layer, lm.cfg.n_head)
        for layer in range(lm.cfg.n_layer):
            for h in range(lm.cfg.n_head):
                assert grid[layer, h] == pytest.approx(
                    sum(float(tr[f"blocks.{layer}.attn.hook_pattern"][h, src[-1], j]) for j in tgt), abs=1e-6
                )
        layer, head, w = ed.best_head(grid)
        assert w == grid.max() and grid[layer, head] == w


def test_a_decoder_row_never_sees_later_words_and_an_encoder_row_does(llama, bert):
    ws = ed.words(SENTENCE)
    for lm, sees_later in ((llama, False), (bert, True)):
        tr = run_trace(lm.model, lm.tokenizer, SENTENCE)
        i = ed.tokens_of(tr.encoding, ws[1])[-1]  # "animal"
        r = ed.row(tr, 1, 0, i)
        assert r.sum() == pytest.approx(1, abs=1e-5)
        assert bool(r[i + 1 :].sum() > 0.01) is sees_later
        grid = ed.weight_grid(tr, lm.cfg.n_layer, [i], ed.tokens_of(tr.encoding, ws[7]))  # "animal" → the later "it"
        assert bool(grid.max() > 0) is sees_later


def test_sinks_by_hand(llama, bert):
    tr = run_trace(bert.model, bert.tokenizer, SENTENCE)
    T = len(tr.encoding)
    s = ed.sinks(tr, bert.cfg.n_layer, causal=False)
    assert s.positions == [0, T - 1] and s.rows == list(range(1, T - 1)) and s.even == pytest.approx(2 / T)
    p = tr["blocks.1.attn.hook_pattern"]
    assert s.share[1] == pytest.approx(
        float(np.mean([p[h, i, 0] + p[h, i, T - 1] for h in range(4) for i in range(1, T - 1)])), abs=1e-6
    )
    tr = run_trace(llama.model, llama.tokenizer, SENTENCE)
    T = len(tr.encoding)
    s = ed.sinks(tr, llama.cfg.n_layer, causal=True)
    assert (
        s.positions == [0]
        and s.rows == list(range(1, T))
        and s.even == pytest.approx(np.mean([1 / (i + 1) for i in range(1, T)]))
    )
    p = tr["blocks.0.attn.hook_pattern"]
    assert s.share[0] == pytest.approx(float(p[:, 1:, 0].mean()), abs=1e-6)
    one = run_trace(llama.model, llama.tokenizer, "a")
    assert len(one.encoding) == 1 and ed.sinks(one, llama.cfg.n_layer, causal=True) is None


def test_family_without_loading(tmp_path, llama, bert, lm):
    assert (
        ed.family(str(llama.path)) == "llama"
        and ed.family(str(bert.path)) == "bert"
        and ed.family("shakespeare-gpt") == "gpt"
    )
    assert ed.family(str(tmp_path / "nothing")) is None


def test_clip_cuts_long_text_at_a_space():
    assert ed.clip("short text") == ("short text", False)
    assert ed.clip("aa bb cc", 5) == ("aa", True)
    assert ed.clip("abcdef", 3) == ("abc", True)  # no space: cut inside the word


def test_shared_words_pair_tokens_and_default_decoder(llama, bert):
    encodings = [lm.tokenizer.encode(SENTENCE) for lm in (llama, bert)]
    ws = ed.words(SENTENCE)
    for enc in encodings:
        # "it", "animal"
        assert ed.pair_tokens(enc, SENTENCE, 7, 1) == (ed.tokens_of(enc, ws[7]), ed.tokens_of(enc, ws[1]))
    # both hold every word
    assert ed.shared_words(SENTENCE, encodings) == [(i, w.text) for i, w in enumerate(ed.words(SENTENCE))]
    cut = bert.tokenizer.encode(SENTENCE[: SENTENCE.index(" because")])  # as if a model had read only the first words
    assert (
        ed.shared_words(SENTENCE, [encodings[0], cut])
        == [(0, "The"), (1, "animal"), (2, "didn't"), (3, "cross"), (4, "the"), (5, "street")]
    )
    assert ed.default_decoder(["a", ed.FALLBACK_DECODER, ed.DECODER], "a") == "a"
    assert ed.default_decoder(["a", ed.FALLBACK_DECODER, ed.DECODER], None) == ed.DECODER
    assert ed.default_decoder(["a", ed.FALLBACK_DECODER], "missing") == ed.FALLBACK_DECODER
    assert ed.default_decoder(["a", "b"], None) == "a"


def test_the_pages_texts(llama, bert):
    row = np.array([0.1, 0.2, 0.3, 0.15, 0.25], dtype=np.float32)
    assert ed.row_text(row, 2, [0, 1], "cat_s", causal=False) == "On “cat\\_s”: 0.300. On tokens after the word: 0.400."
    assert (
        ed.row_text(row, 4, [3], "it", causal=True)
        == "On “it”: 0.150. On tokens after the word: 0.000 (a decoder cannot look ahead)."
    )
    assert "The word “it” is found in each" in ed.tokens_text("it")
    sinks = [
        ed.sinks(run_trace(lm.model, lm.tokenizer, SENTENCE), lm.cfg.n_layer, causal)
        for lm, causal in ((bert, False), (llama, True))
    ]
    text = ed.sinks_text([("models/tiny-bert", False), ("tiny-llama", True)], sinks)
    enc, dec = sinks
    assert text.startswith("Many heads have nothing useful to look at")
    assert (
        f"In tiny\\-bert the text's tokens put on average {enc.share.mean():.0%} of "
        f"their attention on [CLS] and [SEP] (most in layer {int(enc.share.argmax())}"
    ) in text
    assert (
        f"In tiny\\-llama the later tokens put on average {dec.share.mean():.0%} on the first token" in text
        and f"spread evenly it would be {dec.even:.0%}." in text
    )


def test_the_best_heads_controls_say_when_no_head_stands_out():
    # 2 layers × 3 heads; the target is 1 of 8 visible tokens: spread evenly it would get 0.125
    flat = np.array([[0.10, 0.12, 0.20], [0.12, 0.13, 0.09]])  # median 0.12
    said = ed.best_head_control(flat, 1, 8, "it", "animal")
    assert "layer 0, head 2 (0.20)" in said and "median of the 6 heads puts **0.12**" in said
    assert "it would get **0.12**" in said and "no head singles the target out" in said  # 0.20 < 2 × 0.125
    sharp = flat.copy()
    sharp[1, 0] = 0.80
    said = ed.best_head_control(sharp, 1, 8, "it", "animal")
    assert "layer 1, head 0 (0.80)" in said and "stands out" in said and "second sentence" in said
    # a target of 3 tokens out of 4 visible: even spread gives 0.75, so 0.80 is no evidence
    assert "no head singles" in ed.best_head_control(sharp, 3, 4, "it", "animal")
