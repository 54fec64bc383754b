"""WDP-COCOL and its local linear optimisation oracles (dpbandit/optim/cocol.py; spec/private-oco-learners.md §3.5).

* the simplex LLOO is the exact LP optimum (scipy linprog); both oracles satisfy the LLOO contract (Assumption 1:
  at least as good as every point of B(x, r) ∩ P, within rho r of x) against a generic constrained solver;
* the constants of §3.5 (d = 10 on the simplex: C_0 = 62,500, alpha = 1/50);
* noise off: the iterates of a reference implementation written here from the spec's pseudo-code with an LP
  oracle; iterates always stay in the polytope;
* privacy: window-DP with the warning, the practical constants labelled non-theoretical;
* regret: near-logarithmic with noise off (theory constants, d = 2) and with noise (practical constants) (slow);
* validation.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import optimize

from dpbandit.optim.cocol import WDPCOCOL, l1_ball_lloo, simplex_lloo
from dpbandit.optim.losses import SquaredLoss
from dpbandit.seeding import stream

HALF_SQUARED = SquaredLoss(0.5)


def simplex_stream(seed: int, T: int, d: int = 5):
    """x_t uniform on the unit sphere, y_t = x_t^T theta* with theta* ~ Dirichlet(1) in the simplex."""
    g = np.random.default_rng(seed)
    theta = g.dirichlet(np.ones(d))
    x = g.standard_normal((T, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x, x @ theta


def simplex_minimiser(A, b):
    """argmin over the simplex of 1/2 w^T A w - b^T w (A positive definite), exactly: KKT on every support."""
    d, best = len(b), None
    for k in range(1, d + 1):
        for S in map(list, itertools.combinations(range(d), k)):
            K = np.zeros((k + 1, k + 1))
            K[:k, :k], K[:k, k], K[k, :k] = A[np.ix_(S, S)], 1.0, 1.0
            sol = np.linalg.solve(K, np.concatenate([b[S], [1.0]]))
            if np.all(sol[:k] >= -1e-12):
                w = np.zeros(d)
                w[S] = np.maximum(sol[:k], 0.0)
                w /= w.sum()
                value = 0.5 * w @ A @ w - b @ w
                if best is None or value < best[0]:
                    best = (value, w)
    return best[1]


def regret(learner, x, y, mu) -> float:
    total = 0.0
    for xt, yt in zip(x, y):
        w = learner.predict()
        total += 0.5 * (xt @ w - yt) ** 2 + 0.5 * mu * w @ w
        learner.update(xt, yt)
    T = len(y)
    best = simplex_minimiser(x.T @ x + mu * T * np.eye(x.shape[1]), x.T @ y)
    return total - (0.5 * np.sum((x @ best - y) ** 2) + 0.5 * mu * T * best @ best)


def lp_simplex_lloo(x, c, l1_radius):
    """min c^T p over {p in simplex, ||p - x||_1 <= l1_radius} as an LP in (p, u), |p - x| <= u."""
    d = x.size
    eye, zero = np.eye(d), np.zeros((1, d))
    res = optimize.linprog(
        np.concatenate([c, np.zeros(d)]),
        A_ub=np.block([[eye, -eye], [-eye, -eye], [zero, np.ones((1, d))]]),
        b_ub=np.concatenate([x, -x, [l1_radius]]),
        A_eq=np.concatenate([np.ones(d), np.zeros(d)])[None], b_eq=[1.0], bounds=[(0, None)] * (2 * d),
        method="highs")
    return res.x[:d]


# --------------------------------------------------------------------------------------------------------------
# Oracles
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("d", [2, 3, 8])
def test_simplex_lloo_is_the_exact_lp_optimum(d):
    rng = np.random.default_rng(d)
    for _ in range(100):
        x = rng.dirichlet(np.full(d, 0.5))
        c = rng.standard_normal(d)
        budget = rng.uniform(0.0, 2.5)
        p = simplex_lloo(x, c, budget)
        assert np.all(p >= -1e-15) and abs(p.sum() - 1.0) < 1e-12 and np.abs(p - x).sum() <= budget + 1e-12
        assert c @ p == pytest.approx(c @ lp_simplex_lloo(x, c, budget), abs=1e-9)


def min_over_small_ball(x, c, r, domain, radius=1.0):
    """min <c, y> over B(x, r) ∩ P by SLSQP (P = simplex or l1 ball via y = a - b, a, b >= 0)."""
    d = x.size
    if domain == "simplex":
        cons = [{"type": "eq", "fun": lambda y: y.sum() - 1.0},
                {"type": "ineq", "fun": lambda y: r**2 - np.sum((y - x) ** 2)}]
        res = optimize.minimize(lambda y: c @ y, x, jac=lambda y: c, method="SLSQP", bounds=[(0, None)] * d,
                                constraints=cons, options={"ftol": 1e-14, "maxiter": 500})
        return res.fun
    split = np.concatenate([np.maximum(x, 0), np.maximum(-x, 0)])
    cons = [{"type": "ineq", "fun": lambda ab: radius - ab.sum()},
            {"type": "ineq", "fun": lambda ab: r**2 - np.sum((ab[:d] - ab[d:] - x) ** 2)}]
    res = optimize.minimize(lambda ab: c @ (ab[:d] - ab[d:]), split, jac=lambda ab: np.concatenate([c, -c]),
                            method="SLSQP", bounds=[(0, None)] * (2 * d), constraints=cons,
                            options={"ftol": 1e-14, "maxiter": 500})
    return res.fun


@pytest.mark.parametrize("domain", ["simplex", "l1-ball"])
def test_lloo_contract(domain):
    """Assumption 1: <p, c> <= <y, c> for every y in B(x, r) ∩ P, ||x - p|| <= rho r, p in P."""
    d, radius = 4, 1.5
    rng = np.random.default_rng(11)
    rho = math.sqrt(d) * (1.0 if domain == "simplex" else 2.0)
    for _ in range(25):
        c = rng.standard_normal(d)
        r = rng.uniform(0.01, 1.0)
        if domain == "simplex":
            x = rng.dirichlet(np.ones(d))
            p = simplex_lloo(x, c, math.sqrt(d) * r)
            assert np.all(p >= -1e-15) and abs(p.sum() - 1) < 1e-12
        else:
            x = rng.standard_normal(d)
            x *= rng.uniform(0, radius) / np.abs(x).sum()
            p = l1_ball_lloo(x, c, r, radius)
            assert np.abs(p).sum() <= radius * (1 + 1e-12)
        assert np.linalg.norm(p - x) <= rho * r * (1 + 1e-12)
        assert c @ p <= min_over_small_ball(x, c, r, domain, radius) + 1e-7
    # a large radius makes the LLOO a plain linear oracle: the best vertex
    np.testing.assert_allclose(l1_ball_lloo(np.zeros(3), np.array([0.2, -0.9, 0.5]), 10.0, 2.0), [0, 2.0, 0],
                               atol=1e-12)
    np.testing.assert_allclose(simplex_lloo(np.full(3, 1 / 3), np.array([0.2, -0.9, 0.5]), 10.0), [0, 1, 0],
                               atol=1e-12)


# --------------------------------------------------------------------------------------------------------------
# Constants and the non-private reference
# --------------------------------------------------------------------------------------------------------------


def test_theory_constants():
    cocol = WDPCOCOL(10, 100, window=8, mu=1.0, epsilon=math.inf)
    assert cocol.rho == pytest.approx(math.sqrt(10)) and cocol.alpha == pytest.approx(1 / 50)
    assert cocol.c_0 == pytest.approx(62_500.0) and cocol.c_w == 0.0  # spec §3.5 practical warning: 625 d^2
    assert cocol.c_1 == pytest.approx(26 * 10 * (cocol.lipschitz + math.sqrt(2.0)))
    l1 = WDPCOCOL(4, 100, window=8, mu=1.0, domain="l1-ball", radius=2.0, epsilon=2.0, rng=stream(0, "privacy"))
    assert l1.rho == pytest.approx(4.0) and l1.diameter == 4.0
    # C_W (gamma): 2 alpha d log2^1.5(W) ln(d/beta)/((1 - alpha) epsilon)
    assert l1.c_w == pytest.approx(2 * l1.alpha * 4 * 3**1.5 * math.log(4 / 0.05) / ((1 - l1.alpha) * 2.0))
    gauss = WDPCOCOL(4, 100, window=8, mu=1.0, epsilon=2.0, delta=1e-5, noise="gaussian", rng=stream(0, "privacy"))
    assert gauss.c_w == pytest.approx(2 * gauss.alpha * 2 * 3**1.5 * math.log(1e5) * math.log(4 / 0.05)
                                      / ((1 - gauss.alpha) * 2.0))


@pytest.mark.parametrize("constants", ["theory", "practical"])
def test_noise_off_matches_the_spec_pseudocode(constants):
    d, T, mu = 4, 60, 0.5
    x, y = simplex_stream(1, T, d)
    cocol = WDPCOCOL(d, T, window=8, mu=mu, loss=HALF_SQUARED, epsilon=math.inf, constants=constants)
    rho, D = math.sqrt(d), math.sqrt(2.0)
    L = (1.0 + 1.0) * 1.0 + mu * 1.0  # G = 2 * 0.5 * (z_max + y_bound), x_bound = 1; plus mu max ||theta||
    alpha = 1 / (5 * rho**2)
    c0, c1 = ((25 * rho**2) ** 2, 26 * rho**2 * (L + mu * D)) if constants == "theory" else (rho**2, L + mu * D)
    x1 = np.full(d, 1 / d)
    xhat, played, grads = x1.copy(), np.zeros(d), np.zeros(d)
    for t in range(1, T + 1):
        np.testing.assert_allclose(cocol.predict(), xhat, atol=1e-10)
        grads += (x[t - 1] @ xhat - y[t - 1]) * x[t - 1] + mu * xhat
        played += xhat
        xstar = (played + c0 * x1 - grads / mu) / (t + c0)
        eta = c1**2 / (mu * (t + c0))
        r = min(math.sqrt(4 * eta / (mu * (t + c0))) + 2 * (L + mu * D) / (mu * (t + c0)), D)
        xhat = (1 - alpha) * xhat + alpha * lp_simplex_lloo(xhat, xhat - xstar, math.sqrt(d) * r)
        cocol.update(x[t - 1], y[t - 1])
    np.testing.assert_allclose(cocol.predict(), xhat, atol=1e-10)


@pytest.mark.parametrize("domain", ["simplex", "l1-ball"])
def test_private_iterates_stay_in_the_polytope_and_are_reproducible(domain):
    d, T = 6, 400
    x, y = simplex_stream(2, T, d)
    runs = []
    for _ in range(2):
        cocol = WDPCOCOL(d, T, window=16, mu=1.0, domain=domain, radius=0.7, epsilon=0.5, constants="practical",
                         rng=stream(5, "privacy"))
        out = []
        for t in range(T):
            cocol.update(x[t], y[t])
            assert cocol.domain.contains(cocol.predict(), atol=1e-9)
            out.append(np.array(cocol.predict()))
        runs.append(np.array(out))
    np.testing.assert_array_equal(runs[0], runs[1])


def test_privacy_report_is_window_dp_and_practical_is_labelled():
    theory = WDPCOCOL(3, 50, window=10, mu=1.0, epsilon=1.0, rng=stream(0, "privacy"))
    report = theory.privacy_report()
    assert report.guarantee == "window-DP" and report.window == 16 and report.epsilon == pytest.approx(1.0)
    assert "NO guarantee" in report.note and "non-theoretical" not in report.note
    practical = WDPCOCOL(3, 50, window=10, mu=1.0, epsilon=1.0, constants="practical", rng=stream(0, "privacy"))
    report = practical.privacy_report()
    assert "NO guarantee" in report.note and "non-theoretical" in report.note
    assert report.epsilon == pytest.approx(1.0) and report.guarantee == "window-DP"
    off = WDPCOCOL(3, 50, window=10, mu=1.0, epsilon=math.inf, constants="practical").privacy_report()
    assert off.guarantee == "none" and "non-theoretical" in off.note


# --------------------------------------------------------------------------------------------------------------
# Regret
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_noise_off_regret_with_theory_constants_is_near_logarithmic():
    """d = 2 (C_0 = 2,500 anchor rounds): from T = 2^11 to 2^15 regret grows at most like ln T (slack 1.25)."""
    Ts = [2**k for k in range(11, 16)]
    r = np.array([regret(WDPCOCOL(2, T, window=64, mu=1.0, loss=HALF_SQUARED, epsilon=math.inf),
                         *simplex_stream(100, T, 2), 1.0) for T in Ts])
    assert np.all(r > 0) and r[-1] / r[0] <= 1.25 * math.log(Ts[-1]) / math.log(Ts[0]), r


@pytest.mark.slow
def test_private_regret_with_practical_constants_is_near_logarithmic():
    """Standard simplex stream (d = 5), mu = 1, epsilon = 4, W = 64 (window-DP)."""
    Ts = [2**k for k in range(9, 15)]
    mean = np.array([np.mean([regret(WDPCOCOL(5, T, window=64, mu=1.0, loss=HALF_SQUARED, epsilon=4.0,
                                              constants="practical", rng=stream(s, "privacy")),
                                     *simplex_stream(100 + s, T), 1.0) for s in range(2)]) for T in Ts])
    slope = np.polyfit(np.log(Ts), np.log(mean), 1)[0]
    assert slope < 0.35, (slope, mean)
    assert mean[-1] / mean[0] <= 1.25 * math.log(Ts[-1]) / math.log(Ts[0]), mean


# --------------------------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(mu=0.0), ValueError, "mu"),
    (dict(window=0), ValueError, "window"),
    (dict(window=None), TypeError, "window"),
    (dict(domain="l2-ball"), ValueError, "domain"),
    (dict(domain="box"), ValueError, "domain"),
    (dict(domain="l1-ball", radius=0.0), ValueError, "radius"),
    (dict(beta=0.0), ValueError, "beta"),
    (dict(beta=1.0), ValueError, "beta"),
    (dict(constants="tuned"), ValueError, "constants"),
    (dict(epsilon=-1.0), ValueError, "epsilon"),
    (dict(noise="gaussian"), ValueError, "delta"),
    (dict(initial=[0.5, 0.5, 0.5]), ValueError, "initial"),
])
def test_bad_hyperparameters_raise(kwargs, error, match):
    params = dict(dim=3, horizon=10, window=4, mu=1.0, epsilon=1.0, rng=stream(0, "privacy"))
    params.update(kwargs)
    with pytest.raises(error, match=match):
        WDPCOCOL(**params)
