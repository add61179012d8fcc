"""Byte-level BPE tokenizer (Hugging Face `tokenizers`) with offsets and readable labels."""

from __future__ import annotations

import functools
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


@functools.lru_cache(maxsize=1 << 16)  # called for every token of every text: tokens repeat
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
    offsets: tuple[tuple[int, int], ...]  # special tokens ([CLS], [SEP]) have (0, 0)
    labels: tuple[str, ...]  # readable: "␣bear"; a token holding part of a character shows its bytes
    type_ids: tuple[int, ...] = ()  # BERT's sentence of each token: 0 = A, 1 = B (empty: all 0)

    def cut(self, n: int) -> Encoding:
        """The first n tokens (the text up to the end of the last one kept)."""
        ends = [end for _, end in self.offsets[:n]]
        return Encoding(
            self.text[: max(ends, default=0)],
            self.ids[:n],
            self.tokens[:n],
            self.offsets[:n],
            self.labels[:n],
            self.type_ids[:n],
        )

    def __len__(self) -> int:
        return len(self.ids)


def read_tokenizer_file(path: str | Path) -> HFTokenizer:
    """A tokenizer.json read by `tokenizers`, whose bare Exception becomes a ValueError that names the file."""
    try:
        return HFTokenizer.from_file(str(path))
    except Exception as err:  # `tokenizers` raises a bare Exception
        raise ValueError(f"{Path(path).name} is not a tokenizer file that `tokenizers` can read ({err})") from err


class Tokenizer:
    """Wraps a Hugging Face tokenizer: byte-level BPE (GPT-2, Llama) or WordPiece (BERT).

    add_special_tokens: let the tokenizer's post-processor add its special tokens ([CLS] … [SEP] for BERT);
    off for decoders, which Hugging Face runs with no BOS here.
    """

    def __init__(self, hf: HFTokenizer, add_special_tokens: bool = False):
        self.hf = hf
        self.add_special_tokens = add_special_tokens
        self.byte_level = type(hf.decoder).__name__ == "ByteLevel"
        self.vocab_size = hf.get_vocab_size()
        self._labels: list[str] | None = None

    @classmethod
    def from_file(cls, path: str | Path) -> Tokenizer:
        return cls(read_tokenizer_file(path))

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
        if not self.byte_level:  # WordPiece: the token's own text ("##ing" continues a word)
            return visible(token)
        try:
            raw = bytes(BYTE_DECODER[c] for c in token)
        except KeyError:  # not a byte-level string (a special token)
            return visible(token)
        text = raw.decode("utf-8", errors="surrogateescape")  # a stray byte b becomes U+DC00 + b
        return "".join(f"<{ord(ch) - 0xDC00:02X}>" if 0xDC80 <= ord(ch) <= 0xDCFF else visible(ch) for ch in text)

    def vocab_labels(self) -> list[str]:
        """label(id) for every id, computed once."""
        if self._labels is None:
            self._labels = [self.label(self.hf.id_to_token(i) or "") for i in range(self.vocab_size)]
        return self._labels

    def encode(self, text: str, pair: str | None = None) -> Encoding:
        """Tokenize `text` (and a second sentence `pair`, for an encoder: [CLS] A [SEP] B [SEP])."""
        enc = self.hf.encode(text, pair, add_special_tokens=self.add_special_tokens)
        return Encoding(
            text=text if pair is None else f"{text}\n{pair}",
            ids=tuple(enc.ids),
            tokens=tuple(enc.tokens),
            offsets=tuple(tuple(o) for o in enc.offsets),
            labels=tuple(self.label(t) for t in enc.tokens),
            type_ids=tuple(enc.type_ids) if pair is not None or self.add_special_tokens else (),
        )

    def decode(self, ids: Iterable[int]) -> str:
        return self.hf.decode(list(ids), skip_special_tokens=False)
