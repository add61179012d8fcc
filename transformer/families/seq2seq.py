"""An encoder–decoder transformer (the original translation layout, with pre-LayerNorm), built from model.py's pieces.

The encoder reads the source with unmasked self-attention. Each decoder block runs masked
(causal) self-attention over the words written so far, then cross-attention — queries from
the decoder, keys and values from the encoder's output — then an MLP. The token embedding W_E
is shared by source, target and output (logits = LN(x)·W_Eᵀ), as in "Attention Is All You Need".

Trace names and shapes (S source words, T decoder positions, nh heads, hs = d_head, d = d_model,
d_mlp, V = vocab; one phrase, so no batch axis). The encoder's names are the GPT's (transformer.trace)
under "encoder.", with S for T; the decoder block adds cross-attention between its two halves:

    encoder.hook_embed                                (S, d)        W_E[id]·√d
    encoder.hook_pos_embed                            (S, d)        sinusoidal positions
    encoder.blocks.{l}.hook_resid_pre                 (S, d)        block input
    encoder.blocks.{l}.ln1.hook_normalized            (S, d)
    encoder.blocks.{l}.attn.hook_q                    (S, nh, hs)
    encoder.blocks.{l}.attn.hook_k                    (S, nh, hs)
    encoder.blocks.{l}.attn.hook_v                    (S, nh, hs)
    encoder.blocks.{l}.attn.hook_scores_raw           (nh, S, S)    Q·Kᵀ
    encoder.blocks.{l}.attn.hook_scores_scaled        (nh, S, S)    Q·Kᵀ / √hs / τ
    encoder.blocks.{l}.attn.hook_scores_masked        (nh, S, S)    no causal mask: every word sees every word
    encoder.blocks.{l}.attn.hook_pattern              (nh, S, S)    softmax; rows sum to 1
    encoder.blocks.{l}.attn.hook_z                    (S, nh, hs)
    encoder.blocks.{l}.attn.hook_concat               (S, nh·hs)
    encoder.blocks.{l}.attn.hook_result               (S, nh, d)
    encoder.blocks.{l}.hook_attn_out                  (S, d)
    encoder.blocks.{l}.hook_resid_mid                 (S, d)
    encoder.blocks.{l}.ln2.hook_normalized            (S, d)
    encoder.blocks.{l}.mlp.hook_pre                   (S, d_mlp)
    encoder.blocks.{l}.mlp.hook_post                  (S, d_mlp)
    encoder.blocks.{l}.hook_mlp_out                   (S, d)
    encoder.blocks.{l}.hook_resid_post                (S, d)
    encoder.ln_final.hook_normalized                  (S, d)        the encoder's output, the "memory"
    decoder.hook_embed                                (T, d)        decoder input: [BOS] y_1 … y_(T−1)
    decoder.hook_pos_embed                            (T, d)
    decoder.blocks.{l}.hook_resid_pre                 (T, d)
    decoder.blocks.{l}.ln1.hook_normalized            (T, d)
    decoder.blocks.{l}.attn.hook_q                    (T, nh, hs)   masked self-attention
    decoder.blocks.{l}.attn.hook_k                    (T, nh, hs)
    decoder.blocks.{l}.attn.hook_v                    (T, nh, hs)
    decoder.blocks.{l}.attn.hook_scores_raw           (nh, T, T)
    decoder.blocks.{l}.attn.hook_scores_scaled        (nh, T, T)
    decoder.blocks.{l}.attn.hook_scores_masked        (nh, T, T)    causal: −∞ above the diagonal
    decoder.blocks.{l}.attn.hook_pattern              (nh, T, T)
    decoder.blocks.{l}.attn.hook_z                    (T, nh, hs)
    decoder.blocks.{l}.attn.hook_concat               (T, nh·hs)
    decoder.blocks.{l}.attn.hook_result               (T, nh, d)
    decoder.blocks.{l}.hook_attn_out                  (T, d)
    decoder.blocks.{l}.hook_resid_mid                 (T, d)        resid_pre + attn_out
    decoder.blocks.{l}.ln_cross.hook_normalized       (T, d)        cross-attention's query input
    decoder.blocks.{l}.cross_attn.hook_q              (T, nh, hs)   Q = LN(decoder)·W_Q + b_Q
    decoder.blocks.{l}.cross_attn.hook_k              (S, nh, hs)   K = memory·W_K + b_K
    decoder.blocks.{l}.cross_attn.hook_v              (S, nh, hs)   V = memory·W_V + b_V
    decoder.blocks.{l}.cross_attn.hook_scores_raw     (nh, T, S)
    decoder.blocks.{l}.cross_attn.hook_scores_scaled  (nh, T, S)
    decoder.blocks.{l}.cross_attn.hook_scores_masked  (nh, T, S)    no causal mask (padding only)
    decoder.blocks.{l}.cross_attn.hook_pattern        (nh, T, S)    rows sum to 1 over the source words
    decoder.blocks.{l}.cross_attn.hook_z              (T, nh, hs)
    decoder.blocks.{l}.cross_attn.hook_concat         (T, nh·hs)
    decoder.blocks.{l}.cross_attn.hook_result         (T, nh, d)
    decoder.blocks.{l}.hook_cross_attn_out            (T, d)
    decoder.blocks.{l}.hook_resid_cross               (T, d)        resid_mid + cross_attn_out
    decoder.blocks.{l}.ln2.hook_normalized            (T, d)
    decoder.blocks.{l}.mlp.hook_pre                   (T, d_mlp)
    decoder.blocks.{l}.mlp.hook_post                  (T, d_mlp)
    decoder.blocks.{l}.hook_mlp_out                   (T, d)
    decoder.blocks.{l}.hook_resid_post                (T, d)
    decoder.ln_final.hook_normalized                  (T, d)
    logits                                            (T, V)        row i: the word written after reading position i

Interventions name a part — "encoder", "decoder" (masked self-attention) or "cross" — so a head
is ablated as (part, layer, head).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
from tokenizers import Tokenizer as HFTokenizer
from tokenizers import models, normalizers, pre_tokenizers

from ..attention import Interventions, Record, visible_mask
from ..config import ModelConfig
from ..errors import SourceInputError
from ..layers import MLP, Attention, Block, init_normal, norm_layer, prefixed, sinusoidal_encoding
from ..tokenizer import read_tokenizer_file
from ..trace import BLOCK_NAMES

MODEL_TYPE = "atlas-seq2seq"
SPECIALS = ("[PAD]", "[UNK]", "[BOS]", "[EOS]")
PAD, UNK, BOS, EOS = range(4)
PARTS = ("encoder", "decoder", "cross")


@dataclass(frozen=True)
class Seq2SeqConfig:
    vocab_size: int = 1600  # words in the vocabulary (both languages and the specials)
    n_source: int = 0  # ids 4 … 3 + n_source are the source-language words
    n_ctx: int = 32  # longest source, and longest decoder input
    d_model: int = 128  # width of the residual stream
    n_layer: int = 3  # encoder blocks, and decoder blocks
    n_head: int = 4  # heads per attention; d_head = d_model / n_head
    d_mlp: int = 512  # hidden width of the feed-forward networks
    activation: str = "gelu"  # the MLP's GELU (exact)
    ln_eps: float = 1e-5
    dropout: float = 0.0  # used only while training

    def __post_init__(self):
        if self.d_model % self.n_head or self.d_model % 2:
            raise ValueError(f"d_model={self.d_model} must be even and divisible by n_head={self.n_head}")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_head

    @property
    def parts(self) -> ModelConfig:
        """The configuration of the encoder's and decoder's blocks (pre-LayerNorm, GELU, sinusoidal positions)."""
        return ModelConfig(self.vocab_size, self.n_ctx, self.d_model, self.n_layer, self.n_head, self.d_mlp, "sinusoidal", self.activation, self.ln_eps, self.dropout)

    def to_dict(self) -> dict:
        return {"model_type": MODEL_TYPE, **dataclasses.asdict(self)}

    @classmethod
    def from_dict(cls, data: dict) -> Seq2SeqConfig:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True)
class Seq2SeqInterventions:
    """Changes to a forward pass, all off by default; heads are named (part, layer, head)."""

    temperature: float = 1.0  # τ for every attention of every part
    causal: bool = True  # False lets the decoder's self-attention see later words
    ablate: frozenset[tuple[str, int, int]] = frozenset()  # (part, layer, head) whose output is zeroed

    def __post_init__(self):
        Interventions(self.temperature)  # validates τ
        if any(p not in PARTS for p, _, _ in self.ablate):
            raise ValueError(f"ablation parts must be among {PARTS}")

    def part(self, part: str) -> Interventions:
        """The model.py interventions one part's attention reads (its causal flag is unused there)."""
        return Interventions(temperature=self.temperature, causal=self.causal, ablate=frozenset((lay, h) for p, lay, h in self.ablate if p == part))


