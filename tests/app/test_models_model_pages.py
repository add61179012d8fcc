"""Six pages on the two real models (SmolLM2: Llama family; MiniLM: BERT encoder), through AppTest: every tab opens,
the main controls move, and the numbers drawn equal independent computations on the models' own traces and weights.

Pages: Tokens & embeddings, Positional encoding, Multi-head, Inside a block, Next token, Context.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from figures.common import esc
from figures.multihead import mosaic_slices
from lessons import head_roles
from tests.app.conftest import MINI, SENTENCE, SMOL
from tests.apptest_utils import array, assert_ok, chart, charts_by_key, each_tab, open_tab, page_path, run_page, texts
from transformer import Interventions, run_trace, run_traces
from transformer import head_scores as hs
from transformer.loading import missing_real_models
from ui import widths
from ui.caches import heads as cached_heads

pytestmark = pytest.mark.skipif(bool(missing_real_models()), reason="the real models are not installed")



def page(name: str, model: str, **query):
    at = run_page(page_path(name), model=model, sentence=SENTENCE, **query)
    assert_ok(at)
    assert at.selectbox(key="w_model").value == model
    return at


def np_softmax(z) -> np.ndarray:
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def ys(at, key: str) -> list[np.ndarray]:
    return [array(d["y"]) for d in chart(at, key)["data"]]


# ---- Tokens & embeddings ----


def tokens_part(at, n: int):
    return open_tab(at, "tokens_part", f"{n} ·")


@pytest.mark.slow
def test_tokens_on_smollm2_byte_level_bpe_and_king_man_woman(smol):
    at = page("1_Tokens_and_embeddings", SMOL)
    enc = smol.tokenizer.encode(SENTENCE)
    assert [t.split("<br>")[0] for t in chart(at, "tokens_chips")["data"][0]["text"]] == [esc(s) for s in enc.labels]
    W = smol.model.W_E.detach().numpy().astype(np.float64)
    np.testing.assert_array_equal(array(chart(tokens_part(at, 2), "tokens_embed")["data"][0]["z"]), W[list(enc.ids)])
    # king − man + woman: every word is one token here, and the nearest token is ␣queen (by brute force over W_E, every
    # spelling of the three words left out: King, ␣kings, …)
    tokens_part(at, 6)
    assert [at.text_input(key=f"tokens_analogy_{n}").value for n in "abc"] == ["king", "man", "woman"]
    unit = W / np.linalg.norm(W, axis=1, keepdims=True)
    a, b, c = (smol.tokenizer.encode(" " + w).ids[0] for w in ("king", "man", "woman"))
    cos = unit @ (v := unit[a] - unit[b] + unit[c]) / np.linalg.norm(v)
    spelt = {w + end for w in ("king", "man", "woman") for end in ("", "s", "es")}
    cos[[i for i in range(len(W)) if smol.tokenizer.decode([i]).strip().lower() in spelt] + [a, b, c]] = -np.inf
    top = np.argsort(-cos)[:10]
    bars = chart(at, "tokens_analogy")["data"][0]
    assert bars["text"][0] == "␣queen" == smol.tokenizer.vocab_labels()[top[0]]
    np.testing.assert_allclose(array(bars["y"]), cos[top], rtol=1e-4)
    assert "gives ␣queen here" in texts(at) and "byte-pair encoding" in texts(at)
    # the controls: the map's size and 3-D, another token's neighbours
    tokens_part(at, 3).slider(key="tokens_n_vocab").set_value(1000).run()
    at.toggle(key="tokens_pca_3d").set_value(True).run()
    assert_ok(at)
    assert (
        chart(at, "tokens_pca")["data"][0]["type"] == "scatter3d"
        and len(chart(at, "tokens_pca")["data"][0]["hovertext"]) == 1000
    )
    tokens_part(at, 5).selectbox(key="tokens_query").set_value(1).run()
    assert_ok(at)
    q = enc.ids[1]
    cos = unit @ unit[q]
    cos[q] = -np.inf
    np.testing.assert_allclose(
        array(chart(at, "tokens_neighbours")["data"][0]["y"]), np.sort(cos)[::-1][:10], rtol=1e-4
    )


def test_tokens_on_minilm_wordpiece(mini):
    at = page("1_Tokens_and_embeddings", MINI)
    labels = [t.split("<br>")[0] for t in chart(at, "tokens_chips")["data"][0]["text"]]
    assert labels[0] == "[CLS]" and labels[-1] == "[SEP]" and "didn" in labels
    shown = texts(at)
    assert "WordPiece" in shown and "##" in shown and "[CLS]" in shown and "[UNK]" in shown
    assert "In this vocabulary bank is a single token" in texts(tokens_part(at, 2))
    vocab = chart(tokens_part(at, 3), "tokens_pca")["data"][0]["hovertext"]
    assert vocab[:3] == ["the", "of", "and"] and not any(v.startswith("[") for v in vocab)  # words, not [unused…] slots
    shown = texts(tokens_part(at, 6))
    assert "tokens_analogy_space" not in [c.key for c in at.checkbox] and "no leading-space tokens" in shown
    assert chart(at, "tokens_analogy")["data"][0]["text"][0] == "queen" and "gives queen here" in shown
    at.text_input(key="tokens_analogy_c").input("Walking").run()  # lowercased; one WordPiece token?
    assert_ok(at)
    assert "tokens_analogy" in charts_by_key(at) or "must be ONE token" in texts(at)


# ---- Positional encoding ----


def test_positions_on_smollm2_say_there_is_no_position_table():
    at = page("2_Positional_encoding", SMOL)
    assert "rotary position embedding (RoPE)" in texts(at) and "no position vectors to add" in texts(at)
    assert (
        {"positions_pe", "positions_waves", "positions_bits", "positions_pe_rows", "positions_similarity"}
        == set(charts_by_key(at))
    )  # the sinusoids, no sentence panels
    assert at.slider(key="positions_d").value == 128  # d_model 576 is wider than the slider


def test_positions_on_minilm_add_token_types_and_a_layernorm(mini):
    at = page("2_Positional_encoding", MINI)
    tr = run_trace(mini.model, mini.tokenizer, SENTENCE)
    T = len(tr.encoding)
    z = {
        k: array(chart(at, f"positions_sum_{k}")["data"][0]["z"]).astype(np.float64)
        for k in ("embed", "pos", "type", "input")
    }
    m = mini.model
    np.testing.assert_array_equal(z["embed"], m.W_E.detach().numpy()[list(tr.encoding.ids)])
    np.testing.assert_array_equal(z["pos"], m.W_pos.detach().numpy()[:T])
    np.testing.assert_array_equal(z["type"], np.broadcast_to(m.W_type.detach().numpy()[0], (T, 384)))  # all sentence A
    s = z["embed"] + z["pos"] + z["type"]  # LN(sum) = (s − μ)/√(σ² + ε)·w + b, by hand
    ln = (
        (s - s.mean(1, keepdims=True))
        / np.sqrt(s.var(1, keepdims=True) + mini.cfg.ln_eps)
        * m.ln_embed.w.detach().numpy()
        + m.ln_embed.b.detach().numpy()
    )
    np.testing.assert_allclose(z["input"], ln, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(z["input"], tr["ln_embed.hook_normalized"])
    assert (
        "*learned* its 512 position vectors" in texts(at)
        and "this app reads at most 256" in texts(at)
        and "token type" in texts(at)
    )


# ---- Multi-head ----


@pytest.mark.slow
def test_multihead_on_smollm2(smol):
    at = page("7_Multi_head", SMOL, layer="13", head="8")
    assert "3 key/value heads" in texts(at) and "grouped-query attention" in texts(at)
    assert len(list(each_tab(at))) == 5  # every tab opens
    tr = run_trace(smol.model, smol.tokenizer, SENTENCE)
    at = open_tab(at, "multihead_part", "1 ·")
    maps = chart(at, "multihead_heads")
    assert len(maps["data"]) == 9
    w = tr["blocks.13.attn.hook_pattern"]
    T = w.shape[-1]
    for h, d in enumerate(maps["data"]):
        np.testing.assert_allclose(
            array(d["z"]), np.where(np.tril(np.ones((T, T), dtype=bool)), w[h], np.nan), rtol=1e-5, atol=1e-7
        )
    # concat·W_O with no bias: 9 shares and their sum
    at = open_tab(at, "multihead_part", "4 ·")
    out = array(chart(at, "multihead_out")["data"][0]["z"])
    assert out.shape == (10, 576) and "no bias b_O" in texts(at)
    np.testing.assert_allclose(out[:9].sum(0), tr["blocks.13.hook_attn_out"][T - 1], rtol=1e-3, atol=1e-4)
    # switching heads off: the next-token probabilities of an independent ablated pass
    at = open_tab(at, "multihead_part", "5 ·")
    at.multiselect(key="multihead_ablate").set_value(["13.8", "0.2"]).run()
    assert_ok(at)
    after = run_trace(smol.model, smol.tokenizer, SENTENCE, Interventions(ablate=frozenset({(13, 8), (0, 2)})))
    p, q = np_softmax(tr["logits"][-1]), np_softmax(after["logits"][-1])
    bars = chart(at, "multihead_ablation")["data"]
    ids = list(np.argsort(-p)[:8])
    np.testing.assert_allclose(array(bars[0]["y"])[:8], p[ids], rtol=1e-3)
    np.testing.assert_allclose(array(bars[1]["y"])[:8], q[ids], rtol=1e-3)
    assert f"**{0.5 * np.abs(p - q).sum():.1%}** of the probability moved" in texts(at)


def badges_by_head(fig: dict, n_layer: int, n_head: int) -> dict[tuple[int, int], str]:
    """The overview's badges as {(layer, head): text}, placed by the thumbnail whose top-right corner each sits at."""
    rows, cols = array(fig["data"][0]["z"]).shape
    n = next(n for n in range(1, rows + 1) if mosaic_slices(n_layer, n_head, n)[1] == (rows, cols))
    corner = {(c.stop - 0.5, r.start - 0.5): head for head, (r, c) in mosaic_slices(n_layer, n_head, n)[0].items()}
    return {corner[(a["x"], a["y"])]: a["text"] for a in fig["layout"].get("annotations", [])}


