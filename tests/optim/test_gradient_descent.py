"""Jain–Kothari–Thakurta POCP, PIGD, PGIGA and their non-private originals IGD, GIGA
(dpbandit/optim/gradient_descent.py; spec/private-oco-learners.md §4, §5.1–§5.3).

* IGD's exact prox against a general-purpose constrained solver (SLSQP) on four domains and two losses;
* the sensitivity recursions: known closed forms and an empirical check on neighbouring streams;
* POCP: noise off = the original (same iterates), the secret trajectory never sees the noise, the released noise
  has exactly the calibrated scale Delta_{t+1} sigma_0 (KS at p = 1e-6), sigma_0 known answer, ledger = configured
  privacy, determinism;
* regret: noise off within the O(L^2 ln T / mu) bound; private: log-log slope of regret vs T below 0.75 (slow);
* the auditor on PIGD's release stream: the learner passes, a deliberately mis-calibrated copy (the replace-one
  factor 2 forgotten, built here) is caught (slow);
* validation of every hyperparameter and sample.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from dpbandit.optim.gradient_descent import GIGA, IGD, RidgeLoss, derivative_bound
from dpbandit.optim.pocp import PGIGA, PIGD, POCP
from dpbandit.optim.losses import Loss, LogisticLoss, SquaredLoss
from dpbandit.optim.projections import make_domain
from dpbandit.privacy.audit import audit
from dpbandit.privacy.calibrate import gaussian_sigma_analytic
from dpbandit.seeding import stream
from tests.optim.ridge_streams import HALF_SQUARED, regret, sphere_stream

# --------------------------------------------------------------------------------------------------------------
# IGD and GIGA (non-private originals)
# --------------------------------------------------------------------------------------------------------------


def slsqp_prox(domain, radius, x_prev, eta, mu, loss, v, y, d):
    """argmin_{w in C} 1/2 ||w - x_prev||^2 + eta (phi(v^T w, y) + mu/2 ||w||^2) by SLSQP (a generic reference)."""

    def objective(w):
        return 0.5 * np.sum((w - x_prev) ** 2) + eta * (float(loss.phi(v @ w, y)) + 0.5 * mu * w @ w)

    def gradient(w):
        return (w - x_prev) + eta * (float(loss.dphi(v @ w, y)) * v + mu * w)

    start = make_domain(domain, radius).project(x_prev)
    if domain == "l1-ball":  # w = a - b with a, b >= 0 and sum(a + b) <= radius
        res = optimize.minimize(
            lambda ab: objective(ab[:d] - ab[d:]), np.concatenate([np.maximum(start, 0), np.maximum(-start, 0)]),
            jac=lambda ab: np.concatenate([gradient(ab[:d] - ab[d:]), -gradient(ab[:d] - ab[d:])]),
            method="SLSQP", bounds=[(0, None)] * (2 * d),
            constraints=[{"type": "ineq", "fun": lambda ab: radius - ab.sum(), "jac": lambda ab: -np.ones(2 * d)}],
            options={"ftol": 1e-15, "maxiter": 1000})
        return res.x[:d] - res.x[d:]
    kwargs = {
        "l2-ball": dict(constraints=[{"type": "ineq", "fun": lambda w: radius**2 - w @ w, "jac": lambda w: -2 * w}]),
        "simplex": dict(bounds=[(0, None)] * d,
                        constraints=[{"type": "eq", "fun": lambda w: w.sum() - 1.0, "jac": lambda w: np.ones(d)}]),
        "box": dict(bounds=[(-radius, radius)] * d),
    }[domain]
    return optimize.minimize(objective, start, jac=gradient, method="SLSQP", options={"ftol": 1e-15,
                                                                                       "maxiter": 1000}, **kwargs).x


@pytest.mark.parametrize("domain, radius", [("l2-ball", 0.3), ("simplex", 1.0), ("l1-ball", 0.4), ("box", 0.1)])
@pytest.mark.parametrize("loss", [HALF_SQUARED, LogisticLoss()])
def test_igd_step_is_the_exact_constrained_prox(domain, radius, loss):
    d, T, mu = 4, 25, 0.3
    x, y = sphere_stream(1, T, d, norm=2.0)
    if isinstance(loss, LogisticLoss):
        y = (y > 0).astype(float)
    igd = IGD(d, T, mu=mu, loss=loss, domain=domain, radius=radius, y_bound=2.0)
    for t in range(T):
        prev = np.array(igd.predict())
        igd.update(x[t], y[t])
        reference = slsqp_prox(domain, radius, prev, 1.0 / (mu * (t + 1)), mu, loss, x[t], y[t], d)
        np.testing.assert_allclose(igd.predict(), reference, atol=2e-6)
        assert igd.domain.contains(igd.predict())


def test_giga_is_projected_gradient_descent():
    d, T, mu, radius = 3, 60, 0.5, 0.4
    x, y = sphere_stream(2, T, d, norm=2.0)
    giga = GIGA(d, T, mu=mu, loss="squared", radius=radius, y_bound=2.0)
    w = np.zeros(d)
    for t in range(T):
        w = w - (2.0 * (x[t] @ w - y[t]) * x[t] + mu * w) / (mu * (t + 1))
        w *= min(1.0, radius / np.linalg.norm(w))
        giga.update(x[t], y[t])
        np.testing.assert_allclose(giga.predict(), w, atol=1e-12)


def test_sensitivity_known_answers():
    d, T, mu = 3, 50, 2.0
    x, y = sphere_stream(3, T, d)
    igd = IGD(d, T, mu=mu)  # squared loss scale 1, ||x|| <= 1, |y| <= 1, R = 1: G = 4, L_loss = 4
    giga = GIGA(d, T, mu=mu)
    assert igd.loss_lipschitz == 4.0 and igd.lipschitz == 6.0 and igd.smoothness == 4.0 and igd.diameter == 2.0
    s = 0.0
    for t in range(T):
        igd.update(x[t], y[t])
        giga.update(x[t], y[t])
        assert igd.sensitivity() == pytest.approx(min(2.0, 2 * 4.0 / (mu * (t + 2))), rel=1e-12)  # 2L/(mu(t+1))
        eta = 1.0 / (mu * (t + 1))
        s = min(2.0, max(2 * 4.0 * eta, max(abs(1 - eta * mu), abs(1 - eta * 4.0)) * s))
        assert giga.sensitivity() == pytest.approx(s, rel=1e-12)
    assert giga.sensitivity() < 2 * 4.0 / (mu * T) * 1.5  # asymptotically about 2L/(mu t)


@pytest.mark.parametrize("cls", [IGD, GIGA])
def test_sensitivity_bounds_hold_on_neighbouring_streams(cls):
    d, T, mu = 3, 40, 0.7
    rng = np.random.default_rng(4)
    worst = 0.0
    for trial in range(40):
        x, y = sphere_stream(100 + trial, T, d)
        tau = int(rng.integers(T))
        x2, y2 = x.copy(), y.copy()
        x2[tau] = -x[tau] if trial % 2 else rng.standard_normal(d) / math.sqrt(d)
        y2[tau] = rng.choice([-1.0, 1.0])
        a, b = cls(d, T, mu=mu, loss="logistic" if trial % 3 == 0 else "squared"), None
        b = cls(d, T, mu=mu, loss=a.loss)
        for t in range(T):
            a.update(x[t], (y[t] > 0) * 1.0 if trial % 3 == 0 else y[t])
            b.update(x2[t], (y2[t] > 0) * 1.0 if trial % 3 == 0 else y2[t])
            gap = np.linalg.norm(np.asarray(a.predict()) - b.predict())
            assert gap <= a.sensitivity() * (1 + 1e-9) + 1e-12
            worst = max(worst, gap / max(a.sensitivity(), 1e-300))
    assert worst > 0.1  # the bound is not vacuous on these streams


# --------------------------------------------------------------------------------------------------------------
# POCP / PIGD / PGIGA
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("private_cls, original_cls", [(PIGD, IGD), (PGIGA, GIGA)])
def test_noise_off_reduces_to_the_original(private_cls, original_cls):
    d, T = 5, 300
    x, y = sphere_stream(5, T, d)
    private = private_cls(d, T, mu=0.2, epsilon=math.inf, radius=0.8)
    original = original_cls(d, T, mu=0.2, radius=0.8)
    for t in range(T):
        np.testing.assert_allclose(private.predict(), original.predict(), rtol=0, atol=1e-15)
        private.update(x[t], y[t])
        original.update(x[t], y[t])
    report = private.privacy_report()
    assert report.guarantee == "none" and report.epsilon == math.inf and private.guarantee == "none"


@pytest.mark.parametrize("private_cls, original_cls", [(PIGD, IGD), (PGIGA, GIGA)])
def test_updates_use_the_uncorrupted_iterate(private_cls, original_cls):
    d, T = 4, 200
    x, y = sphere_stream(6, T, d)
    private = private_cls(d, T, mu=1.0, epsilon=0.5, rng=stream(0, "privacy"))
    original = original_cls(d, T, mu=1.0)
    moved = 0.0
    for t in range(T):
        private.update(x[t], y[t])
        original.update(x[t], y[t])
        np.testing.assert_array_equal(private.algorithm.predict(), original.predict())
        moved = max(moved, float(np.linalg.norm(private.predict() - original.predict())))
    assert moved > 0.1  # the release is noisy, the secret trajectory is not


def test_released_noise_has_the_calibrated_scale():
    """With mu large no projection happens: (xhat - x)/(Delta sigma_0) must be standard normal."""
    d, T, eps, delta = 3, 2000, 1.0, 1e-5
    x, y = sphere_stream(7, T, d)
    pigd = PIGD(d, T, mu=400.0, epsilon=eps, delta=delta, rng=stream(1, "privacy"))
    assert pigd.sigma0 == pytest.approx(math.sqrt(T) * gaussian_sigma_analytic(eps, delta, 1.0), rel=1e-12)
    z = []
    for t in range(T):
        pigd.update(x[t], y[t])
        scale = pigd.algorithm.sensitivity() * pigd.sigma0
        z.append((np.asarray(pigd.predict()) - pigd.algorithm.predict()) / scale)
    z = np.concatenate(z)

    def variance_p(v):  # two-sided chi-square test of unit variance
        cdf = stats.chi2.cdf(np.sum(v**2), v.size)
        return 2 * min(cdf, 1 - cdf)

    assert stats.kstest(z, "norm").pvalue > 1e-6 and variance_p(z) > 1e-6
    assert variance_p(z / 1.1) < 1e-6  # the test would see a 10% scale error


def test_sigma0_known_answer_and_ledger():
    pigd = PIGD(3, 100, mu=1.0, epsilon=1.0, delta=1e-5, rng=stream(0, "privacy"))
    assert pigd.sigma0 == pytest.approx(37.31, abs=0.01)  # sqrt(100) * 3.731 (spec/dp-testing-and-accounting.md §3)
    report = pigd.privacy_report()
    assert report.guarantee == "DP" and report.delta == 1e-5
    assert report.epsilon == pytest.approx(1.0, rel=1e-6) and report.epsilon <= 1.0 + 1e-9
    (event,) = report.events
    assert event["kind"] == "gaussian" and event["count"] == 100 and event["value"] == pytest.approx(pigd.sigma0)
    assert "2 L_loss = 8" in report.sensitivity_assumption


def test_same_seed_same_releases_and_clipping():
    d, T = 4, 50
    x, y = sphere_stream(8, T, d)
    runs = []
    for _ in range(2):
        learner = PGIGA(d, T, mu=1.0, epsilon=2.0, rng=stream(3, "privacy"))
        out = []
        for t in range(T):
            learner.update(3.0 * x[t], 5.0 * y[t])  # outside the declared bounds: clipped
            out.append(np.array(learner.predict()))
        runs.append(np.array(out))
    np.testing.assert_array_equal(runs[0], runs[1])
    assert learner.n_clipped == T
    clipped = PGIGA(d, T, mu=1.0, epsilon=2.0, rng=stream(3, "privacy"))
    for t in range(T):
        clipped.update(x[t], float(np.clip(5.0 * y[t], -1, 1)))
    np.testing.assert_allclose(clipped.predict(), runs[0][-1], atol=1e-12)


def test_noise_off_regret_is_logarithmic():
    d, mu = 5, 1.0
    for T in (256, 4096):
        x, y = sphere_stream(9, T, d)
        for cls in (IGD, GIGA):
            learner = cls(d, T, mu=mu, loss=HALF_SQUARED)
            bound = learner.lipschitz**2 / (2 * mu) * (1 + math.log(T))  # Hazan-Agarwal-Kale 2007, Thm 1
            assert 0.0 <= regret(learner, x, y, mu) <= bound


@pytest.mark.slow
@pytest.mark.parametrize("cls", [PIGD, PGIGA])
def test_private_regret_is_sublinear(cls):
    """Standard stream (d = 5, ||theta*|| = 1/2, noiseless labels), mu = 1, epsilon = 4: slope < 0.75."""
    Ts = [2**k for k in range(9, 15)]
    mean = [np.mean([regret(cls(5, T, mu=1.0, loss=HALF_SQUARED, epsilon=4.0, rng=stream(s, "privacy")),
                            *sphere_stream(100 + s, T), 1.0) for s in range(2)]) for T in Ts]
    slope = np.polyfit(np.log(Ts), np.log(mean), 1)[0]
    assert 0.3 < slope < 0.75, (slope, mean)


# --------------------------------------------------------------------------------------------------------------
# Empirical audit of the release stream
# --------------------------------------------------------------------------------------------------------------


class HalvedIGD(IGD):
    """Deliberately mis-calibrated: forgets the replace-one factor 2 in the fresh sensitivity."""

    def _sensitivity_step(self, eta):
        fresh, contraction = super()._sensitivity_step(eta)
        return fresh / 2.0, contraction


@pytest.mark.slow
def test_auditor_passes_pigd_and_catches_a_miscalibrated_copy():
    """d = 1, T = 2, logistic loss on a small ball (the bound 2 sigmoid(0.1) on the leaf difference is almost
    attained: labels 1 vs 0). The white-box statistic is the Gaussian likelihood ratio of the two releases."""
    T, mu, radius, eps, delta = 2, 200.0, 0.1, 1.0, 0.05
    xs, ys_a, ys_b = np.ones((T, 1)), np.array([1.0, 0.0]), np.array([0.0, 0.0])
    common = dict(mu=mu, loss="logistic", radius=radius)

    def secret(ys):
        a = IGD(1, T, **common)
        out, sens = [], []
        for t in range(T):
            a.update(xs[t], ys[t])
            out.append(a.predict()[0])
            sens.append(a.sensitivity())
        return np.array(out), np.array(sens)

    (sa, sens), (sb, _) = secret(ys_a), secret(ys_b)
    correct = PIGD(1, T, epsilon=eps, delta=delta, rng=stream(0, "privacy"), **common)
    broken = POCP(HalvedIGD(1, T, **common), epsilon=eps, delta=delta, rng=stream(0, "privacy"))
    scale = sens * correct.sigma0

    def statistic(out):
        return ((out - 0.5 * (sa + sb)) * (sa - sb) / scale**2).sum(axis=1)

    bounds = []
    for learner in (correct, broken):
        def mechanism(ys, rng, n, learner=learner):
            out = np.empty((n, T))
            for i in range(n):
                learner.reset(rng)
                for t in range(T):
                    learner.update(xs[t], ys[t])
                    out[i, t] = learner.predict()[0]
            return out

        result = audit(mechanism, ys_a, ys_b, n_samples=10_000, delta=delta, rng=stream(1, "privacy"),
                       statistic=statistic, confidence=1 - 1e-6)
        bounds.append(result.epsilon_lower_bound)
    assert bounds[0] <= eps  # a pass is no proof
    assert bounds[1] > eps, bounds  # true epsilon about 2.9: caught


# --------------------------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------------------------


class CustomLoss(Loss):
    name = "custom"

    def phi(self, z, y):
        return np.abs(z - y)

    def dphi(self, z, y):
        return np.sign(z - y)

    def curvature_bound(self):
        return 0.0


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(mu=0.0), ValueError, "mu"),
    (dict(mu=-1.0), ValueError, "mu"),
    (dict(mu=float("nan")), ValueError, "mu"),
    (dict(radius=0.0), ValueError, "radius"),
    (dict(radius=-2.0), ValueError, "radius"),
    (dict(epsilon=0.0), ValueError, "epsilon"),
    (dict(epsilon=-1.0), ValueError, "epsilon"),
    (dict(epsilon=float("nan")), ValueError, "epsilon"),
    (dict(delta=0.0), ValueError, "delta"),
    (dict(delta=1.0), ValueError, "delta"),
    (dict(delta=None), ValueError, "delta"),
    (dict(x_bound=0.0), ValueError, "x_bound"),
    (dict(y_bound=-1.0), ValueError, "y_bound"),
    (dict(domain="sphere"), ValueError, "domain"),
    (dict(loss="hinge"), ValueError, "loss"),
    (dict(loss=CustomLoss()), TypeError, "derivative bound"),
    (dict(initial=[2.0, 0.0, 0.0]), ValueError, "initial"),
    (dict(initial=[0.0, 0.0]), ValueError, "initial"),
    (dict(horizon=0), ValueError, "horizon"),
    (dict(dim=0), ValueError, "dim"),
])
@pytest.mark.parametrize("cls", [PIGD, PGIGA])
def test_bad_hyperparameters_raise(cls, kwargs, error, match):
    params = dict(dim=3, horizon=10, mu=1.0, epsilon=1.0, rng=stream(0, "privacy"))
    params.update(kwargs)
    with pytest.raises(error, match=match):
        cls(**params)


def test_bad_samples_and_missing_rng_raise():
    with pytest.raises(ValueError, match="rng"):
        PIGD(3, 10, mu=1.0, epsilon=1.0)
    with pytest.raises(TypeError, match="OCPAlgorithm"):
        POCP("igd")
    learner = PIGD(3, 2, mu=1.0, epsilon=1.0, rng=stream(0, "privacy"))
    for x, y, match in [(np.ones(4), 0.0, "shape"), (np.array([np.nan, 0, 0]), 0.0, "finite"),
                        (np.ones(3), float("inf"), "y")]:
        with pytest.raises(ValueError, match=match):
            learner.update(x, y)
    assert learner.t == 0  # rejected samples are not counted
    learner.update(np.ones(3), 0.0)
    learner.update(np.ones(3), 0.0)
    with pytest.raises(ValueError, match="horizon"):
        learner.update(np.ones(3), 0.0)


def test_ridge_loss_and_derivative_bound():
    ridge = RidgeLoss("squared", 0.5)
    theta, x = np.array([0.3, -0.2]), np.array([1.0, 2.0])
    assert ridge.value(theta, x, 1.0) == pytest.approx((x @ theta - 1.0) ** 2 + 0.25 * theta @ theta)
    np.testing.assert_allclose(ridge.gradient(theta, x, 1.0), 2 * (x @ theta - 1.0) * x + 0.5 * theta)
    assert ridge.smoothness(2.0) == 8.5
    assert derivative_bound(SquaredLoss(0.5), 2.0, 1.0) == 3.0
    assert derivative_bound(LogisticLoss(), 0.0, 1.0) == 0.5