NO_SEQ2SEQ_INTERVENTIONS = Seq2SeqInterventions()


class DecoderBlock(nn.Module):
    """x + SelfAttn(LN1(x)) [causal], + CrossAttn(LN_cross(·), memory), + MLP(LN2(·))."""

    def __init__(self, cfg: ModelConfig, layer: int):
        super().__init__()
        self.layer = layer
        self.ln1 = norm_layer(cfg)
        self.attn = Attention(cfg)
        self.ln_cross = norm_layer(cfg)
        self.cross_attn = Attention(cfg)
        self.ln2 = norm_layer(cfg)
        self.mlp = MLP(cfg)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x, memory, self_mask, cross_mask, iv: Seq2SeqInterventions, rec=None):
        n, L = f"blocks.{self.layer}.", self.layer
        attn_out = self.drop(self.attn(self.ln1(x, rec, n + "ln1."), self_mask, L, iv.part("decoder"), rec, n + "attn."))
        resid_mid = x + attn_out  # (B, T, d)
        # cross-attention: Q from the decoder, K and V from the encoder's output (memory)
        q_in = self.ln_cross(resid_mid, rec, n + "ln_cross.")  # (B, T, d)
        cross_out = self.drop(self.cross_attn(q_in, cross_mask, L, iv.part("cross"), rec, n + "cross_attn.", kv=memory))
        resid_cross = resid_mid + cross_out  # (B, T, d)
        mlp_out = self.drop(self.mlp(self.ln2(resid_cross, rec, n + "ln2."), rec, n + "mlp."))
        resid_post = resid_cross + mlp_out  # (B, T, d)
        if rec is not None:
            rec[n + "hook_resid_pre"], rec[n + "hook_attn_out"], rec[n + "hook_resid_mid"] = x, attn_out, resid_mid
            rec[n + "hook_cross_attn_out"], rec[n + "hook_resid_cross"] = cross_out, resid_cross
            rec[n + "hook_mlp_out"], rec[n + "hook_resid_post"] = mlp_out, resid_post
        return resid_post


