"""Tokenizer: offsets slice the original text, decoding round-trips, labels show whitespace and control characters."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import ByteLevelBPETokenizer

from tests.conftest import GPT2_FILES
from transformer.tokenizer import BYTE_DECODER, END_OF_TEXT, Tokenizer

TEXTS = {
    "ascii": "To be, or not to be: that is the question.",
    "accents": "café crème, naïve Zoë — e\u0301 (combining)",
    "cjk": "東京は日本の首都です",
    "emoji": "I love 🐻 bears 🐻‍❄️ and 👩‍👩‍👧‍👦 families 🇫🇷!",
    "rtl": "مرحبا بالعالم — שלום",
    "control": "a\x00b\x07c\x1b[31mred\x7f\u202edesrever",
    "whitespace": "  two  spaces\n\nnew\tline\r\n end ",
    "special": "one<|endoftext|>two",
}


@pytest.fixture(scope="module")
def gpt2_tokenizer(tmp_path_factory) -> Tokenizer:
    path = tmp_path_factory.mktemp("gpt2-tok") / "tokenizer.json"
    ByteLevelBPETokenizer(str(GPT2_FILES / "vocab.json"), str(GPT2_FILES / "merges.txt")).save(str(path))
    return Tokenizer.from_file(path)


@pytest.fixture(params=["trained", "gpt2"])
def tok(request, tokenizer, gpt2_tokenizer) -> Tokenizer:
    return tokenizer if request.param == "trained" else gpt2_tokenizer


def token_bytes(token: str) -> bytes:
    """The bytes a vocabulary string stands for (a special token stands for itself)."""
    return token.encode("utf-8") if token == END_OF_TEXT else bytes(BYTE_DECODER[c] for c in token)


def check_offsets(tok: Tokenizer, text: str) -> None:
    """Each token's span holds exactly its characters; the spans cover the text in order, without gaps."""
    enc = tok.encode(text)
    covered = 0
    for tid, token, (s, e) in zip(enc.ids, enc.tokens, enc.offsets, strict=True):
        assert 0 <= s < e <= len(text)
        assert s <= covered, f"gap before {token!r}"
        covered = max(covered, e)
        if token == END_OF_TEXT:
            assert text[s:e] == token
            continue
        raw = token_bytes(token)
        try:
            whole = raw.decode("utf-8")
        except UnicodeDecodeError:  # part of a character: the span is the whole character(s) holding these bytes
            assert raw in text[s:e].encode("utf-8"), (token, text[s:e])
            assert len(text[s:e].encode("utf-8")) > len(raw)
        else:
            assert text[s:e] == whole == tok.decode([tid]), (token, text[s:e])
    assert covered == len(text)
    assert b"".join(token_bytes(t) for t in enc.tokens) == text.encode("utf-8")  # byte-level: nothing lost


@pytest.mark.parametrize("name", TEXTS)
def test_offsets_slice_the_text_back_into_tokens(tok, name):
    check_offsets(tok, TEXTS[name])


def test_offsets_of_multibyte_tokens(gpt2_tokenizer, tokenizer):
    """Whole-character tokens for accents/CJK/RTL in GPT-2's vocabulary, byte pieces in
    the small one: both slice right."""
    for tk in (gpt2_tokenizer, tokenizer):
        for text in ("café", "東京", "🐻‍❄️", "שלום"):
            enc = tk.encode(text)
            assert "".join(text[s:e] for s, e in dict.fromkeys(enc.offsets)) == text  # distinct spans, in order
    enc = gpt2_tokenizer.encode("café")
    assert [enc.text[s:e] for s, e in enc.offsets][-1] == "é"
    assert tokenizer.encode("東京").offsets[0] == (0, 1)  # the first byte of 東 still points at 東


@pytest.mark.parametrize("name", TEXTS)
def test_decode_round_trips(tok, name):
    assert tok.decode(tok.encode(TEXTS[name]).ids) == TEXTS[name]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text())
def test_round_trip_and_offsets_any_text(tokenizer, text):
    assert tokenizer.decode(tokenizer.encode(text).ids) == text
    if text:
        check_offsets(tokenizer, text)
    for label in tokenizer.encode(text).labels:
        assert label and not any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in label), label
        assert not any(c.isspace() for c in label), label


def test_labels_make_whitespace_visible(tok):
    enc = tok.encode("a b  c\nd\te\r\nf")
    joined = "".join(enc.labels)
    assert joined == "a␣b␣␣c↵d⇥e␍↵f"  # every character, each whitespace as its symbol
    assert not any(c.isspace() for c in joined)


def test_labels_show_control_characters(tok):
    joined = "".join(tok.encode("a\x00b\x07c\x1bd\x7fe").labels)
    assert "␀" in joined and "␇" in joined and "␛" in joined and "\\x7f" in joined
    assert not any(unicodedata.category(c) == "Cc" for c in joined)


def test_partial_byte_labels_keep_their_text_visible(gpt2_tokenizer):
    """GPT-2 packs " 🐻" as " " + the emoji's first bytes: the space must still read as ␣."""
    enc = gpt2_tokenizer.encode("I love 🐻")
    assert enc.labels[-3:] == ("␣<F0><9F>", "<90>", "<BB>")
    assert enc.tokens[-3] == "ĠðŁ"


def test_invisible_format_characters_get_a_code_point(gpt2_tokenizer):
    assert gpt2_tokenizer.label("\u202e") == "⟨U+202E⟩"  # a non-byte-level string goes through visible() too
    zwsp = gpt2_tokenizer.hf.token_to_id("âĢĭ")  # U+200B as a whole token in GPT-2's vocabulary
    assert gpt2_tokenizer.vocab_labels()[zwsp] == "⟨U+200B⟩"
    assert gpt2_tokenizer.encode("a\u200bb").labels == ("a", "⟨U+200B⟩", "b")


def test_vocab_labels_are_distinct_enough(tokenizer):
    labels = tokenizer.vocab_labels()
    assert len(labels) == tokenizer.vocab_size
    assert labels[tokenizer.hf.token_to_id("Ġthe")] == "␣the"
    assert len(set(labels)) == len(labels)  # two different tokens never look the same


def test_trained_tokenizer_has_the_requested_size(tokenizer):
    assert tokenizer.vocab_size == 400
    assert tokenizer.hf.token_to_id(END_OF_TEXT) is not None
