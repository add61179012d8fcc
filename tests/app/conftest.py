"""The real models for the app tests that open pages on them (skipped where their packages are not installed)."""

from __future__ import annotations

import pytest

from transformer.loading import shared_model

SMOL, MINI = "smollm2-135m", "minilm-l6"
SENTENCE = "The animal didn't cross the street because it was too tired."


@pytest.fixture(scope="module")
def smol():
    return shared_model(SMOL)


@pytest.fixture(scope="module")
def mini():
    return shared_model(MINI)