class Seq2Seq(nn.Module):
    def __init__(self, cfg: Seq2SeqConfig):
        super().__init__()
        self.cfg = cfg
        parts = cfg.parts
        self.W_E = nn.Parameter(torch.empty(cfg.vocab_size, cfg.d_model))
        self.register_buffer("W_pos", sinusoidal_encoding(cfg.n_ctx, cfg.d_model), persistent=False)
        self.drop = nn.Dropout(cfg.dropout)
        self.encoder = nn.Module()
        self.encoder.blocks = nn.ModuleList(Block(parts, i) for i in range(cfg.n_layer))
        self.encoder.ln_final = norm_layer(parts)
        self.decoder = nn.Module()
        self.decoder.blocks = nn.ModuleList(DecoderBlock(parts, i) for i in range(cfg.n_layer))
        self.decoder.ln_final = norm_layer(parts)
        self._init_weights()

    def _init_weights(self):
        """N(0, 0.02) (W_E: N(0, 1/d), since it is scaled by √d), residual-stream outputs scaled by 1/√(3·n_layer)."""
        init_normal(self, self.cfg.n_layer, residual_scale=3)
        nn.init.normal_(self.W_E, std=self.cfg.d_model**-0.5)

    def embed(self, ids, rec=None):
        """input = W_E[id]·√d + positional encoding."""
        T = ids.size(1)
        if T > self.cfg.n_ctx:
            raise ValueError(f"sequence of {T} words is longer than the context of {self.cfg.n_ctx}")
        embed = self.W_E[ids] * math.sqrt(self.cfg.d_model)  # (B, T, d)
        pos_embed = self.W_pos[:T].expand_as(embed)  # (B, T, d)
        if rec is not None:
            rec["hook_embed"], rec["hook_pos_embed"] = embed, pos_embed
        return self.drop(embed + pos_embed)

    def encode(self, src, src_keys, iv: Seq2SeqInterventions = NO_SEQ2SEQ_INTERVENTIONS, rec: Record = None):
        """src: (B, S) ids; src_keys: (B, 1, 1, S) bool, False = padding. Returns the memory (B, S, d)."""
        erec = prefixed(rec, "encoder.")
        x = self.embed(src, erec)
        for block in self.encoder.blocks:
            x = block(x, src_keys, iv.part("encoder"), erec)  # every word sees every (real) word
        return self.encoder.ln_final(x, erec, "ln_final.")

    def decode(self, tgt, memory, src_keys, tgt_keys=None, iv: Seq2SeqInterventions = NO_SEQ2SEQ_INTERVENTIONS, rec: Record = None):
        """tgt: (B, T) decoder input ids, starting with [BOS]. Returns logits (B, T, V)."""
        drec = prefixed(rec, "decoder.")
        T = tgt.size(1)
        x = self.embed(tgt, drec)
        # mask[b, 0, i, j]: may position i look at position j (j ≤ i unless the mask is switched off)
        self_mask = visible_mask(T, iv.causal, tgt_keys)  # (1 or B, 1, T, T)
        for block in self.decoder.blocks:
            x = block(x, memory, self_mask, src_keys, iv, drec)
        final = self.decoder.ln_final(x, drec, "ln_final.")
        # logits = LN(x)·W_Eᵀ (tied)
        logits = final @ self.W_E.T  # (B, T, V)
        if rec is not None:
            rec["logits"] = logits
        return logits

    def forward(self, src, tgt, src_pad=None, tgt_pad=None, interventions: Seq2SeqInterventions = NO_SEQ2SEQ_INTERVENTIONS, rec: Record = None):
        """src (B, S), tgt (B, T) ids; *_pad: (B, ·) bool, True = real word (None: all real). Returns logits (B, T, V)."""
        src_keys = key_mask(src if src_pad is None else src_pad)
        tgt_keys = None if tgt_pad is None else real_words(tgt_pad)
        memory = self.encode(src, src_keys, interventions, rec)
        return self.decode(tgt, memory, src_keys, tgt_keys, interventions, rec)


