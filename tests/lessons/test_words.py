"""The helpers of the pages' texts: count words, and user text escaped for markdown."""

import string

from lessons.words import md, noun, percent, quote, shown


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


def test_percent_is_a_percentage_from_a_tenth_of_a_percent_and_scientific_below():
    assert [percent(p) for p in (1.0, 0.25, 0.12345, 0.001)] == ["100.0%", "25.0%", "12.3%", "0.1%"]
    tiny = (0.00042, 2.7e-7, 3.04e-5, 1e-12, 0.0)
    assert [percent(p) for p in tiny] == ["4.2e-4", "2.7e-7", "3.0e-5", "1.0e-12", "0%"]


def test_shown_reads_the_printed_number_back():
    # the value a reader sees: 12.3 % is 0.123, 2.7e-7 is 2.7e-7; two probabilities that print alike compare equal
    assert shown(0.12345) == 0.123 and shown(2.71e-7) == 2.7e-7 and shown(0.0) == 0.0
    assert shown(0.12341) == shown(0.12349) and shown(2.7e-7) < shown(3.0e-5)