@pytest.mark.slow
def test_head_badges_on_smollm2(smol):
    """The previous-token head 16.0 and the induction head 18.6 carry their badges,
    with scores measured here by hand."""
    at = page("7_Multi_head", SMOL, layer="18", head="6")
    at = open_tab(at, "multihead_part", "3 ·")
    found = badges_by_head(chart(at, "multihead_overview"), 30, 9)
    assert "prev" in found[(16, 0)].split("·") and "ind" in found[(18, 6)].split("·")
    assert len(found) > 20  # many heads are labelled (most of them sinks)
    table = cached_heads.head_badges(SMOL, False)  # what the overview drew: one read-only table per model and size
    assert dict(table) == found and cached_heads.head_badges(SMOL, False) is table
    with pytest.raises(TypeError):
        table[(0, 0)] = "x"  # type: ignore[index]
    ids = hs.probe_ids(hs.allowed_ids(smol.tokenizer, smol.cfg.vocab_size))  # (4, 96): 48 random tokens, twice
    rec = {}
    with torch.inference_mode():
        smol.model(torch.as_tensor(ids), rec=rec)
    w = rec["blocks.18.attn.hook_pattern"][:, 6].numpy()  # (4, 96, 96)
    half = ids.shape[1] // 2
    # on the token after the earlier copy
    induction = np.mean([w[b, i, i - half + 1] for b in range(len(ids)) for i in range(half, 2 * half)])
    assert induction >= 0.4
    assert f"induction {induction:.2f}" in texts(at)  # the opened head's summary under the overview
    # On a phone (the browser measured the overview narrow) a head with two badges shows its first and "+": the two
    # ran into the next thumbnail's badge ("sidup·sink" in a 28 px thumbnail)
    several = {head: text.split("·") for head, text in found.items() if "·" in text}
    assert several and head_roles.MORE_NOTE not in texts(at)
    at.session_state[widths.KEY] = {"widths": {"multihead_overview": 358.0}}
    at.run()
    assert_ok(at)
    narrow = badges_by_head(chart(at, "multihead_overview"), 30, 9)
    assert narrow == {head: f"{several[head][0]}+" if head in several else text for head, text in found.items()}
    assert head_roles.MORE_NOTE in texts(at)


