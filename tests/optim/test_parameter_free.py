"""van der Hoeven's local-DP learners (spec/private-oco-learners.md §6, spec/errata.md E8)."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest
from scipy.integrate import quad

from dpbandit.envs.streams import RegressionStream
from dpbandit.experiment.oco import best_in_hindsight, play
from dpbandit.optim.losses import LogisticLoss, SquaredLoss
from dpbandit.optim.parameter_free import (
    MAX_LOG_WEALTH,
    ConjugatePriorPotential,
    LDPBlackBoxReduction,
    LDPCoordinateWise,
    conjugate_prior_prediction,
)
from dpbandit.privacy.audit import audit
from dpbandit.privacy.noise import local_laplace
from dpbandit.seeding import stream

LEARNERS = (LDPCoordinateWise, LDPBlackBoxReduction)


# -- Algorithm 1: the conjugate-prior closed form against quadrature ----------------------------------------------


def quadrature(L: float, B: float, b: float, C: float) -> tuple[float, float]:
    """(sign, log|w|) of w = int_{-C}^{C} v e^{Lv - Bv^2} dv / int_{-C}^{C} e^{-bv^2} dv by adaptive quadrature.

    Folded to [0, C] so nothing cancels: v e^{Lv - Bv^2} + (-v) e^{-Lv - Bv^2} = v e^{|L|v - Bv^2}(1 - e^{-2|L|v})
    (times sign L), scaled by the integrand's maximum exponent K so nothing overflows.
    """
    a = abs(L)
    peak = min(max(a / (2.0 * B), 0.0), C)
    K = a * peak - B * peak * peak
    integrand = lambda v: v * math.exp(a * v - B * v * v - K) * -math.expm1(-2.0 * a * v)  # noqa: E731
    value, _ = quad(integrand, 0.0, C, points=[peak] if 0.0 < peak < C else None, epsabs=0.0, epsrel=1e-13,
                    limit=500)
    z, _ = quad(lambda v: math.exp(-b * v * v), -C, C, epsabs=0.0, epsrel=1e-13)
    return math.copysign(1.0, L), math.log(value) + K - math.log(z)


GRID = [(L, B, b, C)
        for b, C in [(1.0, 0.2), (4.0, 0.1), (0.01, 2.0)]
        for B in (b, 3.0 * b, 30.0 * b, 1e3 * b, 1e6 * b)
        for L in (1e-12, 1e-9, 1e-6, 1e-3, 0.3, 2.0, 5.0, 40.0, 300.0, 3e3, 3e4)
        if L * L <= 1e6 * (B - b) + 1e-6 or L < 1e-3]  # |L| <= sqrt(t (B - b)) for t <= 1e6 rounds


def test_closed_form_matches_quadrature_over_a_wide_range_without_overflow():
    L, B, b, C = (np.array(v) for v in zip(*GRID))
    logs = []
    for sign in (1.0, -1.0):
        for bb, cc in {(x, y) for x, y in zip(b, C)}:
            sel = (b == bb) & (C == cc)
            w, log_wealth, mu = conjugate_prior_prediction(sign * L[sel], B[sel], bb, cc)
            assert np.all(np.isfinite(w)) and np.all(np.isfinite(log_wealth))
            assert np.all(np.abs(mu) <= cc)
            for i, (Li, Bi) in enumerate(zip(L[sel], B[sel])):
                s, log_abs = quadrature(sign * Li, Bi, bb, cc)
                assert np.sign(mu[i]) == s
                assert log_wealth[i] + math.log(abs(mu[i])) == pytest.approx(log_abs, abs=1e-9)  # relative 1e-9 in w
                if log_wealth[i] < MAX_LOG_WEALTH:
                    assert w[i] == pytest.approx(s * math.exp(log_abs), rel=1e-9)
                logs.append(log_abs / math.log(10))
    assert min(logs) < -20 and max(logs) > 250  # |w| from below 1e-20 to above 1e250


def test_known_answer_and_the_printed_eq_7_is_wrong():
    # spec/private-oco-learners.md §6.1: at L=5, B=31, b=1, C=0.2 the true value is 0.0369; printed (7) gives -0.0154
    w, _, _ = conjugate_prior_prediction(5.0, 31.0, 1.0, 0.2)
    assert w == pytest.approx(0.0369, abs=5e-5)
    sign, log_abs = quadrature(5.0, 31.0, 1.0, 0.2)
    assert w == pytest.approx(sign * math.exp(log_abs), rel=1e-12)


def test_errata_e8_small_L_is_accurate():
    # E8: at L = 1e-9 G the naive numerator phi(alpha) - phi(beta) loses ~5 digits; the expm1 form does not
    for L in (1e-9, -1e-9, 1e-15):
        w, _, _ = conjugate_prior_prediction(L, 2.0, 1.0, 0.2)
        sign, log_abs = quadrature(L, 2.0, 1.0, 0.2)
        assert w == pytest.approx(sign * math.exp(log_abs), rel=1e-9)
    assert conjugate_prior_prediction(0.0, 1.0, 1.0, 0.2)[0] == 0.0


def test_wealth_cap_keeps_predictions_finite_and_is_logged(caplog):
    potential = ConjugatePriorPotential(1, lipschitz=1.0)
    with caplog.at_level(logging.WARNING, logger="dpbandit.optim.parameter_free"):
        for _ in range(6000):  # one-signed gradients: log-wealth ~ 0.16 t exceeds 700
            potential.update(np.array([-1.0]))
    assert potential.capped_rounds > 0
    assert np.isfinite(potential.predict()).all() and potential.predict()[0] > 1e250
    assert sum("capped" in r.message for r in caplog.records) == 1
    assert conjugate_prior_prediction(-6000.0, 6001.0, 1.0, 0.2, max_log_wealth=math.inf)[0] == -math.inf


# -- noise off = the non-private originals --------------------------------------------------------------------------


def reference_prediction(L: float, B: float, b: float, C: float) -> float:
    """Eq. (5) by plain quadrature, no closed form."""
    num, _ = quad(lambda v: v * math.exp(L * v - B * v * v), -C, C, epsabs=1e-15, epsrel=1e-12)
    den, _ = quad(lambda v: math.exp(-b * v * v), -C, C, epsabs=0.0, epsrel=1e-13)
    return num / den


def reference_gradient(loss, w, x, y, norm):
    k = min(1.0, 1.0 / (np.abs(x).max() if norm == "linf" else np.linalg.norm(x)))
    return float(np.clip(loss.dphi(x @ w, y), -k, k)) * x


def small_stream(d=3, T=60):
    rng = np.random.default_rng(5)
    x = rng.normal(size=(T, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x, x @ np.array([0.8, -0.5, 0.3])[:d] + 0.05 * rng.normal(size=T)


@pytest.mark.parametrize("mu", [0.0, 0.2])
def test_coordinatewise_noise_off_is_algorithm_3_of_clean_gradients(mu):
    x, y = small_stream()
    loss = SquaredLoss(0.5)
    learner = LDPCoordinateWise(3, len(y), loss, tau=math.inf, mu=mu)
    G = 1.0 if mu == 0 else 2.0
    b, C = G * G, 1.0 / (5.0 * G)
    w, L, B = np.zeros(3), np.zeros(3), np.full(3, b)
    for t in range(len(y)):
        np.testing.assert_allclose(learner.predict(), w, rtol=1e-8, atol=1e-13)
        g = reference_gradient(loss, w, x[t], y[t], "linf") + mu * w
        learner.update(x[t], y[t])
        L, B = L - g, B + g * g
        w = np.array([reference_prediction(L[j], B[j], b, C) for j in range(3)])
    np.testing.assert_allclose(learner.predict(), w, rtol=1e-8)


def test_reduction_noise_off_is_algorithm_2_of_clean_gradients():
    x, y = small_stream()
    loss = SquaredLoss(0.5)
    learner = LDPBlackBoxReduction(3, len(y), loss, tau=math.inf)
    z, v, L, B, sum_sq = np.zeros(3), 0.0, 0.0, 1.0, 0.0
    for t in range(len(y)):
        np.testing.assert_allclose(learner.predict(), v * z, rtol=1e-8, atol=1e-13)
        g = reference_gradient(loss, v * z, x[t], y[t], "l2")
        learner.update(x[t], y[t])
        L, B = L - z @ g, B + (z @ g) ** 2
        sum_sq += g @ g
        z = z - g / math.sqrt(sum_sq)
        z /= max(1.0, np.linalg.norm(z))
        v = reference_prediction(L, B, 1.0, 0.2)
    np.testing.assert_allclose(learner.predict(), v * z, rtol=1e-8)


def test_coordinatewise_with_d_1_is_algorithm_1():
    rng = np.random.default_rng(3)
    learner = LDPCoordinateWise(1, 50, LogisticLoss(), tau=math.inf)
    potential = ConjugatePriorPotential(1)
    for _ in range(50):
        xt, yt = rng.uniform(-1, 1, size=1), float(rng.integers(2))
        g = learner.gradient(xt, yt)
        learner.update(xt, yt)
        potential.update(g)
        assert learner.predict()[0] == potential.predict()[0]


@pytest.mark.parametrize("cls", LEARNERS)
def test_noise_off_draws_nothing_and_reports_no_guarantee(cls):
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    learner = cls(4, 10, tau=math.inf, rng=rng)
    for _ in range(10):
        learner.update(np.full(4, 0.5), 1.0)
    assert rng.bit_generator.state == state
    report = learner.privacy_report()
    assert report.guarantee == "none" and report.epsilon == math.inf
    assert cls(4, 10, tau=math.inf).predict().shape == (4,)  # no rng needed


# -- regret --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", LEARNERS)
@pytest.mark.parametrize("model", ["linear", "logistic"])
def test_regret_is_sublinear_on_a_noiseless_stream(cls, model):
    data = RegressionStream(dim=5, horizon=3000, model=model, p=2.0).draw(0)
    loss = SquaredLoss(0.5) if model == "linear" else LogisticLoss()
    learner = cls(5, data.horizon, loss, tau=math.inf)
    losses, _ = play(learner, data.x, data.y, loss, 0.0)
    rounds = np.array([300, 600, 1200, 2000, 3000])
    best, _ = best_in_hindsight(data.x, data.y, loss, 0.0, data.radius, rounds)
    regret = np.cumsum(losses)[rounds - 1] - best
    assert np.all(regret > 0)
    slope = np.polyfit(np.log(rounds), np.log(regret), 1)[0]
    assert slope < 0.75, (cls.name, model, slope, regret)


# -- the local randomiser: unbiased, symmetric, audited -------------------------------------------------------------


@pytest.mark.parametrize("cls", LEARNERS)
def test_report_is_unbiased_with_the_stated_laplace_scale(cls):
    tau = np.array([0.5, 2.0, 1.0])
    learner = cls(3, 10, SquaredLoss(0.5), tau=tau, rng=stream(0, "privacy"))
    x, y = np.array([0.6, -0.3, 0.2]), 0.9
    g = learner.gradient(x, y)
    n = 400_000
    reports = learner.report(np.broadcast_to(x, (n, 3)), np.full(n, y))
    sd = np.sqrt(8.0) / tau  # Laplace(2/tau): variance 2 (2/tau)^2
    assert np.all(np.abs(reports.mean(axis=0) - g) < 5.0 * sd / np.sqrt(n))  # p ~ 1e-6 per coordinate
    np.testing.assert_allclose(reports.std(axis=0), sd, rtol=0.01)
    centred = reports - g
    assert np.all(np.abs((centred > 0).mean(axis=0) - 0.5) < 5.0 * 0.5 / np.sqrt(n))  # symmetric about the mean


class UnderNoised(LDPCoordinateWise):
    """A deliberately broken version (tests only): noise 5x smaller than the tau its report claims."""

    def report(self, x, y, rng=None):
        return local_laplace(self.rng if rng is None else rng, self.gradient(x, y), 5.0 * self.tau)


def audit_report(learner, x, n=400_000):
    """White-box audit of one report on neighbouring users (y = +-5: clipped gradients at the extremes)."""
    g_a, g_b = learner.gradient(x, 5.0), learner.gradient(x, -5.0)
    tau = learner.tau

    def mechanism(y, rng, n):
        return learner.report(np.broadcast_to(x, (n, x.size)), np.full(n, y), rng)

    def llr(out):
        # Log-likelihood ratio of the claimed laws (the Neyman-Pearson statistic), rounded to 1e-9: unrounded, its
        # atoms at +-sum(tau) are split by the last bits of g + xi, a floating-point leak of every float Laplace
        # sampler (spec/dp-testing-and-accounting.md §6; Mironov 2012) and not the calibration audited here.
        return np.round((0.5 * tau * (np.abs(out - g_b) - np.abs(out - g_a))).sum(axis=1), 9)

    return audit(mechanism, 5.0, -5.0, n_samples=n, delta=0.0, rng=stream(1, "privacy"), statistic=llr,
                 confidence=1 - 1e-6)


@pytest.mark.parametrize("cls, x", [(LDPCoordinateWise, np.array([1.0, 1.0])),
                                    (LDPBlackBoxReduction, np.array([1.0, 0.0]))])
def test_report_passes_the_auditor_at_its_tau(cls, x):
    learner = cls(2, 10, SquaredLoss(0.5), tau=[0.6, 0.4], rng=stream(0, "privacy"))
    claimed = learner.privacy_report().epsilon
    assert claimed == pytest.approx(1.0)
    result = audit_report(learner, x)
    assert not result.violates(claimed), result
    if cls is LDPCoordinateWise:  # both coordinates at their extremes: the bound is nearly tight
        assert result.epsilon_lower_bound > 0.8


def test_a_5x_under_noised_report_is_caught():
    broken = UnderNoised(2, 10, SquaredLoss(0.5), tau=[0.6, 0.4], rng=stream(0, "privacy"))
    claimed = broken.privacy_report().epsilon
    result = audit_report(broken, np.array([1.0, 1.0]), n=200_000)
    assert result.violates(claimed) and result.epsilon_lower_bound > 3.0, result


# -- ledger and report --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", LEARNERS)
def test_ledger_and_report_state_ldp_per_report(cls):
    learner = cls(4, 100, tau=[0.1, 0.2, 0.3, 0.4], rng=stream(0, "privacy"))
    report = learner.privacy_report()
    assert report.guarantee == "LDP" and report.delta == 0.0
    assert report.epsilon == pytest.approx(1.0)
    assert len(report.events) == 1 and report.events[0]["kind"] == "pure" and report.events[0]["count"] == 1
    assert "per-report" in report.note and "randomiser" in report.note
    assert "JDP" not in report.label
    partly_open = cls(3, 100, tau=[1.0, math.inf, 1.0], rng=stream(0, "privacy")).privacy_report()
    assert partly_open.guarantee == "none" and "[1]" in partly_open.note


@pytest.mark.parametrize("cls", LEARNERS)
def test_same_seed_same_iterates_other_seed_other_iterates(cls):
    x, y = small_stream(T=40)

    def run(seed):
        learner = cls(3, 40, tau=1.0, rng=stream(seed, "privacy"))
        for t in range(40):
            learner.update(x[t], y[t])
        return learner.predict().copy()

    np.testing.assert_array_equal(run(1), run(1))
    assert not np.array_equal(run(1), run(2))


# -- validation ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", LEARNERS)
@pytest.mark.parametrize("kwargs, exc, text", [
    (dict(tau=-1.0), ValueError, "tau"),
    (dict(tau=0.0), ValueError, "tau"),
    (dict(tau=float("nan")), ValueError, "tau"),
    (dict(tau=[1.0, 1.0]), ValueError, "tau"),
    (dict(tau="a"), TypeError, "tau"),
    (dict(mu=-0.1), ValueError, "mu"),
    (dict(lipschitz=0.0), ValueError, "lipschitz"),
    (dict(prior=-1.0), ValueError, "prior"),
    (dict(max_log_wealth=800.0), ValueError, "max_log_wealth"),
    (dict(loss="hinge"), ValueError, "loss"),
])
def test_bad_inputs_raise_naming_the_parameter(cls, kwargs, exc, text):
    with pytest.raises(exc, match=text):
        cls(3, 10, rng=stream(0, "privacy"), **kwargs)


@pytest.mark.parametrize("cls", LEARNERS)
def test_bad_shapes_and_counts(cls):
    with pytest.raises(ValueError, match="dim"):
        cls(0, 10, rng=stream(0, "privacy"))
    with pytest.raises(ValueError, match="horizon"):
        cls(3, 0, rng=stream(0, "privacy"))
    with pytest.raises(ValueError, match="rng"):
        cls(3, 10, tau=1.0)
    learner = cls(3, 1, rng=stream(0, "privacy"))
    with pytest.raises(ValueError, match="shape"):
        learner.update(np.zeros(4), 0.0)
    learner.update(np.zeros(3), 0.0)
    with pytest.raises(ValueError, match="horizon"):
        learner.update(np.zeros(3), 0.0)
    with pytest.raises(ValueError):
        learner.predict()[0] = 1.0  # read-only release
