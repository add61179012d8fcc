"""The count words of the pages' texts."""

from lessons.words import noun


def test_noun_agrees_with_its_number():
    assert [noun(n, "token") for n in (0, 1, 2)] == ["tokens", "token", "tokens"]
    assert noun(1, "token is", "tokens are") == "token is" and noun(3, "token is", "tokens are") == "tokens are"