@pytest.mark.slow
def test_every_head_in_presenter_view_has_a_column_per_layer_on_smollm2(smol):
    """(Presenter view at 1024 × 768: the 30 rows of SmolLM2's heads fitted to the first screen left thumbnails of
    ~10 px, their badges one smear.) A model deeper than wide puts a column per layer, a row per head: the same
    thumbnails as the laptop's overview, numbered layers along the top, short badges, and the note says so."""
    laptop = open_tab(page("7_Multi_head", SMOL), "multihead_part", "3 ·")
    projector = open_tab(page("7_Multi_head", SMOL, present="true"), "multihead_part", "3 ·")
    rows, across = chart(laptop, "multihead_overview"), chart(projector, "multihead_overview")
    grid, grid_across = array(rows["data"][0]["z"]), array(across["data"][0]["z"])
    n = next(n for n in range(1, 64) if mosaic_slices(30, 9, n)[1] == grid.shape)
    where, shape = mosaic_slices(30, 9, n)
    where_across, shape_across = mosaic_slices(30, 9, n, layers_across=True)
    assert shape_across == shape[::-1] and grid_across.shape == shape_across
    for head, (r, c) in where.items():
        np.testing.assert_array_equal(grid_across[where_across[head]], grid[r, c])
    x = across["layout"]["xaxis"]
    assert x["ticktext"] == [str(k) for k in range(30)] and x["title"]["text"] == "layer"
    assert across["layout"]["yaxis"]["ticktext"] == [f"head {h}" for h in range(9)]
    badges = {a["text"] for a in across["layout"]["annotations"]}
    assert not any("·" in b for b in badges) and any(b.endswith("+") for b in badges)
    assert "Columns are layers, rows heads" in texts(projector) and "Rows are layers" in texts(laptop)


