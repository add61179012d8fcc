"""The translator's word-level vocabulary, and the reading of a typed English phrase against it.

Ids: the four specials, then the n_source source-language (English) words, then the target (French) words not
already listed. A typed phrase is split as the vocabulary splits text; words outside it are listed with close
matches instead of being read as [UNK].
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

from tokenizers import Tokenizer as HFTokenizer
from tokenizers import models, normalizers, pre_tokenizers

from .errors import SourceInputError
from .tokenizer import read_tokenizer_file

SPECIALS = ("[PAD]", "[UNK]", "[BOS]", "[EOS]")
PAD, UNK, BOS, EOS = range(4)
MAX_SOURCE_CHARS = 2_000  # longer text is cut before it is split
MAX_UNKNOWN = 20  # unknown words listed (with suggestions)


class Vocab:
    """Word-level vocabulary (Hugging Face `tokenizers` WordLevel, saved as tokenizer.json).

    Text is split by `tokenizers` too: NFKC, lower case, words and punctuation apart.
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
