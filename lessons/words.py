"""Small helpers for the texts the pages show: the count words, and user text made safe for markdown.

User text in a plotly label is escaped by figures.common.esc (plotly reads HTML there); in markdown, by md and quote
below. Both are needed: figures cannot import lessons, and lessons write markdown with the user's words in it.
"""

import re

from transformer.tokenizer import visible

MARKDOWN = re.compile(r"([!-/:-@\[-`{-~])")  # every ASCII punctuation mark: any of them may start markdown (or $math$)


def noun(n: int, singular: str, plural: str | None = None) -> str:
    """The noun that goes with the number n: noun(1, "token") = "token", noun(2, "token") = "tokens"."""
    return singular if n == 1 else plural or singular + "s"


def md(text: str) -> str:
    """Text shown as itself in markdown: every ASCII punctuation mark backslash-escaped (no emphasis, links, code,
    math or HTML; CommonMark shows an escaped mark as the mark)."""
    return MARKDOWN.sub(r"\\\1", text)


def quote(text: str, n: int = 60) -> str:
    """User text for a markdown message: «…», shortened to n characters, whitespace other than spaces and invisible
    characters shown (transformer.tokenizer.visible: ↵, ⇥, ⟨U+200B⟩ …), escaped (md)."""
    short = text if len(text) <= n else text[: n - 1] + "…"
    return "«" + md(" ".join(visible(part) for part in short.split(" "))) + "»"