def test_multihead_on_minilm_sinks_and_final_vectors(mini):
    at = page("7_Multi_head", MINI, layer="2")
    assert "no causal mask" in texts(at) and "[CLS] and [SEP]" in texts(at)
    tr = run_trace(mini.model, mini.tokenizer, SENTENCE)
    w = tr["blocks.2.attn.hook_pattern"]  # (12, T, T), every key visible
    T = w.shape[-1]
    assert len(chart(at, "multihead_heads")["data"]) == 12
    np.testing.assert_allclose(array(chart(at, "multihead_heads")["data"][5]["z"]), w[5], rtol=1e-5)
    share = (w[:, :, 0] + w[:, :, T - 1]).mean(axis=1)  # [CLS] is first, [SEP] last
    assert (
        "Weight on [CLS] and [SEP], averaged over every row: "
        + ", ".join(f"head {h} {share[h]:.1%}" for h in range(12))
        in texts(at)
    )
    at.checkbox(key="multihead_sink").check().run()
    assert_ok(at)
    z = array(chart(at, "multihead_heads")["data"][0]["z"])
    assert np.isnan(z[:, 0]).all() and np.isnan(z[:, -1]).all() and not np.isnan(z[:, 1:-1]).any()
    at = open_tab(at, "multihead_part", "5 ·")
    assert "An encoder has no next-token prediction" in texts(at) and not at.dataframe
    at.multiselect(key="multihead_ablate").set_value(["2.0", "2.1", "4.3"]).run()
    assert_ok(at)
    after = run_trace(mini.model, mini.tokenizer, SENTENCE, Interventions(ablate=frozenset({(2, 0), (2, 1), (4, 3)})))
    a, b = (
        tr["blocks.5.ln2.hook_normalized"].astype(np.float64),
        after["blocks.5.ln2.hook_normalized"].astype(np.float64),
    )
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    bars = chart(at, "multihead_ablation")["data"]
    np.testing.assert_allclose(array(bars[0]["y"]), cos, rtol=1e-5)
    assert f"turned by **{np.mean(1 - cos):.4f}**" in texts(at) and not at.dataframe
    for label in ("2 ·", "3 ·", "4 ·"):
        assert_ok(open_tab(at, "multihead_part", label))