def real_words(x: torch.Tensor) -> torch.Tensor:
    """(B, S) ids or bool → (B, S) bool: which positions hold a word (ids: not [PAD])."""
    return x if x.dtype == torch.bool else x != PAD


def key_mask(x: torch.Tensor) -> torch.Tensor:
    """(B, S) ids or bool → (B, 1, 1, S) bool: which keys every query may see (no causal mask: cross-attention, encoder)."""
    return visible_mask(1, False, real_words(x))


# --- the word-level vocabulary ------------------------------------------------------------------------


class Vocab:
    """Word-level vocabulary (Hugging Face `tokenizers` WordLevel, saved as tokenizer.json).

    Ids: the four specials, then the n_source source-language (English) words, then the target
    words not already listed. Text is split by `tokenizers` too: NFKC, lower case, words and
    punctuation apart.
    """

    def __init__(self, hf: HFTokenizer, n_source: int):
        self.hf = hf
        self.words = [hf.id_to_token(i) for i in range(hf.get_vocab_size())]
        self.ids = {w: i for i, w in enumerate(self.words)}
        self.n_source = n_source
        self.source_words = self.words[len(SPECIALS) : len(SPECIALS) + n_source]
        self._source_set = set(self.source_words)

    @classmethod
    def build(cls, source_words, target_words) -> Vocab:
        src = sorted(set(source_words))
        words = [*SPECIALS, *src, *sorted(set(target_words) - set(src))]
        hf = HFTokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
        hf.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
        hf.pre_tokenizer = pre_tokenizers.Whitespace()
        return cls(hf, len(src))

    @classmethod
    def from_file(cls, path: str | Path, n_source: int) -> Vocab:
        return cls(read_tokenizer_file(path), n_source)

    def save(self, path: str | Path) -> None:
        self.hf.save(str(path))

    def __len__(self) -> int:
        return len(self.words)

    def split(self, text: str) -> list[str]:
        """Text → lower-case words and punctuation marks, as the tokenizer cuts it."""
        return [w for w, _ in self.hf.pre_tokenizer.pre_tokenize_str(self.hf.normalizer.normalize_str(text))]

    def is_source(self, word: str) -> bool:
        return word in self._source_set

    def encode(self, words) -> list[int]:
        return [self.ids.get(w, UNK) for w in words]

    def decode(self, ids) -> list[str]:
        return [self.words[i] for i in ids]


