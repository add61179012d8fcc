"""Shortcuts (transformer.shortcuts) against a full fresh recomputation: τ on one head or on every head's weights (the
Tempered view) from recorded scores, a trace derived under ablations from a trace without them, a decoder's trace
extended from a shorter text's, and trace_from's choice among traces at hand. Small random GPT, Llama (GQA, RoPE) and
BERT models, and once SmolLM2."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import SENTENCES, small_model
from tests.counting import block_calls
from transformer import Interventions, run_trace
from transformer.loading import load_model
from transformer.shortcuts import (
    TEMPERED,
    Tempered,
    common_prefix,
    derive,
    extend,
    shared_layers,
    tempered_pattern,
    trace_from,
)
from transformer.trace import encode_for_model, token_limit

TEXT = SENTENCES[2]  # "ROMEO: But soft, what light through yonder window breaks?"


@pytest.fixture(scope="module")
def models(tiny_model, tokenizer):
    """Three families: GPT (3 layers, sinusoidal), Llama (4 layers, 2 key/value heads, RoPE), BERT (4 layers)."""
    return {
        "gpt": tiny_model,
        "llama": small_model("llama", tokenizer, 4, seed=1),
        "bert": small_model("bert", tokenizer, 4, seed=2),
    }


def assert_traces_equal(got, want, exact: bool, names=None):
    """Every name (or `names`) of two traces: equal to the bit, or to float32 rounding (relative to the array's
    size)."""
    names = want.names if names is None else names
    for name in names:
        a, b = got[name], want[name]
        if exact:
            np.testing.assert_array_equal(a, b, err_msg=name)
        else:
            finite = np.isfinite(b)
            np.testing.assert_array_equal(np.isneginf(a), np.isneginf(b), err_msg=name)  # the same entries masked
            scale = float(np.abs(b[finite]).max(initial=1.0))
            np.testing.assert_allclose(a[finite], b[finite], rtol=1e-4, atol=1e-5 * scale, err_msg=name)
    assert names


# ---- τ on one head: the recorded raw scores / √d_head / τ, masked, softmaxed ----


@pytest.mark.parametrize("family", ["gpt", "llama", "bert"])
def test_tempered_pattern_is_the_model_run_with_tau_on_that_head(models, tokenizer, family):
    model = models[family]
    base = run_trace(model, tokenizer, TEXT)
    for layer, head, tau in ((0, 1, 0.5), (2, 3, 3.0), (1, 0, 0.05)):
        whole = run_trace(model, tokenizer, TEXT, Interventions(head_temperature=((layer, head, tau),)))
        base[f"blocks.{layer}.attn.hook_scores_raw"]  # the page has read this layer's scores
        with block_calls(model) as calls:
            got = tempered_pattern(base, layer, head, tau)
        assert calls == []  # no block runs
        np.testing.assert_array_equal(got, whole[f"blocks.{layer}.attn.hook_pattern"][head])
        assert not np.array_equal(got, base[f"blocks.{layer}.attn.hook_pattern"][head])  # τ changed the weights


def test_tempered_pattern_of_a_trace_run_at_another_temperature(models, tokenizer):
    """The trace was run at τ = 2 everywhere: one head at τ = 0.5 is that head alone changed (not 2 · 0.5)."""
    model = models["llama"]
    hot = run_trace(model, tokenizer, TEXT, Interventions(temperature=2.0))
    whole = run_trace(model, tokenizer, TEXT, Interventions(temperature=2.0, head_temperature=((1, 2, 0.5),)))
    np.testing.assert_array_equal(tempered_pattern(hot, 1, 2, 0.5), whole["blocks.1.attn.hook_pattern"][2])


# ---- a trace seen with τ on every head's weights (Tempered) ----


@pytest.mark.parametrize("family", ["gpt", "llama", "bert"])
def test_tempered_view_is_each_layer_run_with_tau_on_its_heads_and_the_trace_elsewhere(models, tokenizer, family):
    """Each layer's tempered names equal a forward pass with τ on that layer's heads alone (the layers before it are
    unchanged), to the bit; every other name equals a fresh trace at τ = 1."""
    model, tau = models[family], 0.4
    n_layer = model.cfg.n_layer
    view = Tempered(run_trace(model, tokenizer, TEXT), tau)
    plain = run_trace(model, tokenizer, TEXT)  # τ = 1, run on its own
    for layer in (0, n_layer - 1):
        alone = run_trace(model, tokenizer, TEXT, Interventions(head_temperature=((layer, None, tau),)))
        for name in TEMPERED:
            got = view[f"blocks.{layer}.{name}"]
            np.testing.assert_array_equal(got, alone[f"blocks.{layer}.{name}"], err_msg=name)
            assert not np.array_equal(got, plain[f"blocks.{layer}.{name}"])  # τ changed them
    untempered = [name for name in view.names if not name.endswith(TEMPERED)]
    assert len(untempered) == len(view.names) - len(TEMPERED) * n_layer
    assert_traces_equal(view, plain, exact=True, names=untempered)


def test_tempered_view_reads_recorded_scores_and_answers_like_a_trace(models, tokenizer):
    model = models["llama"]
    base = run_trace(model, tokenizer, TEXT)
    view = Tempered(base, 2.5)
    base["blocks.2.attn.hook_scores_raw"]  # the layer a page shows: its blocks have run
    with block_calls(model) as calls:
        weights = view["blocks.2.attn.hook_pattern"]  # (nh, T, T)
    assert calls == []  # no block runs
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=1e-5)
    scaled = base["blocks.2.attn.hook_scores_scaled"].astype(np.float64)  # (nh, T, T) at τ = 1
    e = np.exp(np.where(np.tril(np.ones(scaled.shape[1:], bool)), scaled / 2.5, -np.inf))
    np.testing.assert_allclose(weights, e / e.sum(axis=-1, keepdims=True), rtol=1e-5, atol=1e-7)  # softmax(S / τ)
    same = ("encoding", "cfg", "names", "interventions", "n_tokens_in", "truncated")
    assert [getattr(view, a) for a in same] == [getattr(base, a) for a in same]
    assert "blocks.2.attn.hook_pattern" in view and "blocks.9.attn.hook_pattern" not in view
    for got, want in zip(view.head_qkv(2, 3), base.head_qkv(2, 3), strict=True):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(view.logits_at(4), base.logits_at(4))
    assert view.head_temperature(2, 3) == 2.5 and base.head_temperature(2, 3) == 1.0
    hot = run_trace(model, tokenizer, TEXT, Interventions(head_temperature=((2, 3, 0.7),)))
    assert hot.head_temperature(2, 3) == pytest.approx(0.7) and hot.head_temperature(2, 2) == 1.0
    assert view.nbytes == base.nbytes + 3 * weights.nbytes
    arrays = view.arrays()
    assert arrays.keys() == set(base.names)
    n_layer = model.cfg.n_layer
    assert view.nbytes == base.nbytes + (n_layer + 2) * weights.nbytes  # every layer's weights, the last layer's scores
    np.testing.assert_array_equal(arrays["blocks.1.attn.hook_pattern"][0], tempered_pattern(base, 1, 0, 2.5))
    np.testing.assert_array_equal(arrays["blocks.1.hook_resid_post"], base["blocks.1.hook_resid_post"])
    assert view.run_blocks() is view


def test_every_layers_tempered_weights_cost_one_pass_once(models, tokenizer):
    """A page that shows every layer's weights at a new τ (Multi-head's averages, Encoder vs decoder) reads each
    layer's raw scores once (Trace.peek: the block runs again recording that name alone, not every internal), and a
    second τ reads them again without running anything."""
    model = models["llama"]
    base, fresh = run_trace(model, tokenizer, TEXT).run_blocks(), run_trace(model, tokenizer, TEXT)
    T, n_layer, before = len(base.encoding), model.cfg.n_layer, base.nbytes
    with block_calls(model) as calls:
        first = [Tempered(base, 0.5)[f"blocks.{layer}.attn.hook_pattern"] for layer in range(n_layer)]
    assert calls == [(layer, T) for layer in range(n_layer)]
    with block_calls(model) as calls:
        second = [Tempered(base, 2.0)[f"blocks.{layer}.attn.hook_pattern"] for layer in range(n_layer)]
    assert calls == []
    raw = [fresh[f"blocks.{layer}.attn.hook_scores_raw"] for layer in range(n_layer)]  # opened: every internal
    for layer in range(n_layer):
        np.testing.assert_array_equal(base.peek(f"blocks.{layer}.attn.hook_scores_raw"), raw[layer])
        np.testing.assert_array_equal(first[layer], tempered_pattern(fresh, layer, slice(None), 0.5))
        np.testing.assert_array_equal(second[layer], tempered_pattern(fresh, layer, slice(None), 2.0))
    assert base.nbytes == before + sum(r.nbytes for r in raw)  # the scores kept are counted


# ---- ablation at layer L: blocks < L are the base trace's ----


def test_shared_layers_is_the_first_layer_an_intervention_changes():
    none = Interventions()
    assert shared_layers(none, Interventions(ablate=frozenset({(3, 1)})), 6, 4) == 3
    assert shared_layers(none, Interventions(head_temperature=((2, None, 0.5),), ablate=frozenset({(4, 0)})), 6, 4) == 2
    assert shared_layers(none, Interventions(temperature=0.5), 6, 4) == 0
    assert shared_layers(none, Interventions(causal=False), 6, 4) == 0
    assert shared_layers(none, Interventions(head_temperature=((1, 0, 1.0),)), 6, 4) == 6  # τ = 1 changes nothing
    same_pair = Interventions(ablate=frozenset({(2, 1)}))
    assert shared_layers(same_pair, Interventions(ablate=frozenset({(2, 1), (5, 0)})), 6, 4) == 5


@pytest.mark.parametrize("family", ["gpt", "llama", "bert"])
def test_derive_shares_the_blocks_below_the_ablation_and_equals_a_fresh_trace(models, tokenizer, family):
    model = models[family]
    n_layer = model.cfg.n_layer
    L = n_layer - 1
    iv = Interventions(ablate=frozenset({(L, 1), (L, 3)}))
    base = run_trace(model, tokenizer, TEXT).run_blocks()
    derived = derive(base, iv)
    assert derived.forward.done == L and derived.interventions == iv
    shared = [name for name in base.cache if name.startswith(tuple(f"blocks.{lay}." for lay in range(L)))]
    assert shared and all(derived.cache[name] is base.cache[name] for name in shared)  # the same arrays, not copies
    assert derived.cache[f"blocks.{L}.hook_resid_pre"] is base.cache[f"blocks.{L}.hook_resid_pre"]
    with block_calls(model) as calls:
        derived.run_blocks()
    assert calls == [(L, len(base.encoding))]  # only block L runs
    assert_traces_equal(derived, run_trace(model, tokenizer, TEXT, iv), exact=True)


def test_derive_from_a_trace_that_ran_part_of_the_way(models, tokenizer):
    """The base ran blocks 0 and 1 only: the derived trace shares those and runs the rest itself."""
    model = models["llama"]
    iv = Interventions(head_temperature=((3, 0, 0.3),), ablate=frozenset({(3, 2)}))
    base = run_trace(model, tokenizer, TEXT)
    base["blocks.1.attn.hook_pattern"]
    derived = derive(base, iv)
    assert derived.forward.done == 2 and base.forward.done == 2  # the base was not run further
    assert_traces_equal(derived, run_trace(model, tokenizer, TEXT, iv), exact=True)


def test_derive_with_the_causal_mask_off_shares_only_the_embedding(models, tokenizer):
    model = models["gpt"]
    base = run_trace(model, tokenizer, TEXT).run_blocks()
    derived = derive(base, Interventions(causal=False))
    assert derived.forward.done == 0 and "blocks.0.hook_resid_post" not in derived.cache
    assert_traces_equal(derived, run_trace(model, tokenizer, TEXT, Interventions(causal=False)), exact=True)


# ---- a decoder's text extended: the common first tokens are the shorter text's ----


def encoded(model, tokenizer, text):
    return encode_for_model(tokenizer, text, token_limit(model.cfg))


@pytest.mark.parametrize("family", ["gpt", "llama"])
@pytest.mark.parametrize(
    "short", ["ROMEO: But soft, what light", "ROMEO: But soft, what light through yonder window breaks? Juliet"]
)
def test_extend_equals_a_fresh_trace(models, tokenizer, family, short):
    """Typing on (the longer text extends the shorter) and deleting (the shorter text from the longer one's trace)."""
    model = models[family]
    prefix = run_trace(model, tokenizer, short).run_blocks()
    enc = encoded(model, tokenizer, TEXT)
    P = min(common_prefix(prefix.encoding.ids, enc[0].ids), len(enc[0]) - 1)
    assert 0 < P < len(enc[0])
    with block_calls(model) as calls:
        extended = extend(prefix, *enc)
    assert calls == [] and extended.forward.done == 0  # blocks run when read, as in any trace
    start = model.cfg.n_layer - 1
    with block_calls(model) as calls:
        extended.run_blocks()
    assert calls == [
        *((layer, len(enc[0]) - P) for layer in range(start)),
        (start, len(enc[0])),
    ]  # the new tokens alone, then all
    fresh = run_trace(model, tokenizer, TEXT)
    # float32 rounding: the new tokens' products have other shapes than a fresh run's (sums in another order)
    assert_traces_equal(extended, fresh, exact=False)
    later = np.triu(np.ones((len(enc[0]),) * 2, dtype=bool), k=1)  # key j > query i
    assert (extended["blocks.0.attn.hook_pattern"][:, later] == 0).all()  # a prefix row's padding is exactly 0


def test_extend_when_the_last_token_of_the_shorter_text_changes(models, tokenizer):
    """BPE may merge the typed letters into the shorter text's last token: only the common token ids are taken."""
    model = models["llama"]
    short, text = "ROMEO: Bu", "ROMEO: But soft, what light"  # … "␣", "B", "u" and … "␣", "B", "ut"
    prefix = run_trace(model, tokenizer, short)
    prefix["blocks.2.hook_resid_post"]  # blocks 0–2 ran
    enc = encoded(model, tokenizer, text)
    P = common_prefix(prefix.encoding.ids, enc[0].ids)
    assert P < len(prefix.encoding)  # the boundary token differs
    extended = extend(prefix, *enc)
    assert extended.forward.start == 3 and extended.forward.P == P
    assert_traces_equal(extended, run_trace(model, tokenizer, text), exact=False)  # layer by layer: internals first


def test_extend_keeps_the_prefix_interventions(models, tokenizer):
    model = models["gpt"]
    iv = Interventions(temperature=0.7, ablate=frozenset({(1, 2)}))
    prefix = run_trace(model, tokenizer, "ROMEO: But soft,", iv).run_blocks()
    extended = extend(prefix, *encoded(model, tokenizer, TEXT))
    assert extended.interventions == iv
    assert_traces_equal(extended, run_trace(model, tokenizer, TEXT, iv), exact=False)


# ---- trace_from: which trace at hand it takes ----


def test_trace_from_picks_what_saves_most(models, tokenizer):
    gpt, bert = models["gpt"], models["bert"]
    iv = Interventions(ablate=frozenset({(2, 0)}))
    same_text = run_trace(gpt, tokenizer, TEXT).run_blocks()
    shorter = run_trace(gpt, tokenizer, "ROMEO: But soft, what").run_blocks()
    other_model = run_trace(models["llama"], tokenizer, TEXT).run_blocks()
    got = trace_from(gpt, tokenizer, TEXT, iv, [shorter, other_model, same_text])
    assert (
        got.forward.done == 2 and got.cache["blocks.1.hook_resid_post"] is same_text.cache["blocks.1.hook_resid_post"]
    )
    longer = TEXT + " Juliet"
    got = trace_from(
        gpt, tokenizer, longer, Interventions(), [shorter, other_model, same_text]
    )  # extends the longer prefix
    assert got.forward.start == 2 and got.forward.P == len(same_text.encoding)
    assert np.array_equal(got["blocks.0.hook_resid_post"][:10], same_text["blocks.0.hook_resid_post"][:10])
    assert_traces_equal(got, run_trace(gpt, tokenizer, longer), exact=False)
    assert (
        trace_from(gpt, tokenizer, TEXT, Interventions(causal=False), [same_text, shorter]).forward.done == 0
    )  # fresh
    assert trace_from(gpt, tokenizer, TEXT, iv, [other_model]).forward.done == 0  # another model's trace is not taken
    bert_short = run_trace(
        bert, tokenizer, "ROMEO: But soft, what"
    ).run_blocks()  # an encoder: a later token changes every row
    got = trace_from(bert, tokenizer, TEXT, Interventions(), [bert_short])
    assert got.forward.done == 0
    assert_traces_equal(got, run_trace(bert, tokenizer, TEXT), exact=True)


# ---- the real SmolLM2 (30 layers, GQA, RoPE) ----


@pytest.mark.slow
def test_smollm2_shortcuts_equal_fresh_traces():
    lm = load_model("smollm2-135m")
    model, tok = lm.model, lm.tokenizer
    text = "The animal didn't cross the street because it was too tired"
    base = run_trace(model, tok, text)
    base["blocks.13.attn.hook_scores_raw"]
    whole = run_trace(model, tok, text, Interventions(head_temperature=((13, 8, 0.4),)))
    np.testing.assert_array_equal(tempered_pattern(base, 13, 8, 0.4), whole["blocks.13.attn.hook_pattern"][8])
    layer_13 = run_trace(model, tok, text, Interventions(head_temperature=((13, None, 0.4),)))
    view = Tempered(base, 0.4)
    for name in TEMPERED:
        np.testing.assert_array_equal(view[f"blocks.13.{name}"], layer_13[f"blocks.13.{name}"], err_msg=name)
    base.run_blocks()
    iv = Interventions(ablate=frozenset({(25, 3)}))
    derived = derive(base, iv)
    assert derived.forward.done == 25
    kept = [n for n in base.names if n.endswith(("hook_resid_post", "attn.hook_pattern"))] + [
        "logits",
        "blocks.27.attn.hook_q",
    ]
    assert_traces_equal(derived, run_trace(model, tok, text, iv), exact=True, names=kept)
    longer = text + " to walk"
    extended = extend(base, *encoded(model, tok, longer))
    assert extended.forward.start == 29
    assert_traces_equal(extended, run_trace(model, tok, longer), exact=False, names=kept)
