"""The GGUF llama and zipped BERT readers, on small random checkpoints written here and on the two real packages.

The GGUF writer lives here, not in transformer/: it mirrors llama.cpp's convert_hf_to_gguf.py (metadata keys,
Q/K row permutation, F32 norms) so the reader can be checked against Hugging Face's own weights and tokenizers.
"""

from __future__ import annotations

import json
import sys
import zipfile

import gguf
import numpy as np
import pytest
import torch
from gguf.quants import dequantize, quantize
from safetensors.torch import save as save_safetensors
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    BertConfig,
    BertModel,
    BertTokenizerFast,
    LlamaConfig,
    LlamaForCausalLM,
)

from transformer.formats import FormatError
from transformer.formats.gguf_llama import read_gguf_llama
from transformer.formats.hf_bert import read_bert_dir, read_bert_zip
from transformer.formats.packages import MINILM, SMOLLM2, find_package_file

CORPUS = [
    "The animal didn't cross the street because it was too tired.",
    "The quick brown fox jumps over the lazy dog, again and again.",
    "Attention is all you need; attention patterns show where each token looks.",
    "A café in Zürich serves crème brûlée at 10:30 on Saturdays.",
    "Numbers like 2024 and 3.14159 appear in text too.",
] * 4
TEXTS = [
    "The animal didn't cross the street because it was too tired",
    "I love 🐻 and 🍕!",
    "Café naïve façade — Zürich, crème brûlée",
    "  two  spaces\tand a tab\nand a new line",
    "<|im_start|>user\nHi there<|im_end|>",
    "In 2024, π ≈ 3.14159",
]
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
Q, K = "attn_q", "attn_k"
GGUF_LAYER = {
    "input_layernorm": "attn_norm",
    "self_attn.q_proj": Q,
    "self_attn.k_proj": K,
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "post_attention_layernorm": "ffn_norm",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}


# ---------------------------------------------------------------- a tiny llama, written as llama.cpp would