@dataclass(frozen=True)
class SourceText:
    """A typed phrase, read against the source vocabulary."""

    words: tuple[str, ...]  # the known words, in order (what the model reads; at most n_ctx; may be empty)
    unknown: tuple[tuple[str, tuple[str, ...]], ...]  # (word, close matches) for each distinct unknown word
    suggested: tuple[str, ...]  # the phrase with each unknown word replaced by its closest match (dropped if none)
    n_ignored: int  # punctuation marks and symbols skipped
    n_known: int  # known words before the cut to n_ctx

    @property
    def cut(self) -> bool:
        return self.n_known > len(self.words)


MAX_SOURCE_CHARS = 2_000  # longer text is cut before it is split
MAX_UNKNOWN = 20  # unknown words listed (with suggestions)


def read_source(vocab: Vocab, text: str, n_ctx: int) -> SourceText:
    """Split `text`, keep the source-vocabulary words (the first n_ctx), list unknown words with close matches."""
    if not isinstance(text, str) or not text.strip():
        raise SourceInputError("The phrase is empty: type a few English words.")
    known, suggested, unknown, n_ignored = [], [], {}, 0
    for w in vocab.split(text[:MAX_SOURCE_CHARS]):
        if vocab.is_source(w):
            known.append(w)
            suggested.append(w)
        elif not any(ch.isalnum() for ch in w):
            n_ignored += 1
        else:
            if w not in unknown and len(unknown) < MAX_UNKNOWN:
                unknown[w] = tuple(difflib.get_close_matches(w, vocab.source_words, n=3, cutoff=0.6))
            suggested += unknown.get(w, ())[:1]
    return SourceText(tuple(known[:n_ctx]), tuple(unknown.items()), tuple(suggested[:n_ctx]), n_ignored, len(known))


# --- greedy translation and its trace -----------------------------------------------------------------


@torch.inference_mode()
def greedy_decode(model: Seq2Seq, src: torch.Tensor, max_len: int, iv: Seq2SeqInterventions = NO_SEQ2SEQ_INTERVENTIONS) -> tuple[torch.Tensor, torch.Tensor]:
    """Greedy decoding of a padded batch src (B, S): at each step, the most likely next word.

    Returns the written ids (B, n) — [PAD] after a row's [EOS] — and each step's probabilities (B, n, V).
    """
    src_keys = key_mask(src)
    memory = model.encode(src, src_keys, iv)  # (B, S, d)
    out = torch.full((src.size(0), 1), BOS)  # (B, 1)
    done = torch.zeros(src.size(0), dtype=torch.bool)
    probs = []
    for _ in range(min(max_len, model.cfg.n_ctx)):
        logits = model.decode(out, memory, src_keys, iv=iv)[:, -1]  # (B, V) at the last position
        p = torch.softmax(logits, dim=-1)  # (B, V)
        nxt = torch.where(done, PAD, p.argmax(-1))  # (B,)
        probs.append(p)
        out = torch.cat([out, nxt[:, None]], dim=1)
        done |= nxt == EOS
        if done.all():
            break
    return out[:, 1:], torch.stack(probs, dim=1)


@dataclass(frozen=True)
class DecodeStep:
    """One step of greedy decoding: having read `read`, the model wrote `word`."""

    read: str
    word: str
    top: tuple[tuple[str, float], ...]  # the most likely words and their probabilities


