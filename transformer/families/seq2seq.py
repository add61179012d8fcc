"""An encoder–decoder transformer (the original translation layout, with pre-LayerNorm), built from layers.py's parts.

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
is ablated as (part, layer, head). The word vocabulary is transformer/vocabulary.py's; greedy decoding and the
trace of one translation are transformer/decoding.py's.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import torch
import torch.nn as nn

from ..attention import Interventions, Record, visible_mask
from ..config import ModelConfig
from ..layers import MLP, Attention, Block, init_normal, norm_layer, prefixed, sinusoidal_encoding
from ..trace import BLOCK_NAMES
from ..vocabulary import PAD

MODEL_TYPE = "atlas-seq2seq"
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
        return ModelConfig(
            vocab_size=self.vocab_size, n_ctx=self.n_ctx, d_model=self.d_model, n_layer=self.n_layer,
            n_head=self.n_head, d_mlp=self.d_mlp, pos_encoding="sinusoidal", activation=self.activation,
            ln_eps=self.ln_eps, dropout=self.dropout,
        )

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
        """The interventions one part's attention reads (attention.Interventions; its causal flag is unused there)."""
        ablate = frozenset((lay, h) for p, lay, h in self.ablate if p == part)
        return Interventions(temperature=self.temperature, causal=self.causal, ablate=ablate)


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
        attn_out = self.drop(
            self.attn(self.ln1(x, rec, n + "ln1."), self_mask, L, iv.part("decoder"), rec, n + "attn.")
        )
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

    def decode(
        self,
        tgt,
        memory,
        src_keys,
        tgt_keys=None,
        iv: Seq2SeqInterventions = NO_SEQ2SEQ_INTERVENTIONS,
        rec: Record = None,
    ):
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

    def forward(
        self,
        src,
        tgt,
        src_pad=None,
        tgt_pad=None,
        interventions: Seq2SeqInterventions = NO_SEQ2SEQ_INTERVENTIONS,
        rec: Record = None,
    ):
        """src (B, S), tgt (B, T) ids; *_pad: (B, ·) bool,
        True = real word (None: all real). Returns logits (B, T, V)."""
        src_keys = source_mask(src if src_pad is None else src_pad)  # (B, 1, 1, S)
        tgt_keys = None if tgt_pad is None else real_words(tgt_pad)
        memory = self.encode(src, src_keys, interventions, rec)
        return self.decode(tgt, memory, src_keys, tgt_keys, interventions, rec)


def real_words(x: torch.Tensor) -> torch.Tensor:
    """(B, S) ids or bool → (B, S) bool: which positions hold a word (ids: not [PAD])."""
    return x if x.dtype == torch.bool else x != PAD


def source_mask(x: torch.Tensor) -> torch.Tensor:
    """(B, S) source ids or bool → (B, 1, 1, S) bool: every query may look at every real source word (not [PAD]);
    the mask of the encoder's self-attention and of cross-attention, with no causal part."""
    return visible_mask(1, False, real_words(x))


def trace_names(n_layer: int) -> list[str]:
    """Every name one forward pass records (the table above; a TranslationTrace holds them all)."""
    enc = [f"encoder.blocks.{lay}.{n}" for lay in range(n_layer) for n in BLOCK_NAMES]
    attn = (f"cross_attn.{n.removeprefix('attn.')}" for n in BLOCK_NAMES if n.startswith("attn."))
    cross = ["ln_cross.hook_normalized", *attn, "hook_cross_attn_out", "hook_resid_cross"]
    dec = [f"decoder.blocks.{lay}.{n}" for lay in range(n_layer) for n in (*BLOCK_NAMES, *cross)]
    ends = ("hook_embed", "hook_pos_embed")
    encoder = [*(f"encoder.{n}" for n in ends), *enc, "encoder.ln_final.hook_normalized"]
    decoder = [*(f"decoder.{n}" for n in ends), *dec, "decoder.ln_final.hook_normalized"]
    return [*encoder, *decoder, "logits"]
