"""Byte-level BPE tokenizer (Hugging Face `tokenizers`) with offsets and readable labels."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tokenizers import Tokenizer as HFTokenizer
from tokenizers import decoders, models, pre_tokenizers, trainers

END_OF_TEXT = "<|endoftext|>"
# Whitespace and control characters drawn visibly in token labels.
VISIBLE = {" ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍"}
# Invisible characters shown by code point: format (U+200B, U+202E …), private, unassigned, other spaces.
INVISIBLE = ("Cf", "Co", "Cn", "Zs", "Zl", "Zp")


def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte ↔ printable-character table, reversed: character → byte."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return {c: b for b, c in chars.items()}


BYTE_DECODER = _byte_decoder()


def visible(text: str) -> str:
    """Text with whitespace and control characters replaced by visible symbols."""
    out = []
    for ch in text:
        if ch in VISIBLE:
            out.append(VISIBLE[ch])
        elif ord(ch) < 32:
            out.append(chr(0x2400 + ord(ch)))  # the Unicode "control picture" of the character
        elif ord(ch) == 127 or 0x80 <= ord(ch) < 0xA0:
            out.append(f"\\x{ord(ch):02x}")
        elif unicodedata.category(ch) in INVISIBLE:
            out.append(f"⟨U+{ord(ch):04X}⟩")
        else:
            out.append(ch)
    return "".join(out)


@dataclass(frozen=True)
class Encoding:
    """A tokenized text. offsets[i] = (start, end) are character positions in `text`."""

    text: str
    ids: tuple[int, ...]
    tokens: tuple[str, ...]  # the vocabulary's own strings (byte-level: "Ġ" marks a leading space)
    offsets: tuple[tuple[int, int], ...]
    labels: tuple[str, ...]  # readable: "␣bear"; a token holding part of a character shows its bytes

    def __len__(self) -> int:
        return len(self.ids)


class Tokenizer:
    """Wraps a Hugging Face byte-level BPE tokenizer."""

    def __init__(self, hf: HFTokenizer):
        self.hf = hf
        self.vocab_size = hf.get_vocab_size()
        self._labels: list[str] | None = None

    @classmethod
    def from_file(cls, path: str | Path) -> Tokenizer:
        return cls(HFTokenizer.from_file(str(path)))

    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int) -> Tokenizer:
        """Learn a byte-level BPE vocabulary of `vocab_size` tokens (one is END_OF_TEXT)."""
        hf = HFTokenizer(models.BPE())
        hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        hf.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=[END_OF_TEXT],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
        hf.train_from_iterator(texts, trainer)
        return cls(hf)

    def save(self, path: str | Path) -> None:
        self.hf.save(str(path))

    def label(self, token: str) -> str:
        """Readable label of one vocabulary string: its bytes as text, whitespace made visible,
        each byte that is only part of a multi-byte character as <XX> (" 🐻"'s first three bytes: "␣<F0><9F>")."""
        try:
            raw = bytes(BYTE_DECODER[c] for c in token)
        except KeyError:  # not a byte-level token (a special token, another scheme)
            return visible(token)
        text = raw.decode("utf-8", errors="surrogateescape")  # a stray byte b becomes U+DC00 + b
        return "".join(f"<{ord(ch) - 0xDC00:02X}>" if 0xDC80 <= ord(ch) <= 0xDCFF else visible(ch) for ch in text)

    def vocab_labels(self) -> list[str]:
        """label(id) for every id, computed once."""
        if self._labels is None:
            self._labels = [self.label(self.hf.id_to_token(i) or "") for i in range(self.vocab_size)]
        return self._labels

    def encode(self, text: str) -> Encoding:
        enc = self.hf.encode(text, add_special_tokens=False)
        return Encoding(
            text=text,
            ids=tuple(enc.ids),
            tokens=tuple(enc.tokens),
            offsets=tuple(tuple(o) for o in enc.offsets),
            labels=tuple(self.label(t) for t in enc.tokens),
        )

    def decode(self, ids: Iterable[int]) -> str:
        return self.hf.decode(list(ids), skip_special_tokens=False)