@dataclass(frozen=True)
class TranslationTrace:
    source: tuple[str, ...]  # the source words (S)
    output: tuple[str, ...]  # the French words written, without [EOS]
    finished: bool  # True when the model wrote [EOS]; False when it ran out of room
    steps: tuple[DecodeStep, ...]  # greedy decoding, step by step (each step sees only what was written before it)
    cache: dict[str, np.ndarray]  # one forward pass over [BOS] + output: names and shapes in the module docstring
    interventions: Seq2SeqInterventions

    @property
    def decoder_input(self) -> tuple[str, ...]:
        """What each decoder position reads (T = len(output) + 1 rows)."""
        return ("[BOS]", *self.output)

    @property
    def written(self) -> tuple[str, ...]:
        """What each decoder position writes: the next word, [EOS] last."""
        return (*self.output, "[EOS]")

    @property
    def n_layer(self) -> int:
        return sum(name.endswith("cross_attn.hook_pattern") for name in self.cache)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.cache[name]


def translate(model: Seq2Seq, vocab: Vocab, words, iv: Seq2SeqInterventions = NO_SEQ2SEQ_INTERVENTIONS, top_k: int = 5) -> TranslationTrace:
    """Translate `words` greedily, then record every intermediate of one pass over what was written."""
    src = torch.tensor([vocab.encode(words)])  # (1, S)
    ids, probs = greedy_decode(model, src, model.cfg.n_ctx - 1, iv)
    ids, probs = ids[0].tolist(), probs[0]
    finished = EOS in ids
    out = ids[: ids.index(EOS)] if finished else ids
    read = ["[BOS]", *vocab.decode(out)]
    steps = []
    for i, p in enumerate(probs):
        top = torch.topk(p, top_k)
        steps.append(DecodeStep(read[i], vocab.words[ids[i]], tuple((vocab.words[j], float(v)) for v, j in zip(top.values, top.indices, strict=True))))
    rec: dict[str, torch.Tensor] = {}
    with torch.inference_mode():
        model(src, torch.tensor([[BOS, *out]]), interventions=iv, rec=rec)
    cache = {}
    for name, t in rec.items():
        arr = t[0].float().numpy()
        arr.flags.writeable = False
        cache[name] = arr
    return TranslationTrace(tuple(words), tuple(vocab.decode(out)), finished, tuple(steps), cache, iv)


def trace_names(n_layer: int) -> list[str]:
    """Every name a TranslationTrace holds."""
    enc = [f"encoder.blocks.{lay}.{n}" for lay in range(n_layer) for n in BLOCK_NAMES]
    cross = ["ln_cross.hook_normalized", *(f"cross_attn.{n.removeprefix('attn.')}" for n in BLOCK_NAMES if n.startswith("attn.")), "hook_cross_attn_out", "hook_resid_cross"]
    dec = [f"decoder.blocks.{lay}.{n}" for lay in range(n_layer) for n in (*BLOCK_NAMES, *cross)]
    ends = ["hook_embed", "hook_pos_embed"]
    return [*(f"encoder.{n}" for n in ends), *enc, "encoder.ln_final.hook_normalized", *(f"decoder.{n}" for n in ends), *dec, "decoder.ln_final.hook_normalized", "logits"]


def alignment_agreement(pattern: np.ndarray, gold, n_rows: int) -> np.ndarray:
    """Per head: the fraction of target words whose most-attended source word is a gold-aligned one.

    pattern: (nh, T, S) cross-attention weights (row j writes target word j); gold: (source, target)
    index pairs; only the first n_rows rows (the target words, not [EOS]) with a gold link count.
    Returns (nh,) values in [0, 1] (NaN when no row has a gold link).
    """
    links: dict[int, set[int]] = {}
    for s, t in gold:
        if t < n_rows:
            links.setdefault(t, set()).add(s)
    if not links:
        return np.full(pattern.shape[0], np.nan, dtype=np.float32)
    rows = sorted(links)
    best = pattern[:, rows, :].argmax(-1)  # (nh, n_linked)
    hits = np.array([[b in links[r] for b, r in zip(head, rows, strict=True)] for head in best])  # (nh, n_linked)
    return hits.mean(axis=1).astype(np.float32)
