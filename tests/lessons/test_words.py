"""The helpers of the pages' texts: count words, and user text escaped for markdown."""

import string

from lessons.words import md, noun, quote


def test_noun_agrees_with_its_number():
    assert [noun(n, "token") for n in (0, 1, 2)] == ["tokens", "token", "tokens"]
    assert noun(1, "token is", "tokens are") == "token is" and noun(3, "token is", "tokens are") == "tokens are"


def test_markdown_is_escaped():
    assert md("*a* _b_ [c](d) `e` #f <g> $h$ 1.") == r"\*a\* \_b\_ \[c\]\(d\) \`e\` \#f \<g\> \$h\$ 1\."
    assert md(":red[x] ~~y~~ a|b") == r"\:red\[x\] \~\~y\~\~ a\|b"  # Streamlit's colour, strikethrough, tables
    assert md("plain words, Ünïcode 123") == r"plain words\, Ünïcode 123"


def test_every_ascii_punctuation_mark_is_escaped_and_nothing_else():
    assert md(string.punctuation) == "".join("\\" + ch for ch in string.punctuation)
    assert md(string.ascii_letters + string.digits + " ") == string.ascii_letters + string.digits + " "


def test_quote_marks_shortens_shows_invisible_characters_and_escapes():
    assert quote("I love *bears*.") == r"«I love \*bears\*\.»"
    assert quote("a\nb\tc") == "«a↵b⇥c»"  # a line break cannot start a new markdown block
    assert quote("zero\u200bwidth") == r"«zero⟨U\+200B⟩width»"
    long = "x" * 61
    assert quote(long) == "«" + "x" * 59 + "…»" and quote(long, n=61) == "«" + long + "»"
