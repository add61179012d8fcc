"""Tokens & embeddings, and Positional encoding: the vectors a token has before any attention."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from figures.embeddings import cosine_heatmap, neighbour_bars, pca_map, sentence_rows_heatmap, token_chips
from figures.positions import bits_heatmap, encoding_heatmap, similarity_heatmap, waves
from lessons import embedding_space as es
from lessons.pca import PCA, pca
from transformer import sinusoidal_encoding

from ..models import TraceKey, get_model, get_trace, shared

# --- Tokens & embeddings ---


@shared(max_entries=4)
def embedding_directions(model_name: str) -> es.Directions:
    """W_E's rows compared by direction (cosine similarity), with their lengths computed once."""
    return es.directions(get_model(model_name).model.W_E.detach().numpy())


@shared(max_entries=16)
def vocabulary_map(model_name: str, n: int) -> tuple[np.ndarray, PCA]:
    """The n 'frequent' vocabulary ids and a 3-component PCA fitted on their embeddings."""
    m = get_model(model_name)
    ids = es.frequent_ids(m.tokenizer, n)
    return ids, pca(m.model.W_E.detach().numpy()[ids], 3)


@shared(max_entries=16)
def sentence_figures(key: TraceKey, narrow: bool = False) -> tuple[go.Figure, go.Figure, go.Figure]:
    """Token chips (narrow: for a narrow column, figures.embeddings.token_chips), the embedding rows W_E[ids] and
    their cosine-similarity matrix."""
    tr = get_trace(key)
    enc, embed = tr.encoding, tr["hook_embed"]  # embed: (T, d_model)
    title = f"Embedding rows W_E[id] of your {len(enc)} tokens ({embed.shape[1]} dimensions)"
    rows = sentence_rows_heatmap(embed, enc.labels, title, "W_E value")
    return token_chips(enc, narrow), rows, cosine_heatmap(es.cosine_matrix(embed), enc.labels)


@shared(max_entries=16)
def map_figure(key: TraceKey, n: int, k: int) -> tuple[go.Figure, float]:
    """The sentence's tokens among the n frequent vocabulary tokens, in k principal components; and the share of
    variance shown."""
    m, tr = get_model(key.model), get_trace(key)
    bg_ids, fit = vocabulary_map(key.model, n)
    bg = fit.project(m.model.W_E.detach().numpy()[bg_ids])[:, :k]  # (n, k)
    pts = fit.project(tr["hook_embed"])[:, :k]  # (T, k)
    vocab_labels = m.tokenizer.vocab_labels()
    fig = pca_map(bg, [vocab_labels[i] for i in bg_ids], pts, tr.encoding.labels, fit.explained[:k])
    return fig, float(fit.explained[:k].sum())


@shared(max_entries=64)
def neighbours_figure(model_name: str, token_id: int, k: int, label: str) -> go.Figure:
    """The k vocabulary tokens whose embeddings point most nearly the way token_id's does."""
    m = get_model(model_name)
    ids, cos = es.nearest(
        embedding_directions(model_name), m.model.W_E.detach().numpy()[token_id], k, exclude={token_id}
    )
    names = m.tokenizer.vocab_labels()
    return neighbour_bars(cos, [names[i] for i in ids], f"The {k} tokens nearest to {label} (id {token_id})")


@shared(max_entries=64)
def analogy_figure(
    model_name: str, ids: tuple[int, int, int], words: tuple[str, str, str], expected: str, k: int
) -> tuple[go.Figure, str, int | None]:
    """The k tokens nearest to ŵ_a − ŵ_b + ŵ_c (ids: a, b, c), every spelling of the three words left out; the nearest
    token's label, and the rank of the expected answer (None when none is given or no token spells it)."""
    unit, names = embedding_directions(model_name), get_model(model_name).tokenizer.vocab_labels()
    exclude = {*ids, *es.variant_ids(names, words)}
    top, cos = es.analogy(unit, *ids, k, exclude)
    v = es.analogy_vector(unit, *ids)  # (d,)
    rank = es.expected_rank(unit, v, es.variant_ids(names, [expected]), exclude) if expected.strip() else None
    title = f"Nearest to {names[ids[0]]} − {names[ids[1]]} + {names[ids[2]]}"
    return neighbour_bars(cos, [names[i] for i in top], title), names[int(top[0])], rank


@shared(max_entries=8)
def analogy_answer(model_name: str, words: tuple[str, str, str]) -> str | None:
    """The nearest token to a − b + c for three words of this vocabulary (inside a sentence), e.g. king − man + woman,
    every spelling of the three left out; None when a word is not one token."""
    tok = get_model(model_name).tokenizer
    ids, bad = es.read_words(tok, dict(zip("abc", words, strict=True)), tok.byte_level)
    if bad:
        return None
    return analogy_figure(model_name, (ids["a"], ids["b"], ids["c"]), words, "", 1)[1]


# --- Positional encoding ---

COUNTER_ROWS, COUNTER_DIMS = 16, 32  # the positions and sinusoid dimensions shown next to the binary counter


@shared(max_entries=16)
def sinusoid_figures(d: int, n_pos: int) -> tuple[go.Figure, go.Figure, go.Figure, go.Figure]:
    """PE heatmap, binary counter, the first positions and dimensions of PE, and PE_i · PE_j."""
    pe = sinusoidal_encoding(n_pos, d).numpy()  # (n_pos, d)
    n = min(n_pos, COUNTER_ROWS)
    first = f"The same {n} positions, first {min(d, COUNTER_DIMS)} sinusoid dimensions"
    return (
        encoding_heatmap(pe, f"Sinusoidal encoding: {n_pos} positions × {d} dimensions"),
        bits_heatmap(es.counter_bits(n)),
        encoding_heatmap(pe[:n, :COUNTER_DIMS], first),
        similarity_heatmap(es.position_similarity(pe), f"PE_i · PE_j for {n_pos} positions, d = {d}"),
    )


@shared(max_entries=32)
def waves_figure(d: int, n_pos: int, dims: tuple[int, ...]) -> go.Figure:
    return waves(sinusoidal_encoding(n_pos, d).numpy(), dims)


@shared(max_entries=16)
def input_figures(key: TraceKey) -> tuple[go.Figure, ...]:
    """Token embedding, position vectors (BERT: and token-type vectors) and the input to block 0, one row per token."""
    tr = get_trace(key)
    labels, T = tr.encoding.labels, len(tr.encoding)
    panels = [(tr["hook_embed"], "token embedding W_E[id]"), (tr["hook_pos_embed"], f"+ position W_pos[0…{T - 1}]")]
    if "hook_token_type_embed" in tr:  # (T, d_model) each
        panels += [(tr["hook_token_type_embed"], "+ token type W_type[A/B]")]
        panels += [(tr["blocks.0.hook_resid_pre"], "= LayerNorm(sum), input to block 0")]
    else:
        panels.append((tr["blocks.0.hook_resid_pre"], "= input to block 0"))
    return tuple(sentence_rows_heatmap(z, labels, title, "value") for z, title in panels)
