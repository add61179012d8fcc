"""The encoder–decoder: trace names and shapes, the three attentions' masks, SDPA, interventions, decoding,
loading, the bundled translator."""

from __future__ import annotations

import io
import json
import re
from concurrent.futures import ThreadPoolExecutor
from contextlib import redirect_stdout

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from lessons import cross_attention as xa
from tests.conftest import randomize
from transformer import ModelLoadError, attention
from transformer.data import phrases as td
from transformer.decoding import greedy_decode, translate
from transformer.errors import SourceInputError
from transformer.families import seq2seq as s2s
from transformer.loading import BUNDLED_TRANSLATOR, LoadedModel, get_translator, load_model, save_model
from transformer.train_translator import accuracy_text, alignment_agreement, build_vocab, exact_match, main, tensors
from transformer.vocabulary import BOS, MAX_UNKNOWN, PAD, Vocab, read_source

SOURCE = "the european economic area".split()
TARGET = "la zone économique européenne".split()
PHRASES = [
    "the big red car",
    "an old man sees a beautiful tree",
    "my two black cats eat the white cheeses",
    "the european economic area",
]


@pytest.fixture(scope="module")
def vocab() -> Vocab:
    return build_vocab()


@pytest.fixture(scope="module")
def tiny(vocab) -> s2s.Seq2Seq:
    """A random 2-layer, 4-head encoder–decoder (never modified by tests)."""
    cfg = s2s.Seq2SeqConfig(
        vocab_size=len(vocab), n_source=vocab.n_source, n_ctx=24, d_model=32, n_layer=2, n_head=4, d_mlp=64
    )
    torch.manual_seed(0)
    return randomize(s2s.Seq2Seq(cfg), seed=1)


@pytest.fixture(scope="module")
def bundled() -> LoadedModel:
    return get_translator(BUNDLED_TRANSLATOR)


def record(model, vocab, src=SOURCE, tgt=TARGET, iv=s2s.NO_SEQ2SEQ_INTERVENTIONS) -> dict[str, np.ndarray]:
    """One forward pass over a fixed source and decoder input [BOS] + tgt, every
    intermediate as numpy (no batch axis)."""
    rec: dict[str, torch.Tensor] = {}
    with torch.no_grad():
        model(torch.tensor([vocab.encode(src)]), torch.tensor([[BOS, *vocab.encode(tgt)]]), interventions=iv, rec=rec)
    return {k: v[0].numpy() for k, v in rec.items()}


def documented_shapes(cfg, S: int, T: int) -> dict[str, tuple[int, ...]]:
    """The module docstring's table, read line by line and evaluated for this config."""
    sizes = {
        "S": S,
        "T": T,
        "nh": cfg.n_head,
        "hs": cfg.d_head,
        "d": cfg.d_model,
        "d_mlp": cfg.d_mlp,
        "V": cfg.vocab_size,
        "nh·hs": cfg.n_head * cfg.d_head,
    }
    shapes = {}
    for name, dims in re.findall(r"^ {4}(\S+)\s+\(([^)]*)\)", s2s.__doc__, flags=re.M):
        for layer in range(cfg.n_layer) if "{l}" in name else [None]:
            shapes[name.replace("{l}", str(layer))] = tuple(sizes[x.strip()] for x in dims.split(","))
    return shapes


def test_names_and_shapes_match_the_documented_table(tiny, vocab):
    tr = translate(tiny, vocab, SOURCE)
    S, T = len(SOURCE), len(tr.decoder_input)
    shapes = documented_shapes(tiny.cfg, S, T)
    names = s2s.trace_names(tiny.cfg.n_layer)
    assert len(names) == len(set(names)) and set(names) == set(tr.cache) == set(shapes)
    for name, arr in tr.cache.items():
        assert arr.shape == shapes[name], name
        assert arr.dtype == np.float32 and not arr.flags.writeable, name
    assert "decoder.blocks.1.cross_attn.hook_pattern" in tr.cache and "encoder.blocks.0.attn.hook_pattern" in tr.cache