@pytest.fixture(scope="module")
def bpe() -> Tokenizer:
    """A byte-level BPE tokenizer trained here, with chat-style special tokens at ids 0-2."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(CORPUS, trainer)
    return tokenizer


@pytest.fixture(scope="module")
def hf_llama(bpe) -> LlamaForCausalLM:
    torch.manual_seed(0)
    sizes = {
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 128,
    }
    cfg = LlamaConfig(
        vocab_size=bpe.get_vocab_size(),
        **sizes,
        rope_theta=10000,
        tie_word_embeddings=True,
        bos_token_id=0,
        eos_token_id=2,
    )  # BOS, EOS = <|endoftext|>, <|im_end|>
    return LlamaForCausalLM(cfg).eval()


def permute(w: np.ndarray, n_heads: int) -> np.ndarray:
    """HF's Q/K row order -> llama.cpp's (convert_hf_to_gguf.py's LlamaModel.permute)."""
    return w.reshape(n_heads, 2, w.shape[0] // n_heads // 2, w.shape[1]).swapaxes(1, 2).reshape(w.shape)


def gguf_tensors(model: LlamaForCausalLM) -> dict[str, np.ndarray]:
    """GGUF name -> float32 array as llama.cpp stores it (Q and K permuted; lm_head only when untied)."""
    cfg, state = model.config, model.state_dict()
    out = {"token_embd.weight": state["model.embed_tokens.weight"], "output_norm.weight": state["model.norm.weight"]}
    if not cfg.tie_word_embeddings:
        out["output.weight"] = state["lm_head.weight"]
    for i in range(cfg.num_hidden_layers):
        out.update(
            {f"blk.{i}.{short}.weight": state[f"model.layers.{i}.{hf}.weight"] for hf, short in GGUF_LAYER.items()}
        )
    arrays = {name: t.numpy() for name, t in out.items()}
    for name in arrays:
        kind = name.split(".")[-2]
        if kind in (Q, K):
            arrays[name] = permute(arrays[name], cfg.num_attention_heads if kind == Q else cfg.num_key_value_heads)
    return arrays


def write_gguf(
    path, model, bpe, *, cfg=None, arch="llama", matrix_type=None, embed_type=None, edit=dict, add_bos=False,
    tokenizer_model="gpt2",
):
    """Write `model` and `bpe` as a llama.cpp GGUF, with metadata from `cfg` (default: the model's own) and the
    tensors `edit` returns; matrices quantized to `matrix_type`, norms always F32."""
    cfg = cfg or model.config
    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_context_length(cfg.max_position_embeddings)
    writer.add_embedding_length(cfg.hidden_size)
    writer.add_block_count(cfg.num_hidden_layers)
    writer.add_feed_forward_length(cfg.intermediate_size)
    writer.add_head_count(cfg.num_attention_heads)
    writer.add_head_count_kv(cfg.num_key_value_heads)
    writer.add_rope_freq_base(cfg.rope_parameters["rope_theta"])
    writer.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    writer.add_rope_dimension_count(cfg.head_dim)
    writer.add_vocab_size(cfg.vocab_size)
    vocab = sorted(bpe.get_vocab().items(), key=lambda item: item[1])
    writer.add_tokenizer_model(tokenizer_model)
    writer.add_tokenizer_pre("smollm")
    writer.add_token_list([token for token, _ in vocab])
    writer.add_token_types([3 if token in SPECIALS else 1 for token, _ in vocab])
    writer.add_token_merges([" ".join(pair) for pair in json.loads(bpe.to_str())["model"]["merges"]])
    writer.add_bos_token_id(cfg.bos_token_id)
    writer.add_eos_token_id(cfg.eos_token_id)
    writer.add_add_bos_token(add_bos)
    for name, w in edit(gguf_tensors(model)).items():
        qtype = embed_type if name == "token_embd.weight" else matrix_type
        if w.ndim == 2 and qtype is not None:
            writer.add_tensor(name, quantize(w, qtype), raw_dtype=qtype)
        else:
            writer.add_tensor(name, w)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.fixture(scope="module")
def llama_gguf(tmp_path_factory, hf_llama, bpe):
    return write_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf", hf_llama, bpe)


def test_gguf_f32_round_trip_equals_hf_state_and_config(llama_gguf, hf_llama):
    files = read_gguf_llama(llama_gguf)
    state = hf_llama.state_dict()
    assert set(files.state) == set(state) - {"lm_head.weight"}  # tied: no output.weight in the file
    for name, tensor in files.state.items():
        assert tensor.dtype == torch.float32 and tensor.is_contiguous(), name
        assert torch.equal(tensor, state[name]), name
    cfg = hf_llama.config
    same = [
        "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
        "num_key_value_heads", "head_dim", "max_position_embeddings",
    ]
    expected = {key: getattr(cfg, key) for key in [*same, "tie_word_embeddings", "bos_token_id", "eos_token_id"]}
    # GGUF stores eps as float32
    expected |= {"rope_theta": 10000.0, "rms_norm_eps": float(np.float32(cfg.rms_norm_eps)), "pad_token_id": None}
    assert files.config == expected
    assert LlamaConfig(**files.config).rope_parameters["rope_theta"] == 10000.0


def test_gguf_reader_agrees_with_hf_gguf_loader(llama_gguf, hf_llama):
    """Hugging Face's own GGUF loader reads the file back to the original weights:
    the writer's permutation is llama.cpp's."""
    reference = AutoModelForCausalLM.from_pretrained(
        str(llama_gguf.parent), gguf_file=llama_gguf.name, dtype=torch.float32
    ).state_dict()
    files = read_gguf_llama(llama_gguf)
    for name, tensor in files.state.items():
        assert torch.equal(tensor, reference[name]), name
        assert torch.equal(tensor, hf_llama.state_dict()[name]), name


def test_gguf_untied_output_becomes_lm_head(tmp_path, hf_llama, bpe):
    torch.manual_seed(1)
    untied = LlamaForCausalLM(LlamaConfig(**(hf_llama.config.to_dict() | {"tie_word_embeddings": False}))).eval()
    files = read_gguf_llama(write_gguf(tmp_path / "untied.gguf", untied, bpe))
    assert files.config["tie_word_embeddings"] is False
    assert torch.equal(files.state["lm_head.weight"], untied.state_dict()["lm_head.weight"])


def test_gguf_quantized_tensors_dequantize_like_gguf(tmp_path, hf_llama, bpe):
    """Embedding Q8_0 and matrices Q4_1, as in SmolLM2's file. Quantization blocks run along rows and the Q/K
    permutation moves whole rows, so the HF weight read back is exactly dequantize(quantize(original))."""
    q8, q4 = gguf.GGMLQuantizationType.Q8_0, gguf.GGMLQuantizationType.Q4_1
    files = read_gguf_llama(write_gguf(tmp_path / "q.gguf", hf_llama, bpe, matrix_type=q4, embed_type=q8))
    for name, original in hf_llama.state_dict().items():
        if name == "lm_head.weight":
            continue
        w = original.numpy()
        qtype = q8 if name == "model.embed_tokens.weight" else q4
        expected = dequantize(quantize(w, qtype), qtype) if w.ndim == 2 else w  # norms stay F32
        assert np.array_equal(files.state[name].numpy(), expected), name
        scale = np.abs(w).max()
        assert np.abs(files.state[name].numpy() - w).max() <= scale * (0.01 if qtype == q8 else 0.1), name


def test_gguf_tokenizer_matches_trained_and_hf_tokenizers(llama_gguf, bpe):
    tokenizer = read_gguf_llama(llama_gguf).tokenizer
    hf = AutoTokenizer.from_pretrained(str(llama_gguf.parent), gguf_file=llama_gguf.name)
    for text in TEXTS:
        ids = tokenizer.encode(text).ids
        assert ids == bpe.encode(text).ids == hf(text)["input_ids"], text
        assert tokenizer.decode(ids, skip_special_tokens=False) == text
    assert tokenizer.encode("<|im_start|>user").ids[0] == 1  # a control token stays whole
    assert tokenizer.encode("Hi").ids[0] != 0  # no BOS


def test_gguf_add_bos_flag_is_honoured_like_hf(tmp_path, hf_llama, bpe):
    path = write_gguf(tmp_path / "bos.gguf", hf_llama, bpe, add_bos=True)
    tokenizer = read_gguf_llama(path).tokenizer
    hf = AutoTokenizer.from_pretrained(str(tmp_path), gguf_file=path.name)
    for text in TEXTS[:3]:
        assert tokenizer.encode(text).ids == hf(text)["input_ids"] == [0, *bpe.encode(text).ids]


# ---------------------------------------------------------------- broken GGUF files


def test_gguf_wrong_magic(tmp_path):
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGML" + bytes(100))
    with pytest.raises(FormatError, match="not a GGUF file"):
        read_gguf_llama(path)


# cut in: fixed header, metadata, tensor infos (5502-6688), data, last tensor
@pytest.mark.parametrize("keep", [10, 3000, 6000, 100_000, -64])
def test_gguf_truncated(tmp_path, llama_gguf, keep):
    data = llama_gguf.read_bytes()
    path = tmp_path / "cut.gguf"
    path.write_bytes(data[:keep])
    with pytest.raises(FormatError, match="truncated"):
        read_gguf_llama(path)


def test_gguf_other_architecture(tmp_path, hf_llama, bpe):
    with pytest.raises(FormatError, match="'gpt2' model; only 'llama'"):
        read_gguf_llama(write_gguf(tmp_path / "gpt2.gguf", hf_llama, bpe, arch="gpt2"))


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (
            lambda arrays: {name: w for name, w in arrays.items() if name != "blk.1.ffn_up.weight"},
            "missing 1 tensors a llama needs: blk.1.ffn_up.weight",
        ),
        (
            lambda arrays: arrays | {"rope_freqs.weight": np.ones(8, np.float32)},
            "has tensors a plain llama does not: rope_freqs.weight",
        ),
        (
            lambda arrays: arrays | {"blk.0.attn_norm.weight": np.ones(64, np.int32)},
            "blk.0.attn_norm.weight is stored as I32, which gguf cannot dequantize",
        ),
    ],
)
def test_gguf_bad_tensors(tmp_path, hf_llama, bpe, edit, problem):
    with pytest.raises(FormatError, match=problem):
        read_gguf_llama(write_gguf(tmp_path / "bad.gguf", hf_llama, bpe, edit=edit))


