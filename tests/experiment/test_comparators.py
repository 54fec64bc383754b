"""Best fixed point in hindsight over a learner's own domain (dpbandit/experiment/comparators.py): agreement with a
generic constrained solver on every domain, the duality-gap certificate, the linear oracles, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize

from dpbandit.experiment.comparators import (
    best_in_hindsight,
    comparator_domain,
    frank_wolfe_gap,
    hindsight_gap,
    linear_oracle,
)
from dpbandit.optim.losses import LogisticLoss, SquaredLoss
from dpbandit.optim.projections import Box, L1Ball, L2Ball, LpBall, Simplex


def data(T=40, d=4, seed=0, logistic=False):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(T, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    z = x @ np.array([2.0, -1.0, 0.5, 1.5])[:d]
    y = (rng.random(T) < 1 / (1 + np.exp(-3 * z))).astype(float) if logistic else z + 0.1 * rng.normal(size=T)
    return x, y


def objective(x, y, loss, mu, t):
    xs, ys = x[:t], y[:t]
    return lambda w: float(np.sum(loss.phi(xs @ w, ys))) + 0.5 * t * mu * float(w @ w)


def brute_force(x, y, loss, mu, domain, t):
    """SLSQP on an explicit description of the domain, from two starting points (the l1 ball as w = a - b with
    a, b >= 0, sum(a + b) <= R)."""
    d = x.shape[1]
    f = objective(x, y, loss, mu, t)
    if isinstance(domain, L1Ball):
        g = lambda ab: f(ab[:d] - ab[d:])  # noqa: E731
        cons = [{"type": "ineq", "fun": lambda ab: domain.radius - ab.sum()}]
        starts, bounds = (np.zeros(2 * d), np.full(2 * d, 0.05)), [(0, None)] * (2 * d)
    else:
        g, bounds, cons = f, None, []
        if isinstance(domain, L2Ball):
            cons = [{"type": "ineq", "fun": lambda w: domain.radius**2 - w @ w}]
        elif isinstance(domain, LpBall):
            cons = [{"type": "ineq", "fun": lambda w: domain.radius**domain.p - np.sum(np.abs(w) ** domain.p)}]
        elif isinstance(domain, Box):
            bounds = [(-domain.radius, domain.radius)] * d
        else:
            cons, bounds = [{"type": "eq", "fun": lambda w: w.sum() - 1.0}], [(0, 1)] * d
        starts = (domain.center(d), np.linspace(0.05, 0.2, d) / np.linspace(0.05, 0.2, d).sum())
    runs = [minimize(g, w0, method="SLSQP", bounds=bounds, constraints=cons, options={"ftol": 1e-15,
                                                                                       "maxiter": 2000})
            for w0 in starts]
    return min(r.fun for r in runs)


DOMAINS = [L2Ball(10.0), L2Ball(0.5), L1Ball(0.7), L1Ball(5.0), Simplex(), Box(0.3), LpBall(1.5, 0.8),
           LpBall(3.0, 0.4)]


@pytest.mark.parametrize("loss, logistic", [(SquaredLoss(0.5), False), (SquaredLoss(1.0), False),
                                            (LogisticLoss(), True)])
@pytest.mark.parametrize("mu", [0.0, 0.2])
@pytest.mark.parametrize("domain", DOMAINS, ids=lambda dom: dom.describe())
def test_matches_a_generic_constrained_solver(loss, logistic, mu, domain):
    x, y = data(logistic=logistic)
    rounds = np.array([2, 10, 40])  # t = 2 < d: singular Gram matrix
    values, points = best_in_hindsight(x, y, loss, mu, domain, rounds)
    for t, v, u in zip(rounds, values, points):
        assert domain.contains(u, atol=1e-12)
        assert v == pytest.approx(objective(x, y, loss, mu, t)(u), rel=1e-12, abs=1e-12)  # F_t at a feasible point
        brute = brute_force(x, y, loss, mu, domain, t)
        assert v == pytest.approx(brute, rel=1e-6, abs=1e-8)
        assert v <= brute + 1e-7  # never worse than the generic solver
        assert hindsight_gap(x[:t], y[:t], loss, mu, domain, u) <= 1e-10 * max(1.0, abs(v)) + 1e-12


def test_the_gap_certifies_suboptimality_and_vanishes_at_the_minimum():
    x, y = data(T=60, d=4, seed=5)
    loss, t = SquaredLoss(0.5), 60
    f = objective(x, y, loss, 0.0, t)
    rng = np.random.default_rng(1)
    for domain in (Simplex(), L1Ball(1.0), Box(0.5), L2Ball(1.0), LpBall(1.5, 1.0)):
        (best,), (u_star,) = best_in_hindsight(x, y, loss, 0.0, domain, np.array([t]))
        for _ in range(50):
            u = domain.project(rng.normal(size=4))
            gap = hindsight_gap(x, y, loss, 0.0, domain, u)
            assert f(u) - best <= gap + 1e-9  # F(u) - min F <= gap(u) (convexity)
        assert hindsight_gap(x, y, loss, 0.0, domain, u_star) < 1e-8


def test_linear_oracle_minimises_over_the_domain():
    rng = np.random.default_rng(2)
    for domain in (Simplex(), L1Ball(1.5), Box(0.5), L2Ball(2.0), LpBall(1.5, 1.0), LpBall(4.0, 1.0)):
        feasible = domain.project(3.0 * rng.normal(size=(5000, 6)))
        for _ in range(5):
            g = rng.normal(size=6)
            v = linear_oracle(domain, g)
            assert domain.contains(v, atol=1e-12)
            assert g @ v <= (feasible @ g).min() + 1e-12
        assert frank_wolfe_gap(domain, g, v) == pytest.approx(g @ v - g @ linear_oracle(domain, g), abs=1e-12)


def test_the_warm_start_does_not_change_the_answer():
    x, y = data(T=200, d=4, seed=3)
    rounds = np.array([5, 50, 120, 200])
    values, _ = best_in_hindsight(x, y, SquaredLoss(0.5), 0.1, Simplex(), rounds)
    for t, v in zip(rounds, values):
        (alone,), _ = best_in_hindsight(x, y, SquaredLoss(0.5), 0.1, Simplex(), np.array([t]))
        assert v == pytest.approx(alone, rel=1e-9)


def test_iteration_budget_exhausted_warns_with_the_gap():
    x, y = data(T=40, d=4, seed=4)
    with pytest.warns(RuntimeWarning, match=r"simplex at t=40: duality gap [0-9.e+-]+ after 3 iterations"):
        values, points = best_in_hindsight(x, y, SquaredLoss(1.0), 0.0, Simplex(), np.array([40]), max_iter=3)
    assert Simplex().contains(points[0]) and math.isfinite(values[0])


def test_a_radius_means_the_l2_ball_and_bad_input_is_refused():
    assert comparator_domain(2.5) == L2Ball(2.5)
    assert comparator_domain(LpBall(2.0, 1.5)) == L2Ball(1.5) and comparator_domain(LpBall(1.0, 2)) == L1Ball(2.0)
    assert comparator_domain(LpBall(math.inf, 1.0)) == Box(1.0) and comparator_domain(LpBall(3, 1)) == LpBall(3, 1)
    x, y = data()
    a = best_in_hindsight(x, y, SquaredLoss(0.5), 0.0, 0.5, np.array([10, 40]))
    b = best_in_hindsight(x, y, SquaredLoss(0.5), 0.0, L2Ball(0.5), np.array([10, 40]))
    np.testing.assert_array_equal(a[0], b[0])
    rounds = np.array([10, 40])
    with pytest.raises(ValueError, match="domain radius must be a finite number > 0"):
        best_in_hindsight(x, y, SquaredLoss(), 0.0, -1.0, rounds)
    with pytest.raises(ValueError, match="rounds must be increasing integers in \\[1, 40\\]"):
        best_in_hindsight(x, y, SquaredLoss(), 0.0, Simplex(), np.array([10, 5]))
    with pytest.raises(ValueError, match="rounds must be"):
        best_in_hindsight(x, y, SquaredLoss(), 0.0, Simplex(), np.array([0, 5]))
    with pytest.raises(ValueError, match="x must have shape"):
        best_in_hindsight(x, y[:-1], SquaredLoss(), 0.0, Simplex(), rounds)
    with pytest.raises(ValueError, match="mu must be"):
        best_in_hindsight(x, y, SquaredLoss(), -0.1, Simplex(), rounds)
    with pytest.raises(TypeError, match="loss must be"):
        best_in_hindsight(x, y, "squared", 0.0, Simplex(), rounds)

    class Ellipse(L2Ball):
        pass

    with pytest.raises(TypeError, match="no linear oracle"):
        best_in_hindsight(x, y, SquaredLoss(), 0.0, Ellipse(1.0), rounds)
