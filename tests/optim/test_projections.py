"""Euclidean projections and domains (dpbandit/optim/projections.py): exactness through the variational
inequality <v - p, q - p> <= 0 for every q in C (checked at the vertices of the polytopes, which suffices because
it is linear in q), idempotence, known answers, vectorisation, geometry constants and validation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbandit.optim.projections import (
    Box,
    L1Ball,
    L2Ball,
    LpBall,
    Simplex,
    make_domain,
    project_box,
    project_l1_ball,
    project_l2_ball,
    project_lp_ball,
    project_simplex,
)


def vertices(domain: str, d: int, radius: float = 1.0) -> np.ndarray:
    eye = np.eye(d)
    return eye if domain == "simplex" else radius * np.vstack([eye, -eye])


def assert_projection_at_vertices(v: np.ndarray, p: np.ndarray, verts: np.ndarray, tol: float = 1e-10) -> None:
    """p is the projection of v onto conv(verts) iff p in the set and max_q <v - p, q - p> <= 0."""
    assert float(np.max((verts - p) @ (v - p))) <= tol * (1.0 + float(np.abs(v).max()))


@pytest.mark.parametrize("d", [1, 2, 5, 50])
def test_simplex_projection_is_exact(d):
    rng = np.random.default_rng(d)
    for scale in (0.1, 1.0, 30.0):
        v = scale * rng.standard_normal((200, d))
        p = project_simplex(v)
        assert np.all(p >= 0.0)
        np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
        for vi, pi in zip(v, p):
            assert_projection_at_vertices(vi, pi, vertices("simplex", d))
        np.testing.assert_allclose(project_simplex(p), p, atol=1e-12)  # idempotent
        np.testing.assert_allclose(project_simplex(v + 7.5), p, atol=1e-10)  # invariant to shifts along 1


def test_simplex_projection_known_answers():
    np.testing.assert_allclose(project_simplex([1.0, 1.0]), [0.5, 0.5])
    np.testing.assert_allclose(project_simplex([2.0, 0.0]), [1.0, 0.0])
    np.testing.assert_allclose(project_simplex([0.2, 0.3, 0.5]), [0.2, 0.3, 0.5])
    np.testing.assert_allclose(project_simplex([0.5, 0.4, -3.0]), [0.55, 0.45, 0.0])
    np.testing.assert_allclose(project_simplex([3.0, 1.0, 0.0], total=2.0), [2.0, 0.0, 0.0])


@pytest.mark.parametrize("d, radius", [(1, 1.0), (3, 0.5), (20, 2.0)])
def test_l1_ball_projection_is_exact(d, radius):
    rng = np.random.default_rng(10 + d)
    v = rng.standard_normal((300, d)) * rng.choice([0.05, 1.0, 10.0], size=(300, 1))
    p = project_l1_ball(v, radius)
    norms = np.abs(p).sum(axis=1)
    assert np.all(norms <= radius * (1 + 1e-12))
    inside = np.abs(v).sum(axis=1) <= radius
    np.testing.assert_array_equal(p[inside], v[inside])
    np.testing.assert_allclose(norms[~inside], radius, rtol=1e-12)
    assert np.all(np.sign(p) * np.sign(v) >= 0)  # no sign flips
    for vi, pi in zip(v, p):
        assert_projection_at_vertices(vi, pi, vertices("l1-ball", d, radius))


def test_l2_ball_and_box_projections():
    rng = np.random.default_rng(3)
    v = rng.standard_normal((100, 4)) * 2
    p = project_l2_ball(v, 1.5)
    norms = np.linalg.norm(v, axis=1)
    np.testing.assert_allclose(np.linalg.norm(p, axis=1), np.minimum(norms, 1.5), rtol=1e-12)
    np.testing.assert_allclose(p * norms[:, None], v * np.linalg.norm(p, axis=1)[:, None], atol=1e-12)
    np.testing.assert_array_equal(project_l2_ball(np.zeros(3)), np.zeros(3))
    np.testing.assert_array_equal(project_box([-3.0, 0.2, 9.0], -1.0, 1.0), [-1.0, 0.2, 1.0])
    np.testing.assert_array_equal(Box(0.5).project([[-3.0, 0.2]]), [[-0.5, 0.2]])


def test_projections_are_vectorised_over_leading_axes():
    rng = np.random.default_rng(4)
    v = rng.standard_normal((3, 5, 6))
    for f in (project_simplex, project_l1_ball, project_l2_ball):
        batched = f(v)
        assert batched.shape == v.shape
        rows = np.array([f(row) for row in v.reshape(-1, 6)]).reshape(v.shape)
        np.testing.assert_allclose(batched, rows, atol=1e-15)


def test_large_l1_projection_is_fast_and_exact():
    v = np.random.default_rng(5).standard_normal(200_000)
    p = project_l1_ball(v, 10.0)
    assert abs(np.abs(p).sum() - 10.0) < 1e-8
    tau = np.max(np.abs(v) - np.abs(p))  # soft threshold: p = sign(v) max(|v| - tau, 0)
    np.testing.assert_allclose(p, np.sign(v) * np.maximum(np.abs(v) - tau, 0.0), atol=1e-12)


def lp(x, p):
    return np.sum(np.abs(x) ** p, axis=-1) ** (1.0 / p)


@pytest.mark.parametrize("p", [1.01, 1.1, 1.5, 1.9, 2.1, 3.0, 10.0, 60.0])
def test_lp_ball_projection_satisfies_the_kkt_conditions(p):
    """u = Pi(y) for ||y||_p > r iff ||u||_p = r, sign(u) = sign(y) and |y| - |u| = c |u|^(p-1) for one c > 0 (y - u
    in the normal cone of the ball at u); c is read off the largest coordinate, the residual is checked on all."""
    rng = np.random.default_rng(int(10 * p))
    y = rng.standard_normal((300, 7)) * rng.exponential(size=(300, 7)) * rng.choice([0.3, 3.0, 1e3], size=(300, 1))
    radius = 0.7
    u = project_lp_ball(y, p, radius)
    outside = lp(y, p) > radius
    np.testing.assert_array_equal(u[~outside], y[~outside])
    np.testing.assert_allclose(lp(u[outside], p), radius, rtol=1e-12)
    assert np.all(np.sign(u) * np.sign(y) >= 0) and np.all(np.abs(u) <= np.abs(y) * (1 + 1e-13))
    for yi, ui in zip(y[outside], u[outside]):
        a, w = np.abs(yi), np.abs(ui)
        m = np.argmax(a)
        c = (a[m] - w[m]) / w[m] ** (p - 1.0)
        assert c > 0
        tiny = np.finfo(float).tiny
        live = w >= tiny  # for p near 1 the exact root can lie below the normal floats (then w is 0 or subnormal)
        np.testing.assert_allclose((a - w - c * w ** (p - 1.0))[live], 0.0, atol=1e-12 * a[m])
        assert np.all(a[~live] <= c * tiny ** (p - 1.0) * (1 + 1e-12) + tiny)


@pytest.mark.parametrize("p", [1.5, 4.0])
def test_lp_ball_projection_variational_inequality(p):
    """<y - u, v - u> <= 0 for many feasible v (the boundary included) and u in the ball."""
    rng = np.random.default_rng(7)
    v = rng.standard_normal((20_000, 4)) * rng.exponential(size=(20_000, 4)) ** 2
    v /= lp(v, p)[:, None]
    feasible = np.concatenate([v, v * rng.random((20_000, 1))])
    for _ in range(5):
        y = 3.0 * rng.standard_normal(4)
        u = project_lp_ball(y, p, 1.0)
        assert lp(u, p) <= 1.0 + 1e-12 and np.max((feasible - u) @ (y - u)) <= 1e-9


def test_lp_ball_projection_special_exponents_scales_and_batches():
    rng = np.random.default_rng(8)
    y = 3.0 * rng.standard_normal((4, 5, 6))
    np.testing.assert_array_equal(project_lp_ball(y, 1.0, 1.5), project_l1_ball(y, 1.5))
    np.testing.assert_array_equal(project_lp_ball(y, 2.0, 1.5), project_l2_ball(y, 1.5))
    np.testing.assert_array_equal(project_lp_ball(y, math.inf, 1.5), project_box(y, -1.5, 1.5))
    batched = project_lp_ball(y, 1.5, 1.0)
    rows = np.array([project_lp_ball(row, 1.5, 1.0) for row in y.reshape(-1, 6)]).reshape(y.shape)
    np.testing.assert_allclose(batched, rows, rtol=1e-13, atol=1e-15)
    for p in (1.5, 3.0):  # continuity in p at the closed forms
        np.testing.assert_allclose(project_lp_ball(y[0, 0], 2.0 + 1e-7, 1.0), project_l2_ball(y[0, 0]), atol=1e-6)
        np.testing.assert_allclose(project_lp_ball(y[0, 0], 1.0 + 1e-6, 1.0), project_l1_ball(y[0, 0]), atol=1e-4)
        # no overflow or underflow: the projection commutes with scaling, at any magnitude
        for scale in (1e-200, 1e200):
            np.testing.assert_allclose(project_lp_ball(scale * y[1, 1], p, scale), scale * project_lp_ball(y[1, 1], p),
                                       rtol=1e-12)
    np.testing.assert_allclose(project_lp_ball([1e200, 1e200], 3.0, 1.0), 2 ** (-1 / 3), rtol=1e-13)
    inside = np.array([0.1, -0.2])
    assert project_lp_ball(inside, 1.5) is not inside and np.array_equal(project_lp_ball(inside, 1.5), inside)


def test_lp_ball_domain():
    ball = LpBall(1.5, 2.0)
    assert ball.max_norm(9) == 2.0 and ball.diameter(9) == 4.0  # p <= 2: a vertex is the farthest point
    assert LpBall(4.0, 1.0).max_norm(16) == pytest.approx(2.0)  # p > 2: d^(1/2 - 1/p)
    assert LpBall(math.inf, 1.0).max_norm(4) == Box(1.0).max_norm(4)
    assert ball.describe() == "l_1.5 ball of radius 2" and ball.contains(ball.center(3))
    assert ball.contains([1.0, 1.0]) and not ball.contains([2.0, 1.0])
    np.testing.assert_allclose(ball.project([[3.0, 0.0]]), [[2.0, 0.0]], rtol=1e-14)


def test_domains_geometry_and_membership():
    d = 4
    assert L2Ball(2.0).diameter(d) == 4.0 and L2Ball(2.0).max_norm(d) == 2.0
    assert L1Ball(0.5).diameter(d) == 1.0 and L1Ball(0.5).max_norm(d) == 0.5
    assert Simplex().diameter(d) == math.sqrt(2.0) and Simplex().max_norm(d) == 1.0
    assert Box(1.0).diameter(d) == 4.0 and Box(1.0).max_norm(d) == 2.0
    np.testing.assert_allclose(Simplex().center(d), 0.25)
    for dom in (L2Ball(), L1Ball(), Simplex(), Box()):
        assert dom.contains(dom.center(d))
        assert not dom.contains(np.full(d, 3.0))
        assert not dom.contains(np.full(d, np.nan))
    assert isinstance(make_domain("l1-ball", 2.0), L1Ball) and make_domain("l1-ball", 2.0).radius == 2.0
    assert make_domain(Simplex()) == Simplex()


@pytest.mark.parametrize("call, match", [
    (lambda: L2Ball(0.0), "radius"),
    (lambda: L1Ball(-1.0), "radius"),
    (lambda: Box(float("nan")), "radius"),
    (lambda: make_domain("l2-ball", 0.0), "radius"),
    (lambda: make_domain("sphere"), "domain"),
    (lambda: project_simplex([1.0, 2.0], total=0.0), "total"),
    (lambda: project_box([1.0], 1.0, 1.0), "low < high"),
    (lambda: project_l2_ball(1.0), "axis"),
    (lambda: LpBall(0.5, 1.0), "p must be"),
    (lambda: LpBall(1.5, 0.0), "radius"),
    (lambda: project_lp_ball([1.0], float("nan")), "p must be"),
])
def test_bad_inputs_raise(call, match):
    with pytest.raises(ValueError, match=match):
        call()