def test_gguf_tensor_shape_disagrees_with_metadata(tmp_path, hf_llama, bpe):
    cfg = LlamaConfig(**(hf_llama.config.to_dict() | {"intermediate_size": 96}))
    with pytest.raises(FormatError, match=r"tensor blk.0.ffn_gate.weight has shape \(128, 64\), expected \(96, 64\)"):
        read_gguf_llama(write_gguf(tmp_path / "shape.gguf", hf_llama, bpe, cfg=cfg))


def test_gguf_sentencepiece_tokenizer_is_refused(tmp_path, hf_llama, bpe):
    with pytest.raises(FormatError, match="tokenizer 'llama'; only byte-level BPE"):
        read_gguf_llama(write_gguf(tmp_path / "spm.gguf", hf_llama, bpe, tokenizer_model="llama"))


# ---------------------------------------------------------------- a tiny BERT, zipped


@pytest.fixture(scope="module")
def wordpiece() -> Tokenizer:
    """An uncased WordPiece tokenizer.json like all-MiniLM-L6-v2's, padding and truncating to 16 as it does to 128."""
    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokenizer.train_from_iterator(
        CORPUS, trainers.WordPieceTrainer(vocab_size=200, special_tokens=specials, show_progress=False)
    )
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    tokenizer.enable_padding(length=16)
    tokenizer.enable_truncation(max_length=16)
    return tokenizer


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory, wordpiece):
    torch.manual_seed(2)
    cfg = BertConfig(
        vocab_size=wordpiece.get_vocab_size(), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=64,
    )
    folder = tmp_path_factory.mktemp("bert") / "model"
    BertModel(cfg).eval().save_pretrained(folder)
    wordpiece.save(str(folder / "tokenizer.json"))
    return folder


