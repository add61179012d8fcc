"""run_trace: names and shapes, read-only arrays, bad input, truncation, thread safety, the bundled model."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch

import transformer.trace as trace_module
from tests.conftest import SENTENCES
from transformer import Interventions, sinusoidal_encoding
from transformer.loading import load_model
from transformer.trace import MAX_CHARS, TraceInputError, run_trace, run_traces, trace_names


def expected_shapes(cfg, T: int) -> dict[str, tuple[int, ...]]:
    """The module docstring's table, written out from the config."""
    d, nh, hs = cfg.d_model, cfg.n_head, cfg.d_head
    per_block = {
        "hook_resid_pre": (T, d),
        "ln1.hook_normalized": (T, d),
        "attn.hook_q": (T, nh, hs),
        "attn.hook_k": (T, nh, hs),
        "attn.hook_v": (T, nh, hs),
        "attn.hook_scores_raw": (nh, T, T),
        "attn.hook_scores_scaled": (nh, T, T),
        "attn.hook_scores_masked": (nh, T, T),
        "attn.hook_pattern": (nh, T, T),
        "attn.hook_z": (T, nh, hs),
        "attn.hook_concat": (T, nh * hs),
        "attn.hook_result": (T, nh, d),
        "hook_attn_out": (T, d),
        "hook_resid_mid": (T, d),
        "ln2.hook_normalized": (T, d),
        "mlp.hook_pre": (T, cfg.d_mlp),
        "mlp.hook_post": (T, cfg.d_mlp),
        "hook_mlp_out": (T, d),
        "hook_resid_post": (T, d),
    }
    shapes = {
        "hook_embed": (T, d),
        "hook_pos_embed": (T, d),
        "ln_final.hook_normalized": (T, d),
        "logits": (T, cfg.vocab_size),
    }
    for layer in range(cfg.n_layer):
        shapes.update({f"blocks.{layer}.{k}": v for k, v in per_block.items()})
    return shapes


def test_names_and_shapes_match_the_documented_table(tiny_model, tokenizer, tiny_cfg):
    tr = run_trace(tiny_model, tokenizer, SENTENCES[0])
    T = len(tr.encoding)
    shapes = expected_shapes(tiny_cfg, T)
    assert set(trace_names(tiny_cfg)) == set(tr.arrays()) == set(shapes)
    assert len(trace_names(tiny_cfg)) == len(set(trace_names(tiny_cfg)))
    for name, arr in tr.arrays().items():
        assert arr.shape == shapes[name], name
        assert arr.dtype == np.float32, name
        assert not arr.flags.writeable, name
        with pytest.raises(ValueError):
            arr[(0,) * arr.ndim] = 1.0


def test_trace_values_follow_the_architecture(tiny_model, tokenizer, tiny_cfg):
    """Embeddings, residual sums, concat and logits recomputed from the weights."""
    tr = run_trace(tiny_model, tokenizer, SENTENCES[0])
    ids, T = list(tr.encoding.ids), len(tr.encoding)
    m = tiny_model
    assert np.array_equal(tr["hook_embed"], m.W_E[ids].numpy())
    assert np.array_equal(tr["hook_pos_embed"], m.W_pos[:T].numpy())
    np.testing.assert_allclose(tr["blocks.0.hook_resid_pre"], tr["hook_embed"] + tr["hook_pos_embed"], atol=1e-6)
    for layer in range(tiny_cfg.n_layer):
        b = f"blocks.{layer}."
        np.testing.assert_allclose(
            tr[b + "hook_resid_mid"], tr[b + "hook_resid_pre"] + tr[b + "hook_attn_out"], atol=1e-5
        )
        np.testing.assert_allclose(
            tr[b + "hook_resid_post"], tr[b + "hook_resid_mid"] + tr[b + "hook_mlp_out"], atol=1e-5
        )
        assert np.array_equal(tr[b + "attn.hook_concat"], tr[b + "attn.hook_z"].reshape(T, -1))
        if layer + 1 < tiny_cfg.n_layer:
            assert np.array_equal(tr[f"blocks.{layer + 1}.hook_resid_pre"], tr[b + "hook_resid_post"])
    last = tr[f"blocks.{tiny_cfg.n_layer - 1}.hook_resid_post"]
    x = (last - last.mean(-1, keepdims=True)) / np.sqrt(last.var(-1, keepdims=True) + tiny_cfg.ln_eps)
    np.testing.assert_allclose(
        tr["ln_final.hook_normalized"], x * m.ln_final.w.numpy() + m.ln_final.b.numpy(), atol=1e-4
    )
    np.testing.assert_allclose(tr["logits"], tr["ln_final.hook_normalized"] @ m.W_E.numpy().T, atol=1e-4)


