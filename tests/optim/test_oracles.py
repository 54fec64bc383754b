"""LMOs, dual-norm clipping and l_p projections (spec/han-frank-wolfe.md §1 "LMO", §7.3; spec/errata.md E3)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpbandit.optim.oracles import (
    clamp_glm_derivative,
    clip_dual,
    dual_exponent,
    lp_ball_lmo,
    lp_ball_projection,
    lp_norm,
    simplex_lmo,
)
from dpbandit.optim.projections import project_box, project_l1_ball, project_l2_ball

RNG = np.random.default_rng(20240601)


def boundary_points(p: float, radius: float, d: int, n: int) -> np.ndarray:
    """n points on the l_p sphere of ``radius`` (random directions, rescaled)."""
    u = RNG.standard_normal((n, d)) * RNG.exponential(size=(n, d)) ** 2  # heavy tails reach near-vertices
    return radius * u / lp_norm(u, p)[:, None]


@pytest.mark.parametrize("p", [1.0, 1.5, 2.0, 3.0, math.inf])
def test_lmo_value_is_minus_radius_times_dual_norm(p):
    q = dual_exponent(p)
    g = RNG.standard_normal((50, 6))
    v = lp_ball_lmo(g, p, 2.0)
    np.testing.assert_allclose(np.sum(g * v, axis=1), -2.0 * lp_norm(g, q), rtol=1e-12)
    assert np.all(lp_norm(v, p) <= 2.0 * (1 + 1e-12))


@pytest.mark.parametrize("p", [1.5, 2.0, 4.0])
def test_lmo_against_brute_force_smooth_balls(p):
    for d in (2, 3):
        points = boundary_points(p, 1.3, d, 100_000)
        for _ in range(5):
            g = RNG.standard_normal(d)
            v = lp_ball_lmo(g, p, 1.3)
            best = np.min(points @ g)
            assert g @ v <= best + 1e-12  # nothing in the ball does better
            assert best - g @ v < 2e-3 * np.abs(g).sum()  # and the sampled sphere gets close to it


@pytest.mark.parametrize("p", [1.0, math.inf])
def test_lmo_against_vertex_enumeration(p):
    d, r = 4, 0.7
    if p == 1.0:
        vertices = np.concatenate([r * np.eye(d), -r * np.eye(d)])
    else:
        vertices = r * np.array(list(itertools.product([-1.0, 1.0], repeat=d)))
    for _ in range(20):
        g = RNG.standard_normal(d)
        v = lp_ball_lmo(g, p, r)
        assert g @ v == pytest.approx(np.min(vertices @ g), rel=1e-14)
        assert any(np.allclose(v, w) for w in vertices)


def test_lmo_edge_cases():
    assert np.array_equal(lp_ball_lmo(np.zeros(3), 1.5, 1.0), np.zeros(3))
    assert np.array_equal(lp_ball_lmo(np.array([1.0, -3.0, 3.0]), 1.0, 2.0), np.array([0.0, 2.0, 0.0]))
    tiny = np.array([1e-300, -2e-300])
    v = lp_ball_lmo(tiny, 1.5, 1.0)
    assert lp_norm(v, 1.5) == pytest.approx(1.0) and v[0] < 0 < v[1]
    v = lp_ball_lmo(np.array([1e300, 1e300]), 3.0, 1.0)
    assert np.all(np.isfinite(v)) and lp_norm(v, 3.0) == pytest.approx(1.0)


def test_simplex_lmo():
    g = RNG.standard_normal((10, 5))
    v = simplex_lmo(g, 2.0)
    np.testing.assert_allclose(np.sum(g * v, axis=1), 2.0 * g.min(axis=1))
    assert np.all(v >= 0) and np.allclose(v.sum(axis=1), 2.0)


@pytest.mark.parametrize("q", [1.0, 2.0, 3.0, math.inf])
def test_clip_dual(q):
    u = RNG.standard_normal((100, 4)) * 3
    c = clip_dual(u, q, 1.5)
    norms = lp_norm(u, q)
    np.testing.assert_allclose(lp_norm(c, q), np.minimum(norms, 1.5), rtol=1e-12)
    inside = norms <= 1.5
    np.testing.assert_array_equal(c[inside], u[inside])
    np.testing.assert_allclose(c * norms[:, None], u * np.minimum(norms, 1.5)[:, None], rtol=1e-12)  # radial


def test_coordinate_clip_and_glm_clamp():
    u = np.array([3.0, -0.5, -2.0])
    np.testing.assert_array_equal(clip_dual(u, math.inf, 1.0, mode="coordinate"), [1.0, -0.5, -1.0])
    with pytest.raises(ValueError, match="needs q = inf"):
        clip_dual(u, 2.0, 1.0, mode="coordinate")
    with pytest.raises(ValueError, match="mode must be one of"):
        clip_dual(u, 2.0, 1.0, mode="other")
    x = np.array([0.3, -0.4, 0.5])
    for c in (-7.0, -0.1, 0.0, 2.5):
        clamped = clamp_glm_derivative(c, lp_norm(x, 3.0), 1.0)
        np.testing.assert_allclose(clamped * x, clip_dual(c * x, 3.0, 1.0), rtol=1e-12)
    # the scalar clamp is 1-Lipschitz in c (keeps L1, spec/errata.md E3)
    cs = np.linspace(-10, 10, 101)
    out = clamp_glm_derivative(cs, 0.5, 1.0)
    assert np.all(np.abs(np.diff(out)) <= np.abs(np.diff(cs)) + 1e-15)
    assert clamp_glm_derivative(3.0, 0.0, 1.0) == 3.0


@pytest.mark.parametrize("p", [1.0, 1.5, 2.0, 3.0, math.inf])
def test_projection_variational_inequality(p):
    """u = Pi(y) iff <y - u, v - u> <= 0 for every feasible v (checked on many feasible points)."""
    d, r = 4, 1.0
    feasible = boundary_points(p, r, d, 20_000) * RNG.random((20_000, 1))
    feasible = np.concatenate([feasible, boundary_points(p, r, d, 20_000)])
    for _ in range(4):
        y = RNG.standard_normal(d) * 2
        u = lp_ball_projection(y, p, r)
        assert lp_norm(u, p) <= r * (1 + 1e-9)
        assert np.max((feasible - u) @ (y - u)) <= 1e-6
    y = np.array([0.1, -0.2, 0.0, 0.1])
    np.testing.assert_array_equal(lp_ball_projection(y, p, r), y)  # inside: unchanged


def test_bad_inputs():
    with pytest.raises(ValueError, match="p must be a number >= 1"):
        lp_ball_lmo(np.ones(2), 0.5, 1.0)
    with pytest.raises(ValueError, match="radius must be a finite number > 0"):
        lp_ball_lmo(np.ones(2), 2.0, 0.0)
    with pytest.raises(ValueError, match="radius must be"):
        lp_ball_projection(np.ones(2), 2.0, -1.0)
    with pytest.raises(ValueError, match="bound must be"):
        clip_dual(np.ones(2), 2.0, 0.0)
    with pytest.raises(TypeError, match="p must be a real number"):
        dual_exponent("2")


@pytest.mark.parametrize("p, project", [(1.0, lambda y, r: project_l1_ball(y, r)),
                                        (2.0, lambda y, r: project_l2_ball(y, r)),
                                        (math.inf, lambda y, r: project_box(y, -r, r))])
def test_projection_delegates_to_the_exact_projections(p, project):
    """p = 1, 2, inf use dpbandit.optim.projections (one implementation); inside points come back unchanged."""
    rng = np.random.default_rng(11)
    for scale in (0.1, 3.0):
        y = scale * rng.standard_normal(6)
        np.testing.assert_array_equal(lp_ball_projection(y, p, 1.5), project(y, 1.5))
    y = np.array([0.4, -0.3, 0.2])
    out = lp_ball_projection(y, p, 1.0)
    np.testing.assert_array_equal(out, y)
    assert out is not y  # a copy: the caller may write into it


def test_general_p_projection_is_continuous_in_p():
    """Between the exact cases the bisection agrees with them in the limit (p -> 2 from both sides)."""
    y = np.array([1.2, -0.7, 0.3, 2.0])
    exact = project_l2_ball(y, 1.0)
    for p in (2.0 - 1e-6, 2.0 + 1e-6):
        np.testing.assert_allclose(lp_ball_projection(y, p, 1.0), exact, atol=1e-5)