# ---- Inside a block ----


@pytest.mark.slow
def test_block_on_smollm2_rmsnorm_and_swiglu(smol):
    at = page("8_Inside_a_block", SMOL, layer="5")
    tr = run_trace(smol.model, smol.tokenizer, SENTENCE)
    T, eps = len(tr.encoding), smol.cfg.ln_eps
    shown = texts(at)
    assert (
        "RMSNorm" in shown
        and "SwiGLU" in shown
        and r"\mathrm{SiLU}" in shown
        and "does **not** subtract the mean" in shown
    )
    for ln, stream in (("ln1", "hook_resid_pre"), ("ln2", "hook_resid_mid")):
        at.radio(key="block_ln").set_value(ln).run()
        assert_ok(at)
        x = tr[f"blocks.5.{stream}"].astype(np.float64)
        x_hat = x / np.sqrt((x**2).mean(-1, keepdims=True) + eps)  # x / √(mean(x²) + ε), from the trace's input
        w = getattr(smol.model.blocks[5], ln).w.detach().numpy().astype(np.float64)
        # × w is the model's own output
        np.testing.assert_allclose(x_hat * w, tr[f"blocks.5.{ln}.hook_normalized"], rtol=1e-3, atol=1e-4)
        x_in, hat, y = ys(at, "block_ln_token")
        np.testing.assert_allclose(hat, x_hat[T - 1], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(y, x_hat[T - 1] * w, rtol=1e-3, atol=1e-4)
        rms = ys(at, "block_ln_std")  # root mean square of input, x̂, output
        np.testing.assert_allclose(rms[0], np.sqrt((x**2).mean(-1)), rtol=1e-4)
        np.testing.assert_allclose(rms[1], 1, atol=1e-3)
        np.testing.assert_allclose(ys(at, "block_ln_mean")[1], x_hat.mean(-1), rtol=1e-3, atol=1e-5)  # not moved to 0
    # SwiGLU: SiLU(gate) ⊙ linear = the recorded output, for the token's strongest neurons
    at.selectbox(key="block_token").set_value(3).run()
    gate, lin, post = (
        tr[f"blocks.5.mlp.{n}"][3].astype(np.float64) for n in ("hook_pre", "hook_pre_linear", "hook_post")
    )
    silu_gate, linear, product = ys(at, "block_swiglu")
    ids = [int(n[1:]) for n in chart(at, "block_swiglu")["layout"]["xaxis"]["ticktext"]]
    assert ids == list(np.argsort(-np.abs(post), kind="stable")[:12])
    np.testing.assert_allclose(silu_gate, gate[ids] / (1 + np.exp(-gate[ids])), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(linear, lin[ids], rtol=1e-5)
    np.testing.assert_allclose(product, post[ids], rtol=1e-5)
    np.testing.assert_allclose(silu_gate * linear, product, rtol=1e-3, atol=1e-4)
    curve, points = chart(at, "block_gelu")["data"]
    assert curve["name"] == "SiLU(x)" and "GELU" not in chart(at, "block_gelu")["layout"]["title"]["text"]
    np.testing.assert_allclose(array(points["y"]), gate / (1 + np.exp(-gate)), rtol=1e-4, atol=1e-5)
    at.slider(key="block_neurons").set_value(16).run()
    mlp = chart(at, "block_mlp")
    assert (
        array(mlp["data"][0]["z"]).shape == (T, 16)
        and "SiLU(x·W_gate) ⊙ x·W_in" in mlp["layout"]["title"]["text"]
        and mlp["data"][0]["zmid"] == 0
    )
    # the stream: one token (the first) grows far longer than the others; the colours stop below it
    norms = array(chart(at, "block_norms")["data"][0]["z"])
    assert (
        norms.shape == (61, T)
        and chart(at, "block_norms")["layout"]["yaxis"]["ticktext"][:2] == ["embed", "0: + attention"]
    )
    assert "far longer than any other" in texts(at)


def test_block_on_minilm_post_norm(mini):
    at = page("8_Inside_a_block", MINI, layer="2")
    tr = run_trace(mini.model, mini.tokenizer, SENTENCE)
    T = len(tr.encoding)
    stages = chart(at, "block_norms")["layout"]["yaxis"]["ticktext"]
    assert (
        stages[:5] == ["LN(e+pos+type)", "0: + attention", "0: LN1", "0: + MLP", "0: LN2 (out)"]
        and len(stages) == 25
    )
    assert "post-norm" in texts(at) and "after attention, reads x + attn" in at.radio(key="block_ln").options[0]
    # post-norm: each LN reads the sum after its sublayer
    for ln, stream in (("ln1", "hook_resid_mid"), ("ln2", "hook_resid_post")):
        at.radio(key="block_ln").set_value(ln).run()
        assert_ok(at)
        x = tr[f"blocks.2.{stream}"].astype(np.float64)
        x_hat = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + mini.cfg.ln_eps)
        np.testing.assert_allclose(ys(at, "block_ln_token")[1], x_hat[T - 1], rtol=1e-3, atol=1e-4)
        np.testing.assert_allclose(
            ys(at, "block_ln_token")[2], tr[f"blocks.2.{ln}.hook_normalized"][T - 1], rtol=1e-5, atol=1e-6
        )
    # LN2's output is the next block's input
    np.testing.assert_array_equal(tr["blocks.2.ln2.hook_normalized"], tr["blocks.3.hook_resid_pre"])
    h = np.linalg.norm(tr["blocks.2.ln1.hook_normalized"].astype(np.float64), axis=-1).mean()
    assert f"to h = LN1(x + attn), of average length {h:.3g}" in texts(at)
    curve, points = chart(at, "block_gelu")["data"]
    np.testing.assert_allclose(
        array(curve["y"]),
        [v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in array(curve["x"]).astype(np.float64)],
        atol=1e-5,
    )  # exact GELU
    assert "block_swiglu" not in charts_by_key(at)


# ---- Next token ----


def test_next_token_on_minilm_says_an_encoder_has_no_head():
    at = page("9_Next_token", MINI)
    assert "is an encoder: it has no next-token head" in texts(at) and "Encoder vs decoder" in texts(at)
    own = [s for s in at.main.slider if not s.key.startswith("bar_")]  # (the shared controls bar is on every page)
    # nothing that claims probabilities, no controls for them
    assert not charts_by_key(at) and not at.dataframe and not own


@pytest.mark.slow
def test_next_token_on_smollm2(smol):
    at = page("9_Next_token", SMOL)
    tr = run_trace(smol.model, smol.tokenizer, SENTENCE)
    p = np_softmax(tr["logits"][-1])
    top = np.argsort(-p, kind="stable")[:12]
    np.testing.assert_allclose(array(chart(at, "next_bars_chart")["data"][0]["y"]), p[top], rtol=1e-4)
    assert "final RMSNorm" in texts(at) and f"{smol.cfg.vocab_size:,}" in texts(at)
    lens = array(chart(open_tab(at, "next_part", "3 ·"), "next_lens")["data"][0]["z"])
    assert lens.shape == (31, len(tr.encoding))
    # the last stage is the model's output
    np.testing.assert_allclose(lens[-1], np_softmax(tr["logits"]).max(-1), rtol=1e-4)
    open_tab(at, "next_part", "1 ·")
    at.slider(key="next_temperature").set_value(0.5).run()
    at.selectbox(key="next_position").set_value(3).run()
    assert_ok(at)
    q = np_softmax(tr["logits"][3] / 0.5)
    np.testing.assert_allclose(array(chart(at, "next_bars_chart")["data"][0]["y"]), np.sort(q)[::-1][:12], rtol=1e-4)
    open_tab(at, "next_part", "2 ·").button(key="next_one").click().run()
    assert_ok(at)
    assert len([d for d in at.dataframe if "top candidates" in d.value.columns][0].value) == 1


# ---- Context ----


def test_context_on_minilm_follows_the_encoder_outputs(mini):
    at = page("10_Context", MINI)
    assert "this model is an encoder (no causal mask)" in texts(at) and "after its LayerNorm" in texts(at)
    sentences = at.text_area(key="context_sentences").value.splitlines()
    traces = run_traces(mini.model, mini.tokenizer, sentences)
    pos = at.dataframe[0].value["position"].tolist()
    vec = [
        np.stack(
            [tr["hook_embed"][p], *(tr[f"blocks.{i}.ln2.hook_normalized"][p] for i in range(6))]
        ).astype(np.float64)
        for tr, p in zip(traces, pos, strict=True)
    ]
    a, b = vec[0], vec[1]
    np.testing.assert_allclose(
        array(chart(at, "context_cosine")["data"][0]["y"]),
        (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)),
        rtol=1e-4,
        atol=1e-5,
    )
    at.toggle(key="context_unit").set_value(False).run()
    at.slider(key="w_layer").set_value(4).run()
    assert_ok(at)
    np.testing.assert_allclose(
        array(chart(at, "context_attn_2")["data"][0]["y"]),
        traces[1]["blocks.4.attn.hook_pattern"][0, pos[1]],
        rtol=1e-4,
        atol=1e-6,
    )


