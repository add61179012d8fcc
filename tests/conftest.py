"""Fixtures: the bundled model, a tokenizer trained on a slice of the corpus and a tiny random GPT built on it."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest
import torch
from streamlit.components.v2 import manifest_scanner

from transformer import GPT, Model
from transformer.config import ModelConfig
from transformer.families.bert import BERT
from transformer.loading import LoadedModel, load_model, save_model
from transformer.tokenizer import Tokenizer

# Every AppTest run scans the metadata of every installed package for Streamlit components (~80 ms a run; the served
# app scans once, at start). The installed packages do not change during the suite: each test process scans once.
manifest_scanner.scan_component_manifests = functools.cache(manifest_scanner.scan_component_manifests)
torch.set_num_threads(1)  # as the app runs (ui/models.py); on a busy 2-core machine two threads spin
# Pages open on the bundled model in tests (its numbers are what they check); the real models have tests of their own.
os.environ.setdefault("ATLAS_DEFAULT_MODEL", "shakespeare-gpt")

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpora" / "tinyshakespeare.txt"
GPT2_FILES = ROOT.parent / "shared" / "tokenizers" / "gpt2"

# Sentences of different lengths; one repeats a token ("the").
SENTENCES = [
    "To be, or not to be, that is the question.",
    "the cat and the dog",
    "ROMEO: But soft, what light through yonder window breaks?",
    "Now is the winter of our discontent",
    "a",
    "Friends, Romans, countrymen, lend me your ears; I come to bury Caesar, not to praise him.",
    "What's in a name? That which we call a rose",
    "All the world's a stage,\nAnd all the men and women merely players;",
]


def randomize(model: GPT, seed: int, std: float = 0.3) -> GPT:
    """Every parameter random (biases and LayerNorm too), large enough that attention is far from uniform."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen)
            p.copy_(1 + 0.2 * noise if name.endswith(".w") else std * noise)
    return model.eval().requires_grad_(False)


SMALL_FAMILIES = {  # small random models of the real models' families (a tokenizer's vocabulary, d 32, 4 heads)
    "llama": {"family": "llama", "n_kv_head": 2, "pos_encoding": "rotary", "activation": "silu"},
    "bert": {
        "family": "bert",
        "pos_encoding": "learned",
        "activation": "gelu",
        "tie_embeddings": False,
        "n_token_types": 2,
        "has_lm_head": False,
    },
}


def small_model(family: str, tokenizer: Tokenizer, n_layer: int, seed: int) -> Model:
    """A randomized Llama-style decoder (GPT class, 2 key/value heads) or BERT encoder, small enough for any test."""
    cfg = ModelConfig(
        vocab_size=tokenizer.vocab_size,
        n_ctx=64,
        d_model=32,
        n_layer=n_layer,
        n_head=4,
        d_mlp=48,
        **SMALL_FAMILIES[family],
    )
    return randomize((BERT if family == "bert" else GPT)(cfg), seed)


@pytest.fixture(scope="session")
def lm() -> LoadedModel:
    """The bundled model the pages show."""
    return load_model("shakespeare-gpt")


@pytest.fixture(scope="session")
def tokenizer() -> Tokenizer:
    return Tokenizer.train([CORPUS.read_text(encoding="utf-8")[:100_000]], vocab_size=400)


@pytest.fixture(scope="session")
def tiny_cfg(tokenizer) -> ModelConfig:
    return ModelConfig(vocab_size=tokenizer.vocab_size, n_ctx=64, d_model=32, n_layer=3, n_head=4, d_mlp=64)


@pytest.fixture(scope="session")
def tiny_model(tiny_cfg) -> GPT:
    """A 3-layer, 4-head random GPT (sinusoidal positions); never modified by tests."""
    return randomize(GPT(tiny_cfg), seed=0)


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory, tiny_model, tokenizer) -> Path:
    """The tiny model saved as a model directory."""
    return save_model(tmp_path_factory.mktemp("tiny-gpt"), tiny_model, tokenizer, card="# tiny-gpt\nrandom weights\n")


# The longest files outside the browser tests, longest first (their test-seconds: bench/history/make-targets.md).
SLOW_FILES = (
    "tests/app/test_fuzz.py",  # 51
    "tests/app/test_classroom.py",  # 30
    "tests/app/test_page_heads_forming.py",  # 28
    "tests/engine/test_real_models.py",  # 22
    "tests/engine/test_train_induction.py",  # 20
    "tests/app/test_deploy.py",  # 17
)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own, which names each test's group from its marks
def pytest_collection_modifyitems(items):
    """`make test` runs with pytest-xdist's --dist loadgroup: every test file is one group, sent whole to a worker
    (its module fixtures are made once), except the tests that mark a group of their own (the browser tests, a page
    each, so that their pages spread over the workers). Groups run longest first, so that no long one is left for the
    end while the other worker waits: the browser groups, then SLOW_FILES, then the rest (sent in this order with
    --no-loadscope-reorder: tests/test_workers.py)."""
    for item in items:
        if not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    slow = {path: rank for rank, path in enumerate(SLOW_FILES)}

    def order(item) -> tuple:
        path = item.nodeid.split("::")[0]
        return (not item.get_closest_marker("browser"), slow.get(path, len(slow)))

    items.sort(key=order)  # stable: collection order within each part