def zip_folder(folder, path, prefix="", skip=(), replace=None):
    """Zip the folder's files under `prefix`, leaving out `skip` and swapping in `replace` {name: bytes}."""
    replace = replace or {}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in sorted(folder.iterdir()):
            if file.name not in skip:
                archive.writestr(prefix + file.name, replace.get(file.name, file.read_bytes()))
    return path


@pytest.mark.parametrize("prefix", ["", "all-MiniLM-L6-v2/"])
def test_bert_zip_equals_hf(tmp_path, bert_dir, wordpiece, prefix):
    files = read_bert_zip(zip_folder(bert_dir, tmp_path / "model.zip", prefix))
    reference = BertModel.from_pretrained(bert_dir).state_dict()
    assert set(files.state) == set(reference)
    for name, tensor in files.state.items():
        assert tensor.dtype == torch.float32 and torch.equal(tensor, reference[name]), name
    assert files.config["model_type"] == "bert" and files.config["num_hidden_layers"] == 2
    vocab = dict(sorted(wordpiece.get_vocab().items(), key=lambda item: item[1]))
    hf = BertTokenizerFast(vocab=vocab, do_lower_case=True)  # built from the vocabulary alone, not from tokenizer.json
    long = " ".join(TEXTS)  # longer than the 16 tokens the file truncates to
    for text in [*TEXTS, long]:
        assert files.tokenizer.encode(text).ids == hf(text)["input_ids"], text
    assert files.tokenizer.encode("a", "b").type_ids == [0, 0, 0, 1, 1]


def test_bert_dir_equals_zip(tmp_path, bert_dir):
    from_dir, from_zip = read_bert_dir(bert_dir), read_bert_zip(zip_folder(bert_dir, tmp_path / "model.zip"))
    assert from_dir.config == from_zip.config
    assert all(torch.equal(from_dir.state[name], from_zip.state[name]) for name in from_zip.state)
    assert from_dir.tokenizer.encode(TEXTS[0]).ids == from_zip.tokenizer.encode(TEXTS[0]).ids


def test_bert_prefix_dropped_and_integer_buffers_left_out(tmp_path, bert_dir):
    """BertForMaskedLM-style names ("bert.") and a position_ids buffer as old transformers saved it."""
    state = BertModel.from_pretrained(bert_dir).state_dict()
    prefixed = {f"bert.{name}": t.contiguous() for name, t in state.items()} | {
        "bert.embeddings.position_ids": torch.arange(64)[None]
    }
    files = read_bert_zip(
        zip_folder(bert_dir, tmp_path / "mlm.zip", replace={"model.safetensors": save_safetensors(prefixed)})
    )
    assert set(files.state) == set(state)


# ---------------------------------------------------------------- broken BERT zips


def test_bert_not_a_zip(tmp_path):
    path = tmp_path / "model.zip"
    path.write_bytes(b"PK" + bytes(300))
    with pytest.raises(FormatError, match="not a readable zip file"):
        read_bert_zip(path)