def test_sinusoidal_positions_follow_the_formula():
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d))."""
    n, d = 50, 16
    pe = sinusoidal_encoding(n, d).numpy()
    assert pe.shape == (n, d) and pe.dtype == np.float32
    for pos in range(n):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)
            assert abs(pe[pos, 2 * i] - np.sin(angle)) < 1e-6 and abs(pe[pos, 2 * i + 1] - np.cos(angle)) < 1e-6
    assert np.array_equal(pe[0], np.tile([0.0, 1.0], d // 2))


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("text, words", [("", "empty"), ("   \n\t  ", "whitespace"), ("\n", "whitespace")])
def test_unusable_text_gives_a_clear_error(tiny_model, tokenizer, text, words):
    with pytest.raises(TraceInputError, match=words):
        run_trace(tiny_model, tokenizer, text)


def test_text_longer_than_the_context_is_cut(tiny_model, tokenizer, tiny_cfg):
    text = " ".join(SENTENCES) * 3
    n_full = len(tokenizer.encode(text))
    assert n_full > tiny_cfg.n_ctx
    tr = run_trace(tiny_model, tokenizer, text)
    assert len(tr.encoding) == tiny_cfg.n_ctx
    assert tr.truncated and not tr.cut_chars
    assert tr.n_tokens_in == n_full
    assert tr.encoding.ids == tokenizer.encode(text).ids[: tiny_cfg.n_ctx]
    assert text.startswith(tr.encoding.text) and tr.encoding.text.endswith(text[slice(*tr.encoding.offsets[-1])])
    assert tr["logits"].shape[0] == tiny_cfg.n_ctx


def test_text_of_exactly_the_context_is_not_cut(tiny_model, tokenizer, tiny_cfg):
    text = "a" + " a" * (tiny_cfg.n_ctx - 1)
    assert len(tokenizer.encode(text)) == tiny_cfg.n_ctx
    tr = run_trace(tiny_model, tokenizer, text)
    assert not tr.truncated and tr.n_tokens_in == tiny_cfg.n_ctx and tr.encoding.text == text


def test_very_long_text_is_cut_by_characters_first(tiny_model, tokenizer, tiny_cfg):
    text = "x" * (MAX_CHARS + 10)
    tr = run_trace(tiny_model, tokenizer, text)
    assert tr.cut_chars and tr.truncated
    assert len(tr.encoding) == tiny_cfg.n_ctx
    assert tr.n_tokens_in == len(tokenizer.encode(text[:MAX_CHARS]))


@pytest.mark.parametrize(
    "text",
    [
        "\x00\x07\x1b",
        "a\x00b\x07c\x1b[31mred\u202edesrever",
        "I love 🐻 bears 🐻‍❄️!",
        "مرحبا بالعالم — שלום",
        "東京",
        "<script>alert(1)</script>",
    ],
)
def test_odd_characters_trace_fine(tiny_model, tokenizer, text):
    tr = run_trace(tiny_model, tokenizer, text)
    assert len(tr.encoding) > 0 and tr.encoding.text == text
    assert np.isfinite(tr["logits"]).all()


def test_forward_longer_than_the_context_raises_value_error(tiny_model, tiny_cfg):
    with pytest.raises(ValueError, match="longer than the context"):
        tiny_model(torch.zeros(1, tiny_cfg.n_ctx + 1, dtype=torch.long))


# ---------------------------------------------------------------- several texts in one batch


@pytest.mark.parametrize("causal", [True, False])
def test_batched_traces_equal_one_text_at_a_time(tiny_model, tokenizer, causal):
    """run_traces pads to the longest text; each trace must equal a plain forward pass over its own text alone.
    Without the mask, a short text's tokens would read the padding keys (with the causal mask off, every token does)."""
    texts = [SENTENCES[0], "Hi", SENTENCES[1] + " " + SENTENCES[2]]
    iv = Interventions(temperature=0.7, causal=causal)
    traces = run_traces(tiny_model, tokenizer, texts, iv)
    assert len({len(tr.encoding) for tr in traces}) == 3  # three lengths: two of them padded
    for text, tr in zip(texts, traces, strict=True):
        assert tr.encoding == tokenizer.encode(text)
        assert tr.interventions == iv
        rec = {}
        with torch.inference_mode():
            tiny_model(torch.tensor([tr.encoding.ids]), interventions=iv, rec=rec)
        assert set(tr.names) == rec.keys()
        for name, t in rec.items():
            want = t[0].numpy()
            scale = np.abs(want[np.isfinite(want)]).max(initial=1.0)  # float rounding is relative to the largest values
            assert not tr[name].flags.writeable, name
            np.testing.assert_allclose(tr[name], want, rtol=1e-5, atol=1e-6 * scale, err_msg=name)


