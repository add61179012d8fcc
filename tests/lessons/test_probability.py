"""lessons.probability and lessons.pca: the one softmax, masked softmax, entropy and PCA,
against torch, numpy and hand values."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from lessons.pca import pca
from lessons.probability import entropy_bits, masked_softmax, softmax


def torch_softmax(z: np.ndarray) -> np.ndarray:
    return torch.softmax(torch.tensor(z, dtype=torch.float64), dim=-1).numpy()


def test_softmax_equals_torch_on_random_rows_with_minus_infinity():
    rng = np.random.default_rng(0)
    z = rng.normal(scale=5, size=(6, 9))
    z[rng.random(z.shape) < 0.3] = -np.inf
    z[:, 0] = rng.normal(size=6)  # every row keeps a finite entry
    got = softmax(z)
    np.testing.assert_allclose(got, torch_softmax(z), rtol=1e-12, atol=1e-15)
    assert (got[np.isneginf(z)] == 0).all()
    np.testing.assert_allclose(got.sum(axis=-1), 1, rtol=1e-12)
    np.testing.assert_allclose(softmax(z.T, axis=0), got.T, rtol=1e-12)


def test_softmax_of_a_fully_masked_row_is_zero_and_large_scores_do_not_overflow():
    z = np.array([[-np.inf, -np.inf, -np.inf], [1000.0, 1001.0, -np.inf]])
    got = softmax(z)
    np.testing.assert_array_equal(got[0], 0)  # torch gives NaN here; the model's attention turns that NaN into 0
    np.testing.assert_allclose(got[1], torch_softmax(z[1]), rtol=1e-12)
    np.testing.assert_allclose(got[1, :2], [1 / (1 + math.e), math.e / (1 + math.e)], rtol=1e-12)


@pytest.mark.parametrize("temperature", [1.0, 0.5, 3.0])
def test_masked_softmax_equals_torch_masked_fill_then_softmax(temperature):
    rng = np.random.default_rng(1)
    scores = rng.normal(scale=4, size=(2, 7, 7)).astype(np.float32)
    mask = rng.random((7, 7)) < 0.6
    mask[np.arange(7), np.arange(7)] = True  # every query sees itself
    t = torch.tensor(scores, dtype=torch.float64) / temperature
    want = torch.softmax(t.masked_fill(~torch.tensor(mask), float("-inf")), dim=-1).numpy()
    got = masked_softmax(scores, mask, temperature)
    assert got.dtype == np.float32 and got.shape == scores.shape
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    assert (got[:, ~mask] == 0).all()


def test_masked_softmax_without_mask_and_with_an_empty_row():
    scores = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    np.testing.assert_allclose(masked_softmax(scores), torch_softmax(scores), rtol=1e-6)
    none = np.array([[True, True, False], [False, False, False]])
    got = masked_softmax(scores, none)
    np.testing.assert_allclose(got[0], [1 / (1 + math.e), math.e / (1 + math.e), 0], rtol=1e-6)
    np.testing.assert_array_equal(got[1], 0)


@pytest.mark.parametrize("n", [1, 2, 3, 8, 50])
def test_entropy_of_uniform_is_log2_n(n):
    assert entropy_bits(np.full(n, 1 / n)) == pytest.approx(math.log2(n), abs=1e-12)


def test_entropy_hand_values():
    np.testing.assert_array_equal(entropy_bits(np.eye(5)), 0)  # one-hot: 0 bits
    assert f"{entropy_bits([0.0, 1.0, 0.0]):.3f}" == "0.000"  # printed as 0, not −0
    assert entropy_bits([0.5, 0.25, 0.25, 0.0]) == pytest.approx(1.5)  # ½·1 + ¼·2 + ¼·2
    assert entropy_bits([0.9, 0.1]) == pytest.approx(-(0.9 * math.log2(0.9) + 0.1 * math.log2(0.1)))
    columns = np.array([[0.5, 1.0], [0.5, 0.0]])  # one distribution per column
    np.testing.assert_allclose(entropy_bits(columns, axis=0), [1.0, 0.0])


@pytest.mark.parametrize("shape", [(200, 6), (12, 40)])  # more points than dimensions, and fewer
def test_pca_equals_numpy_svd(shape):
    rng = np.random.default_rng(2)
    x = rng.normal(size=shape) * np.linspace(3, 0.5, shape[1])  # unequal spread along the axes
    k = 3
    fit = pca(x, k)
    xc = x - x.mean(axis=0)
    _, s, vt = np.linalg.svd(xc, full_matrices=False)
    np.testing.assert_allclose(fit.explained, s[:k] ** 2 / (s**2).sum(), rtol=1e-10)
    np.testing.assert_allclose(fit.mean, x.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(fit.components @ fit.components.T, np.eye(k), atol=1e-10)
    # the same axes up to sign; each sign puts the largest entry positive
    np.testing.assert_allclose(np.abs(fit.components @ vt[:k].T), np.eye(k), atol=1e-8)
    top = fit.components[np.arange(k), np.abs(fit.components).argmax(axis=1)]
    assert (top > 0).all()
    np.testing.assert_allclose(fit.project(x), xc @ fit.components.T, rtol=1e-5, atol=1e-5)


def test_pca_of_identical_points_explains_nothing():
    fit = pca(np.ones((4, 3)), 2)
    np.testing.assert_array_equal(fit.explained, 0)