def test_bert_truncated_zip(tmp_path, bert_dir):
    data = zip_folder(bert_dir, tmp_path / "model.zip").read_bytes()
    (tmp_path / "cut.zip").write_bytes(data[: len(data) // 2])
    with pytest.raises(FormatError, match="not a readable zip file"):
        read_bert_zip(tmp_path / "cut.zip")


def test_bert_truncated_safetensors(tmp_path, bert_dir):
    blob = (bert_dir / "model.safetensors").read_bytes()
    path = zip_folder(bert_dir, tmp_path / "model.zip", replace={"model.safetensors": blob[: len(blob) // 2]})
    with pytest.raises(FormatError, match="model.safetensors in .* is truncated or corrupt"):
        read_bert_zip(path)


@pytest.mark.parametrize("prefix", ["", "model/"])
def test_bert_missing_files(tmp_path, bert_dir, prefix):
    with pytest.raises(FormatError, match=r"model.zip has no config.json, tokenizer.json \(a BERT checkpoint needs"):
        read_bert_zip(zip_folder(bert_dir, tmp_path / "model.zip", prefix, skip={"config.json", "tokenizer.json"}))


def test_bert_other_model_type(tmp_path, bert_dir):
    config = json.loads((bert_dir / "config.json").read_text()) | {"model_type": "gpt2"}
    with pytest.raises(FormatError, match="model_type 'gpt2', not 'bert'"):
        read_bert_zip(
            zip_folder(bert_dir, tmp_path / "model.zip", replace={"config.json": json.dumps(config).encode()})
        )


def test_bert_bad_tokenizer_json(tmp_path, bert_dir):
    with pytest.raises(FormatError, match="tokenizer.json in .* is not a valid tokenizers file"):
        read_bert_zip(zip_folder(bert_dir, tmp_path / "model.zip", replace={"tokenizer.json": b'{"model": 1}'}))


# ---------------------------------------------------------------- finding packaged files


def test_find_package_file_does_not_import():
    assert find_package_file("no_such_package_here", "x") is None
    assert find_package_file("json", "no_such_file") is None
    assert find_package_file("json", "decoder.py").name == "decoder.py"
    for module, name in (SMOLLM2, MINILM):
        assert find_package_file(module, name).is_file()
        assert module not in sys.modules
    with pytest.raises(ValueError, match="top-level"):
        find_package_file("json.decoder", "x")


# ---------------------------------------------------------------- the real pretrained models


@pytest.fixture(scope="module")
def smollm2():
    return read_gguf_llama(find_package_file(*SMOLLM2))


@pytest.mark.slow
def test_real_smollm2(smollm2):
    c = smollm2.config
    assert (
        (c["num_hidden_layers"], c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"], c["hidden_size"])
        == (30, 9, 3, 64, 576)
    )
    assert (
        (c["vocab_size"], c["intermediate_size"], c["rope_theta"], c["tie_word_embeddings"])
        == (49152, 1536, 100000.0, True)
    )
    assert c["rms_norm_eps"] == pytest.approx(1e-5)
    assert len(smollm2.state) == 30 * 9 + 2 and "lm_head.weight" not in smollm2.state
    assert smollm2.state["model.layers.0.self_attn.k_proj.weight"].shape == (192, 576)
    assert sum(t.numel() for t in smollm2.state.values()) == 134_515_008


@pytest.mark.slow
def test_real_smollm2_tokenizer_matches_hf(smollm2):
    path = find_package_file(*SMOLLM2)
    hf = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    for text in TEXTS:
        assert smollm2.tokenizer.encode(text).ids == hf(text)["input_ids"], text
    assert smollm2.tokenizer.encode(TEXTS[0]).ids[:3] == [504, 3161, 3683]  # "The animal didn't": no BOS


def test_real_minilm(tmp_path):
    path = find_package_file(*MINILM)
    files = read_bert_zip(path)
    c = files.config
    assert (
        (c["num_hidden_layers"], c["num_attention_heads"], c["hidden_size"], c["intermediate_size"], c["vocab_size"])
        == (6, 12, 384, 1536, 30522)
    )
    with zipfile.ZipFile(path) as archive:
        archive.extractall(tmp_path)
    reference = BertModel.from_pretrained(tmp_path).state_dict()
    assert set(files.state) == set(reference)
    assert all(torch.equal(files.state[name], reference[name]) for name in reference)
    hf = BertTokenizerFast.from_pretrained(tmp_path)
    for text in [*TEXTS, " ".join(TEXTS * 10)]:  # the last is past the 128 tokens the file truncates to
        assert files.tokenizer.encode(text).ids == hf(text)["input_ids"], text
    assert files.tokenizer.encode("🐻").tokens == ["[CLS]", "[UNK]", "[SEP]"]
