"""Small helpers for the texts the pages show: the count words, probabilities as printed, and user text made safe
for markdown.

User text in a plotly label is escaped by figures.common.esc (plotly reads HTML there); in markdown, by md and quote
below. Both are needed: figures cannot import lessons, and lessons write markdown with the user's words in it.
"""

import re

from transformer.tokenizer import visible

MARKDOWN = re.compile(r"([!-/:-@\[-`{-~])")  # every ASCII punctuation mark: any of them may start markdown (or $math$)


def noun(n: int, singular: str, plural: str | None = None) -> str:
    """The noun that goes with the number n: noun(1, "token") = "token", noun(2, "token") = "tokens"."""
    return singular if n == 1 else plural or singular + "s"


def percent(p: float) -> str:
    """A probability as the pages print it: a percentage with one decimal from 0.1 % up ("12.3%"), scientific notation
    below, where a percentage would read 0.0 % ("2.7e-7"), and "0%" for exactly 0. Every probability the pages print
    goes through here, so a reader can check a claim such as "became more likely" on the numbers shown."""
    if p >= 0.001:
        return f"{p:.1%}"
    if p <= 0:
        return "0%"
    mantissa, exponent = f"{p:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}"  # 2.7e-07 → 2.7e-7


def shown(p: float) -> float:
    """The probability a reader sees: `percent(p)` read back as a number (0.123456 → 0.123; 2.71e-7 → 2.7e-7)."""
    text = percent(p)
    return float(text[:-1] + "e-2") if text.endswith("%") else float(text)  # "12.3%" → 12.3e-2


def md(text: str) -> str:
    """Text shown as itself in markdown: every ASCII punctuation mark backslash-escaped (no emphasis, links, code,
    math or HTML; CommonMark shows an escaped mark as the mark)."""
    return MARKDOWN.sub(r"\\\1", text)


def quote(text: str, n: int = 60) -> str:
    """User text for a markdown message: «…», shortened to n characters, whitespace other than spaces and invisible
    characters shown (transformer.tokenizer.visible: ↵, ⇥, ⟨U+200B⟩ …), escaped (md)."""
    short = text if len(text) <= n else text[: n - 1] + "…"
    return "«" + md(" ".join(visible(part) for part in short.split(" "))) + "»"
