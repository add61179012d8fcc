"""The trace file (transformer/trace_file.py): what it holds, that it reads back as it was written, that it never
unpickles, and the clear error for a file that is not a trace."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from tests.conftest import SENTENCES, small_model
from transformer import Interventions, run_trace
from transformer.cli import main
from transformer.errors import InputError, TraceFileError
from transformer.trace_file import load_trace, save_trace

TAUS = ((1, 2, 3.0), (2, None, 0.25))  # layer 1 head 2 at τ 3; every head of layer 2 at τ 0.25
ABLATED = [[0, 1], [2, 3]]  # layer.head
IV = Interventions(temperature=0.5, head_temperature=TAUS, causal=False, ablate=frozenset(map(tuple, ABLATED)))
UNPICKLED = []  # grows if a reader ever unpickles the object below


def mark() -> None:
    UNPICKLED.append("unpickled")


class Trap:
    """An object whose unpickling calls mark()."""

    def __reduce__(self):
        return mark, ()


@pytest.fixture(scope="module")
def tr(tiny_model, tokenizer):
    return run_trace(tiny_model, tokenizer, SENTENCES[2], IV)


def saved(tr, model: str = "tiny") -> bytes:
    buf = io.BytesIO()
    save_trace(buf, tr, model)
    return buf.getvalue()


def npz(**arrays) -> io.BytesIO:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    buf.seek(0)
    return buf


def test_the_file_holds_the_documented_keys_as_plain_arrays(tr):
    with np.load(io.BytesIO(saved(tr)), allow_pickle=False) as f:
        data = dict(f)
    T = len(tr.encoding)
    meta = {"format", "model", "interventions", "text"}
    assert set(data) == {*meta, "tokens", "labels", "token_ids", "offsets", *tr.names}
    assert str(data["format"]) == "attention-atlas-trace/1" and str(data["model"]) == "tiny"
    assert str(data["text"]) == SENTENCES[2]
    assert data["tokens"].tolist() == list(tr.encoding.tokens) and data["labels"].tolist() == list(tr.encoding.labels)
    assert data["token_ids"].dtype == np.int64 and data["token_ids"].tolist() == list(tr.encoding.ids)
    assert data["offsets"].dtype == np.int64 and data["offsets"].shape == (T, 2)
    # each token's offsets cut its own text out of the sentence (the byte-level token, spaces as Ġ)
    assert [SENTENCES[2][s:e].replace(" ", "Ġ") for s, e in data["offsets"]] == list(tr.encoding.tokens)
    done = json.loads(str(data["interventions"]))
    assert done == {"temperature": 0.5, "head_temperature": [list(t) for t in TAUS], "causal": False, "ablate": ABLATED}
    for name in tr.names:
        assert data[name].dtype == np.float32 and np.array_equal(data[name], tr[name]), name


def test_it_reads_back_as_it_was_written_from_a_buffer_or_a_path(tr, tmp_path):
    path = tmp_path / "trace"  # no .npz suffix: the file is written under the name given
    save_trace(path, tr, "tiny")
    assert path.read_bytes()[:2] == b"PK" and not (tmp_path / "trace.npz").exists()
    for source in (path, str(path), io.BytesIO(saved(tr))):
        f = load_trace(source)
        assert f.model == "tiny" and f.interventions == IV and f.encoding == tr.encoding
        assert set(f.names) == set(tr.names) and len(f.names) == len(tr.names) > 0
        for name in tr.names:
            np.testing.assert_array_equal(f[name], tr[name])


def test_an_encoders_pair_keeps_its_token_types(tokenizer):
    bert = small_model("bert", tokenizer, 1, seed=3)
    pair = run_trace(bert, tokenizer, "the cat sat", pair="on the mat")
    f = load_trace(io.BytesIO(saved(pair)))
    assert f.encoding == pair.encoding and f.encoding.type_ids[0] == 0 and f.encoding.type_ids[-1] == 1
    assert "logits" not in f.names and set(f.names) == set(pair.names)


def test_a_decoders_file_has_no_token_types(tr):
    with np.load(io.BytesIO(saved(tr))) as f:
        assert "token_type_ids" not in f.files
    assert load_trace(io.BytesIO(saved(tr))).encoding.type_ids == ()


def good_keys(tr) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(saved(tr))) as f:
        return dict(f)


def broken_files(tr, tmp_path) -> dict[str, tuple[object, str]]:
    """Files that are not trace files, each with the words its error must hold."""
    keys = good_keys(tr)
    np.save(tmp_path / "one.npy", np.zeros(3))
    (tmp_path / "notes.txt").write_text("not a trace at all")
    whole = saved(tr)
    short = {**keys, "labels": keys["labels"][:-1]}
    return {
        "text": (tmp_path / "notes.txt", "notes.txt is not a trace file"),
        "one array": (tmp_path / "one.npy", "holds one array"),
        "cut zip": (io.BytesIO(whole[: len(whole) // 2]), "not a trace file"),
        "other npz": (npz(tokens=np.array(["a"]), ids=np.array([1])), "'format' is not"),
        "no labels": (npz(**{k: v for k, v in keys.items() if k != "labels"}), "labels missing"),
        "short labels": (npz(**short), "labels are not the arrays of"),
        "bad interventions": (npz(**{**keys, "interventions": np.array("{oops")}), "interventions cannot be read"),
        "pickled": (npz(format=np.array([Trap()], dtype=object)), "not a trace file"),
    }


def test_a_file_that_is_not_a_trace_gives_a_clear_error_and_is_never_unpickled(tr, tmp_path):
    cases = broken_files(tr, tmp_path)
    for case, (file, words) in cases.items():
        with pytest.raises(TraceFileError) as err:
            load_trace(file)
        assert words in str(err.value), (case, str(err.value))
    assert len(cases) == 8 and UNPICKLED == []
    assert issubclass(TraceFileError, InputError)
    trap = cases["pickled"][0]
    trap.seek(0)
    np.load(trap, allow_pickle=True)["format"]  # the trap really is a pickle that leaves its mark when unpickled
    assert UNPICKLED == ["unpickled"]
    UNPICKLED.clear()


def test_read_trace_lists_a_file_and_refuses_another(tr, tmp_path, capsys):
    save_trace(tmp_path / "t.npz", tr, "tiny")
    assert main(["read-trace", str(tmp_path / "t.npz")]) == 0
    out = capsys.readouterr().out
    assert "model tiny; τ 0.5; causal mask off; ablated 0.1 2.3" in out and " ".join(tr.encoding.labels) in out
    assert all(name in out for name in tr.names) and "blocks.2.attn.hook_pattern" in out
    (tmp_path / "x.npz").write_bytes(b"PK\x03\x04 broken")
    assert main(["read-trace", str(tmp_path / "x.npz")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "x.npz is not a trace file" in err and "Traceback" not in err
