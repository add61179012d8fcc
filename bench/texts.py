"""Texts of an exact token count for any model's tokenizer (the bench scripts share it).

A tokenizer that adds special tokens (BERT's [CLS] … [SEP]) counts them: "64 tokens" is the length of the trace.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHAKESPEARE = ROOT.parent / "shared" / "corpora" / "tinyshakespeare.txt"


def passage(chars: int = 40_000) -> str:
    """The start of the Shakespeare corpus (the bundled model's training text)."""
    return SHAKESPEARE.read_text()[:chars]


def cut_to_tokens(tokenizer, text: str, n: int, start: int = 0) -> str:
    """A piece of `text` that `tokenizer` reads as exactly n tokens: from character `start`, or from the first line
    start after it where a cut works (a cut can merge tokens differently: "\n\n" is one token at the end of a
    text and two inside it), up to the end of a token."""
    while start < len(text):
        piece = text[start:]
        for end in sorted({end for _, end in tokenizer.encode(piece).offsets if end > 0}):  # special tokens have (0, 0)
            count = len(tokenizer.encode(piece[:end]))
            if count == n:
                return piece[:end]
            if count > n + 2:
                break
        start = text.find("\n", start) + 1 or len(text)
    raise ValueError(f"no piece of the text gives exactly {n} tokens")