def test_batched_traces_check_every_text(tiny_model, tokenizer):
    assert run_traces(tiny_model, tokenizer, []) == []
    with pytest.raises(TraceInputError, match="whitespace"):
        run_traces(tiny_model, tokenizer, [SENTENCES[0], "   "])


# ---------------------------------------------------------------- thread safety


@pytest.fixture
def one_torch_thread():
    """As when serving: one intra-op thread per call, so 8 Python threads do not oversubscribe 2 cores."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def test_threads_get_exactly_the_sequential_results(tiny_model, tokenizer, one_torch_thread):
    """8 threads on ONE model, different sentences and interventions, repeated: identical to one-at-a-time."""
    ivs = [
        Interventions(),
        Interventions(temperature=0.5),
        Interventions(causal=False),
        Interventions(ablate=frozenset({(1, 2)})),
    ]
    jobs = [(s, ivs[i % len(ivs)]) for i, s in enumerate(SENTENCES)] * 2
    sequential = [run_trace(tiny_model, tokenizer, s, iv) for s, iv in jobs]
    with ThreadPoolExecutor(max_workers=8) as pool:
        for _ in range(3):
            parallel = list(pool.map(lambda job: run_trace(tiny_model, tokenizer, *job), jobs))
            for seq, par in zip(sequential, parallel, strict=True):
                assert par.encoding == seq.encoding
                assert par.names == seq.names
                for name in seq.names:
                    assert np.array_equal(par[name], seq[name]), name


# ---------------------------------------------------------------- the bundled model


@pytest.fixture(scope="module")
def bundled():
    return load_model("shakespeare-gpt")


def test_bundled_model_meets_the_spec(bundled):
    cfg = bundled.cfg
    assert cfg.pos_encoding == "sinusoidal" and cfg.n_layer >= 2 and cfg.n_head >= 4 and cfg.n_ctx >= 256
    assert sum(f.stat().st_size for f in bundled.path.iterdir()) <= 10_000_000  # ≤ 10 MB on disk
    assert not any(p.requires_grad for p in bundled.model.parameters()) and not bundled.model.training


def test_bundled_model_traces_a_full_context(bundled):
    tr = run_trace(bundled.model, bundled.tokenizer, "To be, or not to be, that is the question: " * 40)
    assert len(tr.encoding) == bundled.cfg.n_ctx and tr.truncated
    np.testing.assert_allclose(tr[f"blocks.{bundled.cfg.n_layer - 1}.attn.hook_pattern"].sum(-1), 1.0, atol=1e-5)


def test_bundled_model_in_threads(bundled, one_torch_thread):
    texts = SENTENCES  # 8 texts
    sequential = [run_trace(bundled.model, bundled.tokenizer, t) for t in texts]
    with ThreadPoolExecutor(max_workers=8) as pool:
        parallel = list(pool.map(lambda t: run_trace(bundled.model, bundled.tokenizer, t), texts))
    for seq, par in zip(sequential, parallel, strict=True):
        for name in seq.names:
            assert np.array_equal(par[name], seq[name]), name


def test_a_trace_runs_its_blocks_as_far_as_it_is_read(tiny_model, tokenizer, tiny_cfg):
    """run_trace runs the embedding; reading layer l runs the blocks up to l and no further. A trace keeps the residual
    stream and patterns of every layer run; the rest of a layer, recomputed from the layer's input when read, equals
    what one full forward pass records, to the bit."""
    assert tiny_cfg.n_layer == 3
    iv = Interventions(temperature=0.8, ablate=frozenset({(1, 0)}))
    tr = run_trace(tiny_model, tokenizer, SENTENCES[1], iv)
    assert tr.forward.done == 0 and "blocks.0.hook_resid_post" not in tr.cache
    rec = {}
    with torch.inference_mode():
        tiny_model(torch.tensor([tr.encoding.ids]), interventions=iv, rec=rec)
    assert np.array_equal(tr["blocks.1.attn.hook_pattern"], rec["blocks.1.attn.hook_pattern"][0].numpy())
    assert (
        tr.forward.done == 2
        and "blocks.2.hook_resid_pre" in tr.cache
        and "blocks.2.attn.hook_pattern" not in tr.cache
    )
    assert "blocks.1.attn.hook_q" not in tr.cache and not tr._open  # a kept name read: no layer's internals recorded
    assert np.array_equal(tr["blocks.2.attn.hook_q"], rec["blocks.2.attn.hook_q"][0].numpy())
    # an internal read: its block ran recording everything, and stays open
    assert tr.forward.done == 3 and list(tr._open) == [2]
    for layer in (2, 1, 0, 2):  # opening a third layer closes the least recently read one
        for name in (
            f"blocks.{layer}.attn.hook_q",
            f"blocks.{layer}.attn.hook_scores_raw",
            f"blocks.{layer}.mlp.hook_post",
            f"blocks.{layer}.attn.hook_z",
        ):
            assert np.array_equal(tr[name], rec[name][0].numpy()), name
        assert len(tr._open) <= 2
    assert tr.forward.done == 3 and "ln_final.hook_normalized" not in tr.cache
    assert (
        np.array_equal(tr["ln_final.hook_normalized"], rec["ln_final.hook_normalized"][0].numpy())
        and tr.forward.done == 4
    )
    with pytest.raises(KeyError):
        tr["blocks.9.attn.hook_q"]


def test_a_growing_trace_counts_its_bytes(tiny_model, tokenizer, tiny_cfg):
    """nbytes is what the trace holds now: it grows as blocks run and layers open, and equals the arrays it holds."""
    tr = run_trace(tiny_model, tokenizer, SENTENCES[2])

    def held() -> int:
        return (
            sum(a.nbytes for a in tr.cache.values())
            + sum(a.nbytes for arrays in tr._open.values() for a in arrays.values())
            + sum(a.nbytes for a in tr._logits)
        )

    sizes = [tr.nbytes]
    for name in ("blocks.0.attn.hook_pattern", "blocks.2.attn.hook_q", "blocks.1.mlp.hook_post", "logits"):
        tr[name]
        assert tr.nbytes == held(), name
        sizes.append(tr.nbytes)
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]
    tr["blocks.0.attn.hook_q"]  # a third open layer: the least recently read one closes
    assert tr.nbytes == held() and len(tr._open) == 2


def test_threads_reading_one_trace_run_each_block_once(tiny_model, tokenizer, monkeypatch):
    """Sessions share a cached trace: many threads reading it at once run each block
    once and all read the same arrays."""
    calls = []
    original = trace_module.run_block
    monkeypatch.setattr(
        trace_module,
        "run_block",
        lambda model, x, layer, iv, rec, context=None: (
            calls.append(layer) or original(model, x, layer, iv, rec, context)
        ),
    )
    tr = run_trace(tiny_model, tokenizer, SENTENCES[3])
    with ThreadPoolExecutor(max_workers=8) as pool:
        got = list(pool.map(lambda i: tr[f"blocks.{i % 3}.attn.hook_pattern"], range(24)))
    assert sorted(calls) == [0, 1, 2]
    assert all(got[i] is got[i % 3] for i in range(24))


def test_logits_are_computed_when_first_read(tiny_model, tokenizer, tiny_cfg):
    """run_trace skips the unembedding; the first read computes LN(x)·W_U, equal to the forward pass's logits, once."""
    tr = run_trace(tiny_model, tokenizer, SENTENCES[0], Interventions(temperature=0.7))
    assert "logits" in tr and "logits" not in tr.cache and not tr._logits
    with torch.inference_mode():
        # (T, vocab)
        want = tiny_model(torch.tensor([tr.encoding.ids]), interventions=Interventions(temperature=0.7))[0].numpy()
    tr["ln_final.hook_normalized"]  # every block has run: what is left to hold is the logits
    before = tr.nbytes
    got = tr["logits"]
    assert tr.nbytes == before + len(tr.encoding) * tiny_cfg.vocab_size * 4
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert tr["logits"] is got and not got.flags.writeable  # computed once, read-only


def test_logits_at_one_position_unembed_only_that_row(tiny_model, tokenizer, tiny_cfg):
    """The Next token page reads one position's logits: the forward pass's logits at that position, without computing
    (or holding) every position's; once every position's are held, their row itself."""
    tr = run_trace(tiny_model, tokenizer, SENTENCES[0], Interventions(temperature=0.7))
    with torch.inference_mode():
        # (T, vocab)
        want = tiny_model(torch.tensor([tr.encoding.ids]), interventions=Interventions(temperature=0.7))[0].numpy()
    T = len(tr.encoding)
    for pos in (0, T // 2, T - 1):
        np.testing.assert_allclose(tr.logits_at(pos), want[pos], rtol=1e-5, atol=1e-6)
    assert not tr._logits  # nothing of (T, vocab) computed or kept
    full = tr["logits"]
    assert np.shares_memory(tr.logits_at(2), full)
