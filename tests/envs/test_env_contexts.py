"""Context laws and normalisation (dpbandit.envs.contexts)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dpbandit.envs.contexts import CONTEXT_LAWS, context_covariance, draw_contexts, normalise
from dpbandit.envs.parameters import norm_of
from dpbandit.seeding import stream


@pytest.mark.parametrize(
    "law,rho,scale",
    [("gaussian", 0.5, 1.0), ("ar", 0.8, 2.0), ("ar", -0.6, 1.0), ("equicorrelated", 0.6, 0.5),
     ("equicorrelated", -0.2, 1.0), ("sphere", 0.5, 3.0)],
)
def test_empirical_second_moment_matches_the_target_covariance(law, rho, scale):
    n, d = 20_000, 5
    x = draw_contexts(stream(42, "contexts"), n, d, law, scale=scale, rho=rho)
    sigma = context_covariance(law, d, scale, rho)
    empirical = x.T @ x / n  # the mean is known to be zero
    # For Gaussian x, Var(x_i x_j) = S_ii S_jj + S_ij^2; 6 standard errors per entry (25 entries: p < 1e-6).
    # The sphere law has lighter tails than the Gaussian with the same covariance, so the bound is conservative.
    se = np.sqrt((np.outer(np.diag(sigma), np.diag(sigma)) + sigma**2) / n)
    assert np.all(np.abs(empirical - sigma) <= 6 * se), np.max(np.abs(empirical - sigma) / se)
    assert np.all(np.abs(x.mean(axis=0)) <= 6 * np.sqrt(np.diag(sigma) / n))


def test_target_covariances():
    np.testing.assert_allclose(context_covariance("ar", 3, 2.0, 0.5), 4 * np.array([[1, .5, .25], [.5, 1, .5],
                                                                                     [.25, .5, 1]]))
    np.testing.assert_allclose(context_covariance("equicorrelated", 3, 1.0, -0.25),
                               [[1, -.25, -.25], [-.25, 1, -.25], [-.25, -.25, 1]])
    np.testing.assert_allclose(context_covariance("sphere", 4, 2.0), np.eye(4))
    np.testing.assert_allclose(context_covariance("gaussian", 2, 3.0), 9 * np.eye(2))


def test_sphere_draws_lie_on_the_sphere_of_radius_scale():
    x = draw_contexts(stream(0, "contexts"), 1000, 7, "sphere", scale=2.5)
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 2.5, rtol=1e-14)


@pytest.mark.parametrize("law", CONTEXT_LAWS)
def test_draws_are_prefix_consistent_so_block_size_cannot_change_results(law):
    big = draw_contexts(stream(5, "contexts"), 25, 6, law, rho=0.3)
    rng = stream(5, "contexts")
    blocks = np.concatenate([draw_contexts(rng, n, 6, law, rho=0.3) for n in (10, 1, 14)])
    np.testing.assert_array_equal(blocks, big)
    shaped = draw_contexts(stream(5, "contexts"), (5, 5), 6, law, rho=0.3)
    np.testing.assert_array_equal(shaped.reshape(25, 6), big)


@pytest.mark.parametrize(
    "law,rho,match",
    [("ar", 1.0, r"rho must be a finite number in \(-1, 1\) for the 'ar' context law, got 1.0"),
     ("ar", -1.5, r"rho must be a finite number in \(-1, 1\)"),
     ("equicorrelated", -0.3, r"rho must be a finite number in \(-1/\(d-1\), 1\) = \(-0.25, 1\) .* d=5"),
     ("equicorrelated", 1.0, r"rho must be a finite number in \(-1/\(d-1\), 1\)"),
     ("gaussian", float("nan"), r"rho must be a number, got nan")],
)
def test_bad_rho_is_rejected(law, rho, match):
    with pytest.raises(ValueError, match=match):
        draw_contexts(stream(0, "contexts"), 3, 5, law, rho=rho)


def test_bad_law_and_scale_are_rejected():
    with pytest.raises(ValueError, match=r"law must be one of \('gaussian', 'ar', 'equicorrelated', 'sphere'\)"):
        draw_contexts(stream(0, "contexts"), 3, 5, "uniform")
    with pytest.raises(ValueError, match=r"scale must be a finite number > 0, got 0.0"):
        draw_contexts(stream(0, "contexts"), 3, 5, scale=0.0)
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        draw_contexts(None, 3, 5)


@pytest.mark.parametrize("norm", ["l2", "linf"])
def test_scale_mode_puts_every_vector_exactly_on_the_sphere(norm):
    x = draw_contexts(stream(1, "contexts"), 500, 9, "gaussian", scale=0.05)
    y = normalise(x, norm, 2.0, "scale")
    np.testing.assert_allclose(norm_of(y, norm), 2.0, rtol=1e-14)
    assert np.all(np.abs(y) <= 2.0)
    # direction preserved
    np.testing.assert_allclose(y / norm_of(y, norm)[:, None], x / norm_of(x, norm)[:, None], rtol=1e-12)


def test_clip_mode_projects_only_vectors_outside_the_ball():
    x = np.array([[0.3, 0.4], [3.0, 4.0], [-2.0, 0.5], [0.0, 0.0]])
    np.testing.assert_allclose(normalise(x, "l2", 1.0, "clip"), [[0.3, 0.4], [0.6, 0.8], [-0.970142500145332,
                                                                                             0.242535625036333],
                                                                  [0.0, 0.0]], rtol=1e-12)
    # l_inf: the Euclidean projection onto the cube is coordinate-wise clipping
    np.testing.assert_array_equal(normalise(x, "linf", 1.0, "clip"), [[0.3, 0.4], [1.0, 1.0], [-1.0, 0.5], [0, 0]])


def test_zero_vector_stays_zero_under_scale():
    np.testing.assert_array_equal(normalise(np.zeros((2, 3)), "l2", 1.0, "scale"), 0.0)


def test_normalise_rejects_bad_arguments():
    with pytest.raises(ValueError, match=r"norm must be one of \('l2', 'linf'\), got 'l1'"):
        normalise(np.ones((1, 2)), "l1", 1.0)
    with pytest.raises(ValueError, match=r"bound must be a finite number > 0, got 0.0"):
        normalise(np.ones((1, 2)), "l2", 0.0)
    with pytest.raises(ValueError, match=r"mode must be one of \('scale', 'clip'\), got 'project'"):
        normalise(np.ones((1, 2)), "l2", 1.0, "project")


@settings(max_examples=60, deadline=None)
@given(
    x=arrays(np.float64, (4, 3), elements=st.floats(-1e6, 1e6, allow_nan=False)),
    norm=st.sampled_from(["l2", "linf"]),
    mode=st.sampled_from(["scale", "clip"]),
    bound=st.floats(1e-3, 1e3),
)
def test_normalised_vectors_always_lie_in_the_ball(x, norm, mode, bound):
    y = normalise(x, norm, bound, mode)
    assert np.all(np.abs(y) <= bound)
    assert np.all(norm_of(y, norm) <= bound * (1 + 1e-12))
    if mode == "clip":
        inside = norm_of(x, norm) <= bound
        np.testing.assert_array_equal(y[inside], x[inside])
