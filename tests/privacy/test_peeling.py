"""Private top-s selection (dpbandit/privacy/peeling.py): exact selection laws (chi-square / binomial at p ~ 1e-6),
value laws (KS), known-answer calibrations, validation. A peeling that reuses one noise vector for every round (the
FLIPHAT code's PRNG-key reuse, spec D-F4, built here in the test) is rejected by the same test."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpbandit.privacy.peeling import gumbel_top_s, laplace_peeling, peeling_rho, peeling_scale
from dpbandit.seeding import stream

P_MIN = 1e-6


def rng(seed: int = 0) -> np.random.Generator:
    return stream(seed, "privacy")


def chi2_p(counts: np.ndarray, probs: np.ndarray) -> float:
    return stats.chisquare(counts, probs * counts.sum()).pvalue


# -- known answers --------------------------------------------------------------------------------------------------

def test_known_answer_rho_and_scale():
    assert peeling_rho(1.0, 5.0, 2, "laplace") == pytest.approx(0.2)
    assert peeling_rho(1.0, 5.0, 2, "gumbel") == pytest.approx(0.08)
    assert peeling_rho(1.0, 5.0, 2, "gumbel", sigma=10.0) == pytest.approx(2 * (0.5 / 25 + 0.5 / 100))
    assert peeling_scale(1.0, 5, 0.5, "laplace") == pytest.approx(5.0)
    assert peeling_scale(1.0, 5, 0.5, "gumbel") == pytest.approx(math.sqrt(10.0))
    assert peeling_scale(2.0, 5, 0.5, "laplace", repeats=4) == pytest.approx(20.0)
    assert peeling_scale(1.0, 5, math.inf) == 0.0


@pytest.mark.parametrize("selection", ["laplace", "gumbel"])
def test_scale_and_rho_round_trip(selection):
    for delta_, s, rho, m in [(0.3, 5, 0.05, 1), (2.0, 10, 1.2, 3)]:
        b = peeling_scale(delta_, s, rho, selection, repeats=m)
        assert m * peeling_rho(delta_, b, s, selection) == pytest.approx(rho, rel=1e-12)


def test_rho_is_derived_from_per_pick_guarantees():
    """Laplace pick (2D/b)-DP -> (2D/b)^2/2 zCDP; value (D/b)-DP -> (D/b)^2/2; Gumbel pick (2D/b)-BR -> (2D/b)^2/8."""
    D, b, s = 0.7, 3.0, 4
    lap = s * ((2 * D / b) ** 2 / 2 + (D / b) ** 2 / 2)
    gum = s * ((2 * D / b) ** 2 / 8 + D**2 / (2 * b**2))
    assert peeling_rho(D, b, s, "laplace") == pytest.approx(lap)
    assert peeling_rho(D, b, s, "gumbel") == pytest.approx(gum)


# -- Laplace peeling: selection law -------------------------------------------------------------------------------

def laplace_diff_cdf(a: float, b: float) -> float:
    """P(L1 - L0 < a) for iid Laplace(b), a >= 0."""
    return 1.0 - 0.5 * math.exp(-a / b) * (1.0 + a / (2.0 * b))


def test_laplace_single_pick_probability():
    v, b, n = np.array([0.8, -0.3]), 0.5, 200_000
    p0 = laplace_diff_cdf(0.5, b)  # |v0| - |v1| = 0.5
    V = np.broadcast_to(v, (n, 2))
    _, support = laplace_peeling(rng(1), V, 1, b)
    k = int(np.sum(support[:, 0] == 0))
    z = (k - n * p0) / math.sqrt(n * p0 * (1 - p0))
    assert abs(z) < 5.0, (k / n, p0)


def _fresh_pair_probability(a: float, b: float) -> float:
    """P(S = {0, 1}) for Laplace peeling with s = 2 of scores (a, a, 0), fresh noise per round."""
    pdf = lambda x: math.exp(-abs(x) / b) / (2 * b)  # noqa: E731
    cdf = lambda x: 0.5 * math.exp(x / b) if x < 0 else 1 - 0.5 * math.exp(-x / b)  # noqa: E731
    # q = P(first pick = 0) = P(a + L0 > a + L1, a + L0 > L2)
    q = integrate.quad(lambda x: pdf(x) * cdf(x) * cdf(a + x), -40 * b, 40 * b, points=[0.0, -a], limit=200)[0]
    return 2 * q * laplace_diff_cdf(a, b)  # second pick (fresh noise): the remaining score-a coordinate beats 0


def test_laplace_two_picks_use_fresh_noise():
    a, b, n = 1.0, 1.0, 200_000
    v = np.broadcast_to(np.array([a, -a, 0.0]), (n, 3))
    p01 = _fresh_pair_probability(a, b)
    probs = np.array([p01, (1 - p01) / 2, (1 - p01) / 2])  # sets {0,1}, {0,2}, {1,2} (symmetry)

    def set_counts(support):
        s = np.sort(support, axis=1)
        return np.array([np.sum((s[:, 0] == i) & (s[:, 1] == j)) for i, j in [(0, 1), (0, 2), (1, 2)]])

    _, support = laplace_peeling(rng(2), v, 2, b)
    assert chi2_p(set_counts(support), probs) > P_MIN
    # the defect: one noise vector for both rounds (= top-2 of one noisy draw) has another law and is rejected
    noisy = np.abs(v) + rng(3).laplace(0.0, b, v.shape)
    reused = np.argsort(-noisy, axis=1)[:, :2]
    assert chi2_p(set_counts(reused), probs) < P_MIN


def test_laplace_values_law_and_sparsity():
    v, b, n = np.array([3.0, -2.0, 0.1, 0.0, 5.0]), 0.7, 40_000
    u, support = laplace_peeling(rng(4), np.broadcast_to(v, (n, 5)), 3, b)
    assert support.shape == (n, 3) and u.shape == (n, 5)
    assert np.all(np.sort(support, axis=1)[:, 1:] != np.sort(support, axis=1)[:, :-1])  # distinct picks
    assert np.all(np.count_nonzero(u, axis=1) == 3)
    noise = np.take_along_axis(u, support, axis=1) - v[support]
    assert stats.kstest(noise.ravel(), stats.laplace(scale=b).cdf).pvalue > P_MIN
    off = np.ones((n, 5), bool)
    np.put_along_axis(off, support, False, axis=1)
    assert np.all(u[off] == 0.0)


def test_per_row_scales():
    n = 20_000
    v = np.zeros((n, 2, 4))
    scales = np.array([0.5, 4.0])
    u, support = laplace_peeling(rng(5), v, 1, scales)
    noise = np.take_along_axis(u, support, axis=-1)[..., 0]
    for k, b in enumerate(scales):
        assert stats.kstest(noise[:, k], stats.laplace(scale=b).cdf).pvalue > P_MIN


# -- Gumbel top-s: exponential-mechanism law ------------------------------------------------------------------------

def test_gumbel_single_pick_is_exponential_mechanism():
    v, b, n = np.array([0.0, 1.0, -2.0, 0.5]), 0.8, 200_000
    p = np.exp(np.abs(v) / b)
    p /= p.sum()
    _, support = gumbel_top_s(rng(6), np.broadcast_to(v, (n, 4)), 1, b)
    assert chi2_p(np.bincount(support[:, 0], minlength=4), p) > P_MIN


def test_gumbel_top_two_is_sequential_exponential_mechanism():
    v, b, n = np.array([0.0, 1.0, -2.0, 0.5]), 0.8, 200_000
    w = np.exp(np.abs(v) / b)
    pairs = list(itertools.combinations(range(4), 2))
    probs = np.array([w[i] / w.sum() * w[j] / (w.sum() - w[i]) + w[j] / w.sum() * w[i] / (w.sum() - w[j])
                      for i, j in pairs])
    _, support = gumbel_top_s(rng(7), np.broadcast_to(v, (n, 4)), 2, b)
    s = np.sort(support, axis=1)
    counts = np.array([np.sum((s[:, 0] == i) & (s[:, 1] == j)) for i, j in pairs])
    assert chi2_p(counts, probs) > P_MIN
    # ordered as picked: the first index is the sequential first pick, P(first = j) = w_j / sum w
    assert chi2_p(np.bincount(support[:, 0], minlength=4), w / w.sum()) > P_MIN


def test_gumbel_values_are_gaussian():
    v, n = np.array([1.0, -1.0, 0.2]), 40_000
    u, support = gumbel_top_s(rng(8), np.broadcast_to(v, (n, 3)), 2, 0.5, sigma=1.7)
    noise = np.take_along_axis(u, support, axis=1) - v[support]
    assert stats.kstest(noise.ravel(), stats.norm(scale=1.7).cdf).pvalue > P_MIN


# -- validation -----------------------------------------------------------------------------------------------------

def test_validation_messages():
    g = rng()
    with pytest.raises(ValueError, match="s must be an integer in \\[1, 3\\]"):
        laplace_peeling(g, np.zeros(3), 4, 1.0)
    with pytest.raises(ValueError, match="scale must be finite and > 0"):
        gumbel_top_s(g, np.zeros(3), 1, 0.0)
    with pytest.raises(ValueError, match="v must be finite"):
        laplace_peeling(g, np.array([np.nan, 1.0]), 1, 1.0)
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        laplace_peeling(None, np.zeros(3), 1, 1.0)
    with pytest.raises(ValueError, match="selection must be one of"):
        peeling_scale(1.0, 2, 1.0, "exponential")
    with pytest.raises(ValueError, match="broadcast"):
        laplace_peeling(g, np.zeros((2, 3)), 1, np.ones(3))
    with pytest.raises(ValueError, match="only to selection='gumbel'"):
        peeling_rho(1.0, 1.0, 1, "laplace", sigma=1.0)