@pytest.mark.slow
def test_context_on_smollm2(smol):
    at = page("10_Context", SMOL)
    assert (
        "with the causal mask that is the first position that has read the whole word" in texts(at)
        and "RoPE turns queries and keys" in texts(at)
    )
    at.selectbox(key="context_set").set_value("River bank vs money bank").run()
    assert_ok(at)
    traces = run_traces(smol.model, smol.tokenizer, at.text_area(key="context_sentences").value.splitlines())
    pos = at.dataframe[0].value["position"].tolist()
    vec = [
        np.stack([tr["hook_embed"][p], *(tr[f"blocks.{i}.hook_resid_post"][p] for i in range(30))]).astype(np.float64)
        for tr, p in zip(traces, pos, strict=True)
    ]
    cos = (vec[0] * vec[1]).sum(1) / (np.linalg.norm(vec[0], axis=1) * np.linalg.norm(vec[1], axis=1))
    y = array(chart(at, "context_cosine")["data"][0]["y"])
    assert len(y) == 31 and abs(y[0] - 1) < 1e-6  # the same token ␣bank: one embedding row
    np.testing.assert_allclose(y, cos, rtol=1e-3, atol=1e-4)
    labels = chart(at, "context_pca")["data"][0]["text"]
    # every few points labelled
    assert labels[0] == "emb" and labels[-1] == "L29" and sum(bool(t) for t in labels) <= 13
