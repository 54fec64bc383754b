"""Parameter generators (dpbandit.envs.parameters)."""

from __future__ import annotations

import numpy as np
import pytest

from dpbandit.envs.parameters import dense_theta, norm_of, sparse_theta
from dpbandit.seeding import stream


@pytest.mark.parametrize("norm", ["l1", "l2"])
@pytest.mark.parametrize("values", ["equal", "gaussian", "uniform"])
def test_sparse_theta_has_exactly_s_nonzeros_and_the_exact_norm(norm, values):
    theta = sparse_theta(stream(3, "instance"), 200, 30, 5, values, norm, 2.5)
    assert theta.shape == (200, 30)
    assert np.all(np.count_nonzero(theta, axis=1) == 5)
    np.testing.assert_allclose(norm_of(theta, norm), 2.5, rtol=1e-14)


def test_equal_entries_are_the_papers_one_fifth():
    theta = sparse_theta(stream(0, "instance"), 50, 50, 5, "equal", "l1", 1.0)
    nonzero = theta[theta != 0]
    np.testing.assert_allclose(nonzero, 0.2, rtol=1e-15)
    np.testing.assert_allclose(np.abs(theta).sum(axis=1), 1.0, rtol=1e-15)
    l2 = sparse_theta(stream(0, "instance"), 4, 10, 4, "equal", "l2", 1.0)
    np.testing.assert_allclose(l2[l2 != 0], 0.5, rtol=1e-15)


def test_support_is_uniform_over_coordinates():
    n, d, s = 20_000, 10, 3
    counts = np.count_nonzero(sparse_theta(stream(11, "instance"), n, d, s), axis=0)
    p = s / d  # each coordinate is in a uniform s-subset with probability s/d
    sd = np.sqrt(n * p * (1 - p))
    assert np.all(np.abs(counts - n * p) < 6 * sd)


def test_gaussian_values_take_both_signs_and_differ_between_rows():
    theta = sparse_theta(stream(1, "instance"), 100, 20, 4, "gaussian", "l2", 1.0)
    assert (theta > 0).any() and (theta < 0).any()
    assert len({tuple(np.round(row, 12)) for row in theta}) == 100


@pytest.mark.parametrize("norm", ["l1", "l2"])
def test_dense_theta_is_dense_with_the_exact_norm(norm):
    theta = dense_theta(stream(2, "instance"), 50, 8, norm, 0.7)
    assert theta.shape == (50, 8) and np.all(theta != 0)
    np.testing.assert_allclose(norm_of(theta, norm), 0.7, rtol=1e-14)


def test_dense_l2_direction_is_isotropic():
    theta = dense_theta(stream(4, "instance"), 40_000, 3, "l2", 1.0)
    # uniform on the unit sphere in R^3: E[theta] = 0, E[theta theta^T] = I/3; per-entry sd <= 1/sqrt(n)
    tol = 6 / np.sqrt(40_000)
    np.testing.assert_allclose(theta.mean(axis=0), 0.0, atol=tol)
    np.testing.assert_allclose(theta.T @ theta / 40_000, np.eye(3) / 3, atol=tol)


def test_same_generator_state_gives_the_same_parameters():
    a = sparse_theta(stream(9, "instance"), 5, 40, 5)
    b = sparse_theta(stream(9, "instance"), 5, 40, 5)
    c = sparse_theta(stream(10, "instance"), 5, 40, 5)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        (dict(s=0), ValueError, r"s must be an integer in \[1, 10\], got 0"),
        (dict(s=11), ValueError, r"s must be an integer in \[1, 10\], got 11"),
        (dict(values="uniforms"), ValueError, r"values must be one of \('equal', 'gaussian', 'uniform'\)"),
        (dict(norm="linf"), ValueError, r"norm must be one of \('l1', 'l2'\)"),
        (dict(bound=0.0), ValueError, r"bound must be a finite number > 0, got 0.0"),
        (dict(bound=float("nan")), ValueError, r"bound must be a number > 0, got nan"),
        (dict(n=0), ValueError, r"n must be an integer >= 1"),
        (dict(d=0), ValueError, r"d must be an integer >= 1"),
        (dict(rng=np.random.default_rng(0).bit_generator), TypeError, r"rng must be a numpy.random.Generator"),
    ],
)
def test_sparse_theta_rejects_bad_input(kwargs, error, match):
    args = dict(rng=stream(0, "instance"), n=3, d=10, s=3, values="equal", norm="l1", bound=1.0)
    args.update(kwargs)
    with pytest.raises(error, match=match):
        sparse_theta(**args)


def test_dense_theta_rejects_bad_input():
    with pytest.raises(ValueError, match=r"norm must be one of \('l1', 'l2'\), got 'l3'"):
        dense_theta(stream(0, "instance"), 2, 3, "l3", 1.0)
    with pytest.raises(ValueError, match=r"bound must be a finite number > 0, got -1.0"):
        dense_theta(stream(0, "instance"), 2, 3, "l2", -1.0)


def test_uniform_values_are_fliphats_law_rescaled():
    """U[0.5, 1] magnitudes with random signs, then scaled: within a row the magnitudes span a factor <= 2."""
    theta = sparse_theta(stream(4, "instance"), 2000, 20, 5, "uniform", "l1", 3.75)
    mags = np.abs(theta[theta != 0]).reshape(2000, 5)
    assert np.all(mags.max(axis=1) <= 2.0 * mags.min(axis=1) + 1e-12)
    assert 0.45 < np.mean(theta[theta != 0] > 0) < 0.55
