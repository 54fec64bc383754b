"""The empirical auditor (spec/dp-testing-and-accounting.md §5) on correct and deliberately broken mechanisms.

Correct mechanisms: the lower bound never exceeds the claimed epsilon. Broken ones (built here, never in the
library): the lower bound exceeds the claim. Audits run at confidence 1 - 1e-6, so a correct mechanism fails with
probability below 1e-6; every broken one is caught with a wide margin.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbandit.privacy.audit import AuditResult, HistogramTestResult, audit, histogram_test, projection
from dpbandit.privacy.calibrate import (
    gamma_norm_scale,
    gaussian_epsilon,
    gaussian_sigma_analytic,
    gg_sigma_zcdp,
    kappa_regular_constants,
    laplace_scale,
)
from dpbandit.privacy.noise import GammaNormNoise, GaussianNoise, LaplaceNoise, Noise
from dpbandit.seeding import stream

CONFIDENCE = 1 - 1e-6
DELTA = 1e-5


def rng(seed: int = 0) -> np.random.Generator:
    return stream(seed, "privacy")


def additive(noise: Noise, event_shape: tuple[int, ...] = ()):
    """The mechanism x -> x + noise, vectorised: n outputs stacked on axis 0."""

    def mechanism(x, rng_, n):
        return np.asarray(x, dtype=float) + noise.sample(rng_, (n, *event_shape))

    return mechanism


def run(mechanism, a, b, n, *, delta, seed, statistic=None) -> AuditResult:
    return audit(mechanism, a, b, n_samples=n, delta=delta, rng=rng(seed), statistic=statistic, confidence=CONFIDENCE)


# --------------------------------------------------------------------------------------------------------------
# Laplace and Gaussian
# --------------------------------------------------------------------------------------------------------------


def test_laplace_correct_is_tight_but_never_above_claim():
    claimed = 1.0
    result = run(additive(LaplaceNoise(laplace_scale(claimed, 1.0))), 1.0, 0.0, 500_000, delta=0.0, seed=1)
    assert result.epsilon_lower_bound <= claimed
    assert result.epsilon_lower_bound > 0.95  # the auditor has power: Laplace is tight at the claim
    assert not result.violates(claimed)


def test_laplace_with_halved_scale_is_caught():
    claimed = 1.0
    result = run(additive(LaplaceNoise(laplace_scale(claimed, 1.0) / 2)), 1.0, 0.0, 500_000, delta=0.0, seed=2)
    assert result.epsilon_lower_bound > 1.8  # true epsilon is 2
    assert result.violates(claimed)


def test_gaussian_analytic_passes():
    claimed = 1.0
    sigma = gaussian_sigma_analytic(claimed, DELTA, 1.0)
    result = run(additive(GaussianNoise(sigma)), 1.0, 0.0, 1_000_000, delta=DELTA, seed=3)
    assert 0.3 < result.epsilon_lower_bound <= claimed


def test_gaussian_with_halved_sigma_is_caught():
    claimed = 1.0
    sigma = gaussian_sigma_analytic(claimed, DELTA, 1.0) / 2  # true epsilon 2.15
    result = run(additive(GaussianNoise(sigma)), 1.0, 0.0, 1_000_000, delta=DELTA, seed=4)
    assert result.epsilon_lower_bound > 1.25
    assert result.violates(claimed)


# --------------------------------------------------------------------------------------------------------------
# Vector noises: Gamma-norm (projection statistic) and generalized Gaussian (likelihood-ratio statistic)
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scale_factor, caught", [(1.0, False), (0.5, True)])
def test_gamma_norm_with_projection_statistic(scale_factor, caught):
    d, claimed = 4, 1.0
    a, b = np.full(d, 0.5), np.zeros(d)  # ||a - b||_2 = 1
    noise = GammaNormNoise(gamma_norm_scale(claimed, 1.0) * scale_factor)
    result = run(additive(noise, (d,)), a, b, 500_000, delta=0.0, seed=5, statistic=projection(a - b))
    assert result.violates(claimed) is caught
    if not caught:
        assert result.epsilon_lower_bound > 0.5


def gg_setup(d: int = 5, q: float = 3.0, s: float = 10.0):
    """Neighbouring GG releases at ||.||_q-distance s, calibrated for (1, 1e-5) via E1 Correction 2."""
    kr = kappa_regular_constants(q, d)
    sigma = gg_sigma_zcdp(1.0, DELTA, s, kr.kappa)
    a = np.zeros(d)
    a[0] = s
    b = np.zeros(d)

    def likelihood_ratio(y):  # ||y - b||_+^2 - ||y - a||_+^2, monotone in the likelihood ratio
        norm = lambda v: np.sum(np.abs(v) ** kr.r, axis=-1) ** (2.0 / kr.r)  # noqa: E731
        return norm(y - b) - norm(y - a)

    return kr, sigma, a, b, likelihood_ratio


def test_generalized_gaussian_passes():
    kr, sigma, a, b, statistic = gg_setup()
    result = run(additive(kr.noise(sigma), (a.size,)), a, b, 300_000, delta=DELTA, seed=6, statistic=statistic)
    assert result.epsilon_lower_bound <= 1.0


def test_generalized_gaussian_with_published_radius_defect_d1_is_caught():
    """spec/han-frank-wolfe.md §9 D1: radius^2 ~ Gamma(d/2, scale 2 sigma) instead of 2 sigma^2."""
    kr, sigma, a, b, statistic = gg_setup()
    r = kr.r

    def d1_mechanism(x, rng_, n):
        d = x.size
        radius = np.sqrt(rng_.gamma(d / 2.0, 2.0 * sigma, n))  # the defect
        g = rng_.gamma(1.0 / r, 1.0, (n, d))
        v = np.where(rng_.random((n, d)) < 0.5, -1.0, 1.0) * g ** (1.0 / r)
        return x + (radius / np.sum(g, axis=1) ** (1.0 / r))[:, None] * v

    result = run(d1_mechanism, a, b, 300_000, delta=DELTA, seed=7, statistic=statistic)
    assert result.epsilon_lower_bound > 3.0
    assert result.violates(1.0)


# --------------------------------------------------------------------------------------------------------------
# Binary tree: white-box form and the real TreeAggregator
# --------------------------------------------------------------------------------------------------------------

T, L = 64, 7  # spec §5 reference: sigma = 3 claims exactly 3.787 at delta = 1e-5; sigma = 1.5 is the broken one


@pytest.mark.parametrize("sigma, caught", [(3.0, False), (1.5, True)])
def test_tree_white_box(sigma, caught):
    """The sum of the L node values containing the differing leaf is one Gaussian with sigma/sqrt(L) (§1.1)."""
    claimed = gaussian_epsilon(3.0 / math.sqrt(L), DELTA, 1.0)
    assert claimed == pytest.approx(3.787, abs=1e-3)

    def nodes_sum(leaf, rng_, n):
        return L * leaf + GaussianNoise(sigma).sample(rng_, (n, L)).sum(axis=1)

    result = run(nodes_sum, 1.0, 0.0, 1_000_000, delta=DELTA, seed=8)
    assert result.violates(claimed) is caught
    if caught:
        assert result.epsilon_lower_bound > 4.5
    else:
        assert result.epsilon_lower_bound > 2.2


@pytest.mark.parametrize("sigma, caught", [(3.0, False), (1.5, True)])
def test_tree_aggregator_end_to_end(sigma, caught):
    """Through dpbandit.privacy.tree.TreeAggregator: n independent scalar trees run as one tree over (n,) items.
    Released prefix sums at t = 2^k are exactly the L nodes containing leaf 1 (t - lowbit(t) = 0), so their sum is
    the likelihood-ratio statistic of the transcript; auditing a part of the transcript is valid (post-processing).
    """
    tree_module = pytest.importorskip("dpbandit.privacy.tree")
    claimed = gaussian_epsilon(3.0 / math.sqrt(L), DELTA, 1.0)

    def tree_mechanism(leaf, rng_, n):
        tree = tree_module.TreeAggregator((n,), T, GaussianNoise(sigma), rng_)
        released = []
        for t in range(1, T + 1):
            tree.add(np.full(n, leaf if t == 1 else 0.0))
            if t & (t - 1) == 0:
                released.append(tree.release())
        return np.stack(released, axis=1)  # (n, L)

    result = run(tree_mechanism, 1.0, 0.0, 200_000, delta=DELTA, seed=9, statistic=lambda y: y.sum(axis=1))
    assert result.violates(claimed) is caught


# --------------------------------------------------------------------------------------------------------------
# Result object, contract, validation
# --------------------------------------------------------------------------------------------------------------


def test_result_is_reproducible_and_readable():
    mech = additive(LaplaceNoise(1.0))
    first = audit(mech, 1.0, 0.0, n_samples=20_000, delta=0.0, rng=rng(10))
    second = audit(mech, 1.0, 0.0, n_samples=20_000, delta=0.0, rng=rng(10))
    assert first == second
    assert first.confidence == 0.95 and first.n_samples == 20_000 and first.delta == 0.0
    assert first.method.startswith("threshold sweep, Clopper-Pearson, Bonferroni")
    assert first.direction in ("A vs B", "B vs A") and first.event.startswith("statistic ")
    assert 0.0 < first.p_upper < first.p_lower * math.exp(1.0) + 1e-12
    text = str(first)
    assert "epsilon >=" in text and "lower bound only" in text and "no proof" in text


def test_fixed_thresholds_and_identical_inputs():
    mech = additive(GaussianNoise(1.0))
    result = audit(mech, 0.0, 0.0, n_samples=50_000, delta=0.0, rng=rng(11), thresholds=[-1.0, 0.0, 1.0])
    assert result.n_thresholds == 3
    assert result.epsilon_lower_bound < 0.1  # identical inputs: nothing to find
    assert "epsilon >=" in str(result)


def test_no_event_gives_zero_bound():
    result = audit(additive(GaussianNoise(1.0)), 0.0, 0.0, n_samples=200, delta=0.5, rng=rng(12))
    assert result.epsilon_lower_bound == 0.0 and result.threshold is None and result.event == "none"
    assert "no event separates" in str(result)


def test_mechanism_contract_errors():
    vector = additive(GaussianNoise(1.0), (3,))
    with pytest.raises(ValueError, match="pass a scalar statistic"):
        audit(vector, np.ones(3), np.zeros(3), n_samples=100, delta=0.0, rng=rng())
    with pytest.raises(ValueError, match="must return n = 100 outputs"):
        audit(lambda x, r, n: np.zeros(n - 1), 0.0, 1.0, n_samples=100, delta=0.0, rng=rng(), thresholds=[0.0])
    with pytest.raises(ValueError, match=r"statistic must map the n outputs to shape \(100,\)"):
        audit(vector, np.ones(3), np.zeros(3), n_samples=100, delta=0.0, rng=rng(), statistic=lambda y: y,
              thresholds=[0.0])
    with pytest.raises(ValueError, match="finite"):
        audit(lambda x, r, n: np.full(n, np.nan), 0.0, 1.0, n_samples=100, delta=0.0, rng=rng(), thresholds=[0.0])


@pytest.mark.parametrize(
    "kwargs, exc, name",
    [
        ({"n_samples": 0}, ValueError, "n_samples"),
        ({"n_samples": 10.5}, TypeError, "n_samples"),
        ({"delta": 1.0}, ValueError, "delta"),
        ({"delta": -0.1}, ValueError, "delta"),
        ({"delta": float("nan")}, ValueError, "delta"),
        ({"confidence": 1.0}, ValueError, "confidence"),
        ({"confidence": 0.0}, ValueError, "confidence"),
        ({"rng": 0}, TypeError, "rng"),
        ({"n_thresholds": 0}, ValueError, "n_thresholds"),
        ({"n_pilot": 0}, ValueError, "n_pilot"),
        ({"thresholds": [np.inf]}, ValueError, "thresholds"),
        ({"statistic": 3}, TypeError, "statistic"),
    ],
)
def test_audit_validation(kwargs, exc, name):
    args = {"n_samples": 100, "delta": 0.0, "rng": rng()} | kwargs
    calls = []

    def mechanism(x, r, n):
        calls.append(n)
        return np.zeros(n)

    with pytest.raises(exc, match=name):
        audit(mechanism, 0.0, 1.0, **args)
    assert calls == []  # validated before any work


def test_audit_rejects_non_callable_mechanism():
    with pytest.raises(TypeError, match="mechanism"):
        audit(None, 0.0, 1.0, n_samples=10, delta=0.0, rng=rng())


def test_projection_statistic():
    stat = projection([3.0, 4.0])
    np.testing.assert_allclose(stat(np.array([[3.0, 4.0], [1.0, 0.0]])), [5.0, 0.6])
    with pytest.raises(ValueError, match="direction"):
        projection([0.0, 0.0])


# --------------------------------------------------------------------------------------------------------------
# Gilbert–McMillan histogram tester
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scale, violation", [(1.0, False), (0.5, True)])
def test_histogram_test_on_laplace(scale, violation):
    r = rng(13)
    n = 1_000_000
    a, b = 1.0 + r.laplace(0.0, scale, n), r.laplace(0.0, scale, n)
    result = histogram_test(a, b, 1.0, 0.0, 20, 1e-6, value_range=(-6.0, 7.0))
    assert isinstance(result, HistogramTestResult)
    assert bool(result) is violation
    e = math.e
    expected_error = 2 * (1 + e) * math.sqrt(20 / n) + 6 * (1 + e) * math.sqrt(math.log(8 / 1e-6) / (2 * n))
    assert result.error_tolerance == pytest.approx(expected_error)
    if violation:  # Laplace with epsilon_true = 2: delta(1) = 1 - e^(-1/2) = 0.39
        assert result.delta_estimate == pytest.approx(1 - math.exp(-0.5), abs=0.1)
    else:
        assert result.delta_estimate < 0.01


def test_histogram_test_with_edges_and_validation():
    r = rng(14)
    a, b = r.normal(0.0, 1.0, 10_000), r.normal(0.0, 1.0, 10_000)
    result = histogram_test(a, b, 1.0, 1e-5, np.linspace(-4, 4, 9), 0.05)
    assert result.n_bins == 8 and not result.violation
    with pytest.raises(ValueError, match="samples_a"):
        histogram_test([np.nan], b, 1.0, 0.0, 10)
    with pytest.raises(ValueError, match="epsilon"):
        histogram_test(a, b, -1.0, 0.0, 10)
    with pytest.raises(ValueError, match="delta"):
        histogram_test(a, b, 1.0, 1.0, 10)
    with pytest.raises(ValueError, match="beta"):
        histogram_test(a, b, 1.0, 0.0, 10, 0.0)
    with pytest.raises(ValueError, match="bins"):
        histogram_test(a, b, 1.0, 0.0, 0)
    with pytest.raises(ValueError, match="bins"):
        histogram_test(a, b, 1.0, 0.0, [1.0, 0.0])