def test_encoder_self_attention_is_not_masked(tiny, vocab):
    c = record(tiny, vocab)
    for layer in range(2):
        a = f"encoder.blocks.{layer}.attn."
        assert np.isfinite(c[a + "hook_scores_masked"]).all()
        p = c[a + "hook_pattern"]  # (nh, S, S)
        # later words get weight
        assert (np.triu(p, k=1) > 0).sum() == p.shape[0] * (p.shape[1] * (p.shape[1] - 1) // 2)
        np.testing.assert_allclose(p.sum(-1), 1, atol=1e-5)


def test_decoder_self_attention_is_causal(tiny, vocab):
    c = record(tiny, vocab)
    T = len(TARGET) + 1
    future = ~np.tril(np.ones((T, T), dtype=bool))
    for layer in range(2):
        a = f"decoder.blocks.{layer}.attn."
        assert (np.isneginf(c[a + "hook_scores_masked"]) == future).all()
        assert (c[a + "hook_pattern"][:, future] == 0).all() and (c[a + "hook_pattern"][:, ~future] > 0).all()
        np.testing.assert_allclose(c[a + "hook_pattern"].sum(-1), 1, atol=1e-5)


def test_cross_attention_rows_sum_to_one_over_the_source_and_are_not_causal(tiny, vocab):
    src = "my two black cats eat the white cheeses".split()  # S = 8 ≠ T = 3: a rectangle
    c = record(tiny, vocab, src, ["mes", "deux"])
    for layer in range(2):
        a = f"decoder.blocks.{layer}.cross_attn."
        p = c[a + "hook_pattern"]
        assert p.shape == (4, 3, 8)
        np.testing.assert_allclose(p.sum(-1), 1, atol=1e-5)
        # position 0 reads every source word, even the last
        assert np.isfinite(c[a + "hook_scores_masked"]).all() and (p > 0).all()
        assert c[a + "hook_k"].shape[0] == 8 and c[a + "hook_q"].shape[0] == 3


def test_cross_attention_keys_and_values_come_from_the_encoder(tiny, vocab):
    c = record(tiny, vocab)
    memory = c["encoder.ln_final.hook_normalized"]  # (S, d)
    for layer, blk in enumerate(tiny.decoder.blocks):
        a, W = f"decoder.blocks.{layer}.", blk.cross_attn
        np.testing.assert_allclose(
            c[a + "cross_attn.hook_k"], np.einsum("sd,hdk->shk", memory, W.W_K.numpy()) + W.b_K.numpy(), atol=1e-4
        )
        np.testing.assert_allclose(
            c[a + "cross_attn.hook_v"], np.einsum("sd,hdk->shk", memory, W.W_V.numpy()) + W.b_V.numpy(), atol=1e-4
        )
        np.testing.assert_allclose(
            c[a + "cross_attn.hook_q"],
            np.einsum("td,hdk->thk", c[a + "ln_cross.hook_normalized"], W.W_Q.numpy()) + W.b_Q.numpy(),
            atol=1e-4,
        )
        np.testing.assert_allclose(
            c[a + "hook_resid_cross"], c[a + "hook_resid_mid"] + c[a + "hook_cross_attn_out"], atol=1e-5
        )
        np.testing.assert_allclose(
            c[a + "hook_resid_post"], c[a + "hook_resid_cross"] + c[a + "hook_mlp_out"], atol=1e-5
        )
        np.testing.assert_allclose(
            c[a + "hook_cross_attn_out"], c[a + "cross_attn.hook_result"].sum(1) + W.b_O.numpy(), atol=1e-4
        )
    np.testing.assert_allclose(c["encoder.hook_embed"], tiny.W_E[vocab.encode(SOURCE)].numpy() * np.sqrt(32), rtol=1e-6)
    np.testing.assert_allclose(c["logits"], c["decoder.ln_final.hook_normalized"] @ tiny.W_E.numpy().T, atol=1e-4)


@pytest.mark.parametrize("S,T", [(1, 1), (5, 3), (9, 12)])
def test_cross_attention_equals_sdpa_with_an_explicit_mask(S, T):
    gen = torch.Generator().manual_seed(S * 100 + T)
    q = torch.randn(2, 4, T, 8, generator=gen)
    k, v = torch.randn(2, 4, S, 8, generator=gen), torch.randn(2, 4, S, 8, generator=gen)
    real = torch.ones(2, S, dtype=torch.bool)
    real[1, max(1, S - 2) :] = False  # the second source is padded
    mask = s2s.source_mask(real)  # (2, 1, 1, S)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask.expand(2, 4, T, S))
    torch.testing.assert_close(attention(q, k, v, mask), ref, atol=1e-6, rtol=0)


def test_source_mask_hides_only_the_padding():
    ids = torch.tensor([[5, 6, 7], [8, PAD, PAD]])  # the second source is padded
    real = torch.tensor([[True, True, True], [True, False, False]])
    mask = s2s.source_mask(ids)
    assert mask.shape == (2, 1, 1, 3) and torch.equal(mask[:, 0, 0], real)  # every query sees the same keys
    assert torch.equal(s2s.source_mask(real), mask)


def test_traced_cross_attention_equals_sdpa(tiny, vocab):
    c = record(tiny, vocab)
    for layer in range(2):
        a = f"decoder.blocks.{layer}.cross_attn."
        q, k, v = (torch.tensor(c[a + n]).transpose(0, 1) for n in ("hook_q", "hook_k", "hook_v"))  # (nh, ·, hs)
        full = torch.ones(q.size(1), k.size(1), dtype=torch.bool)  # explicit: every source word visible
        ref = F.scaled_dot_product_attention(q, k, v, attn_mask=full)  # (nh, T, hs)
        np.testing.assert_allclose(c[a + "hook_z"], ref.transpose(0, 1).numpy(), atol=1e-5)


def test_padding_changes_nothing(tiny, vocab):
    """A padded batch gives each phrase the logits it gets alone: padding is masked in
    the encoder and in cross-attention."""
    pairs = [td.reference(p.split()) for p in PHRASES]
    src, tgt_in, _ = tensors(pairs, vocab)
    with torch.no_grad():
        batch = tiny(src, tgt_in)
        for i, p in enumerate(pairs):
            alone = tiny(torch.tensor([vocab.encode(p.source)]), torch.tensor([[BOS, *vocab.encode(p.target)]]))
            torch.testing.assert_close(batch[i, : len(p.target) + 1], alone[0], atol=1e-5, rtol=1e-5)


def test_temperature_divides_every_attention(tiny, vocab):
    c = record(tiny, vocab, iv=s2s.Seq2SeqInterventions(temperature=0.5))
    for a in ("encoder.blocks.1.attn.", "decoder.blocks.0.attn.", "decoder.blocks.1.cross_attn."):
        np.testing.assert_allclose(
            c[a + "hook_scores_scaled"], c[a + "hook_scores_raw"] / np.sqrt(8) / 0.5, rtol=1e-5, atol=1e-6
        )


def test_causal_off_unmasks_only_the_decoder(tiny, vocab):
    base, open_ = record(tiny, vocab), record(tiny, vocab, iv=s2s.Seq2SeqInterventions(causal=False))
    for layer in range(2):
        assert np.isfinite(open_[f"decoder.blocks.{layer}.attn.hook_scores_masked"]).all()
        assert (np.triu(open_[f"decoder.blocks.{layer}.attn.hook_pattern"], k=1).sum(-1)[:, :-1] > 0).all()
    encoder = [name for name in base if name.startswith("encoder.")]
    assert len(encoder) > 20  # every intermediate of both encoder blocks
    for name in encoder:
        assert np.array_equal(base[name], open_[name]), name
    assert not np.allclose(base["logits"][0], open_["logits"][0])  # position 0 now sees later words


@pytest.mark.parametrize(
    "part,prefix",
    [
        ("cross", "decoder.blocks.0.cross_attn."),
        ("decoder", "decoder.blocks.0.attn."),
        ("encoder", "encoder.blocks.0.attn."),
    ],
)
def test_ablation_zeroes_exactly_that_head(tiny, vocab, part, prefix):
    base = record(tiny, vocab)
    cut = record(tiny, vocab, iv=s2s.Seq2SeqInterventions(ablate=frozenset({(part, 0, 1)})))
    assert (cut[prefix + "hook_z"][:, 1] == 0).all() and (cut[prefix + "hook_result"][:, 1] == 0).all()
    np.testing.assert_array_equal(cut[prefix + "hook_z"][:, [0, 2, 3]], base[prefix + "hook_z"][:, [0, 2, 3]])
    # the weights are computed, the output dropped
    np.testing.assert_array_equal(cut[prefix + "hook_pattern"], base[prefix + "hook_pattern"])
    assert not np.allclose(cut["logits"], base["logits"])
    others = [p for p in s2s.PARTS if p != part]
    for other in others:  # the same (layer, head) in the other parts is untouched
        name = {
            "cross": "decoder.blocks.0.cross_attn.hook_z",
            "decoder": "decoder.blocks.0.attn.hook_z",
            "encoder": "encoder.blocks.0.attn.hook_z",
        }[other]
        assert (cut[name][:, 1] != 0).any()


def test_invalid_interventions_raise():
    with pytest.raises(ValueError):
        s2s.Seq2SeqInterventions(temperature=0)
    with pytest.raises(ValueError):
        s2s.Seq2SeqInterventions(ablate=frozenset({("attn", 0, 0)}))


def test_greedy_steps_are_the_traced_logits(tiny, vocab):
    """Each decoding step's top words and probabilities are the softmax of the traced logits
    at that position (causal mask on)."""
    tr = translate(tiny, vocab, SOURCE, top_k=3)
    probs = torch.softmax(torch.tensor(tr["logits"]), -1).numpy()  # (T, V)
    assert len(tr.steps) == len(tr.output) + tr.finished
    for i, step in enumerate(tr.steps):
        assert step.read == tr.decoder_input[i]
        assert step.word == (tr.output[i] if i < len(tr.output) else "[EOS]")
        assert [w for w, _ in step.top] == [vocab.words[j] for j in np.argsort(-probs[i])[:3]]
        np.testing.assert_allclose([p for _, p in step.top], np.sort(probs[i])[::-1][:3], rtol=1e-4, atol=1e-6)


def test_batched_greedy_equals_one_by_one(tiny, vocab):
    pairs = [td.reference(p.split()) for p in PHRASES]
    src, _, _ = tensors(pairs, vocab)
    ids, _ = greedy_decode(tiny, src, 10)
    for i, p in enumerate(pairs):
        alone, _ = greedy_decode(tiny, torch.tensor([vocab.encode(p.source)]), 10)
        n = alone.size(1)
        assert ids[i, :n].tolist() == alone[0].tolist()


def test_threads_get_the_sequential_results(tiny, vocab):
    seq = [translate(tiny, vocab, p.split()) for p in PHRASES * 2]
    with ThreadPoolExecutor(4) as pool:
        par = list(pool.map(lambda p: translate(tiny, vocab, p.split()), PHRASES * 2))
    for a, b in zip(seq, par, strict=True):
        assert a.output == b.output and all(np.array_equal(a[k], b[k]) for k in a.cache)


def test_read_source_flags_unknown_words(vocab):
    src = read_source(vocab, "The Europen economic AREA, teh cta!", 24)
    assert src.words == ("the", "economic", "area")
    assert (
        dict(src.unknown)["europen"][0] == "european"
        and "the" in dict(src.unknown)["teh"]
        and "cat" in dict(src.unknown)["cta"]
    )
    # each unknown word → its closest match
    assert src.suggested == ("the", "european", "economic", "area", "the", "tea")
    assert src.n_ignored == 2 and not src.cut
    assert read_source(vocab, "zzzz qqqq", 24).words == ()
    assert read_source(vocab, "the " * 40, 24).cut and len(read_source(vocab, "the " * 40, 24).words) == 24
    assert len(read_source(vocab, " ".join(f"w{i}x" for i in range(100)), 24).unknown) == MAX_UNKNOWN
    for bad in ("", "  \n "):
        with pytest.raises(SourceInputError):
            read_source(vocab, bad, 24)


def test_alignment_agreement_counts_argmax_hits():
    pattern = np.zeros((2, 4, 3), dtype=np.float32)  # (nh, T, S): 3 words + [EOS]
    pattern[0, [0, 1, 2, 3], [0, 2, 1, 0]] = 1  # head 0: all three words on their gold word
    pattern[1, [0, 1, 2, 3], [0, 0, 0, 0]] = 1  # head 1: everything on word 0
    gold = [(0, 0), (2, 1), (1, 2)]
    np.testing.assert_allclose(alignment_agreement(pattern, gold, 3), [1.0, 1 / 3])
    assert np.isnan(alignment_agreement(pattern, [], 3)).all()


def test_weights_helper_averages_heads_and_layers(tiny, vocab):
    tr = translate(tiny, vocab, SOURCE)
    stack = np.stack([tr[f"decoder.blocks.{layer}.cross_attn.hook_pattern"] for layer in range(2)])  # (L, nh, T, S)
    np.testing.assert_array_equal(xa.weights(tr, "cross", 1, 2), stack[1, 2])
    np.testing.assert_allclose(xa.weights(tr, "cross", 0, None), stack[0].mean(0), rtol=1e-6)
    np.testing.assert_allclose(xa.weights(tr, "cross", None, None), stack.mean((0, 1)), rtol=1e-6)
    np.testing.assert_array_equal(xa.weights(tr, "encoder", 0, 3), tr["encoder.blocks.0.attn.hook_pattern"][3])


def test_save_and_load_round_trip(tiny, vocab, tmp_path):
    save_model(tmp_path / "t", tiny, vocab, "# card\n", {"data_seed": 0})
    lt = load_model(tmp_path / "t")
    assert (
        lt.meta == {"data_seed": 0}
        and lt.card == "# card\n"
        and lt.tokenizer.words == vocab.words
        and lt.tokenizer.n_source == vocab.n_source
    )
    a, b = translate(tiny, vocab, SOURCE), translate(lt.model, lt.tokenizer, SOURCE)
    assert a.output == b.output and np.array_equal(a["logits"], b["logits"])
    assert get_translator(tmp_path / "t") is get_translator(str(tmp_path / "t"))  # loaded once
    cfg = json.loads((tmp_path / "t" / "config.json").read_text())
    (tmp_path / "t" / "config.json").write_text(json.dumps({**cfg, "model_type": "atlas-unknown"}))
    with pytest.raises(ModelLoadError, match="model_type 'atlas-unknown' is not supported"):
        load_model(tmp_path / "t")
    with pytest.raises(ModelLoadError):
        load_model(tmp_path / "missing")


def test_training_command_writes_a_loadable_model(tmp_path):
    args = [
        "--out", str(tmp_path / "m"), "--steps", "4", "--n-train", "400", "--n-test", "20", "--eval-every", "2",
        "--d-model", "16", "--n-layer", "1", "--n-head", "2", "--d-mlp", "32",
    ]
    with redirect_stdout(io.StringIO()):
        assert main(args) == 0
    lt = load_model(tmp_path / "m")
    assert lt.cfg.n_layer == 1 and lt.meta["n_test"] == 20 and "python -m transformer train-translator --out" in lt.card
    assert "--eval assets/models/m" in lt.card and "Held-out exact-match accuracy" in lt.card


def test_bundled_translator_meets_its_card(bundled):
    """The held-out accuracy is ≥ 95%, as the card says; a fresh sample of held-out phrases reproduces it."""
    cfg = json.loads((BUNDLED_TRANSLATOR / "config.json").read_text())
    assert cfg["model_type"] == "atlas-seq2seq" and cfg["training"]["exact_match"] >= 0.95
    card = bundled.card
    n = cfg["training"]["n_test"]
    assert (
        f"**{accuracy_text(cfg['training']['exact_match'], n)}**" in card
        and "python -m transformer train-translator --eval assets/models/translator-en-fr" in card
    )
    acc, misses = exact_match(bundled.model, bundled.tokenizer, td.test_pairs(300, cfg["training"]["data_seed"]))
    assert acc >= 0.95, misses[:5]


def test_eval_command_reproduces_the_accuracy(bundled):
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["--eval", str(BUNDLED_TRANSLATOR), "--n", "200"]) == 0
    acc = float(re.search(r"exact match ([\d.]+)% \([\d,]+ of 200 pairs\)", out.getvalue()).group(1))
    assert acc >= 95.0


def test_bundled_translator_translates_the_classic_example(bundled):
    tr = translate(bundled.model, bundled.tokenizer, SOURCE)
    assert tr.output == tuple(TARGET) and tr.finished
