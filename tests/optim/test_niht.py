"""N-IHT (dpbandit/optim/niht.py): gradient bounds and sensitivities (known answers and adversarial neighbours that
attain them), noise-off support recovery, calibrated scales, and an empirical audit that passes at the correct
calibration and catches the FLIPHAT code's D-F1 scale (x 1/(4 x_max) = 0.25 at x_max = 1) planted."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbandit.optim.niht import NIHTConfig, gradient_bound, niht, published_peeling_scale
from dpbandit.privacy.audit import audit
from dpbandit.privacy.calibrate import zcdp_rho_for
from dpbandit.privacy.peeling import peeling_scale
from dpbandit.seeding import stream


def config(**kw):
    base = dict(sparsity=2, step=1.0, iterations=1, radius=10.0, x_max=1.0, reward_low=-2.0, reward_high=2.0)
    return NIHTConfig(**{**base, **kw})


def test_gradient_bound_known_answers():
    assert gradient_bound("identity", 2.0, 3.0, -5.0, 5.0) == pytest.approx(2.0 * (6.0 + 5.0))
    assert gradient_bound("identity", 1.0, 0.0, -1.2, 0.7) == pytest.approx(1.2)
    assert gradient_bound("logistic", 1.0, 0.0, 0.0, 1.0) == pytest.approx(0.5)
    assert gradient_bound("logistic", 2.0, 50.0, 0.0, 1.0) == pytest.approx(2.0)  # |mu - y| < 1
    assert config().sensitivity(4.0) == pytest.approx(1.0 / 4.0 * 2.0 * 1.0 * (10.0 + 2.0))
    assert config().sensitivity(4.0, theta_l1=0.0) == pytest.approx(0.5 * 2.0)


@pytest.mark.parametrize("link", ["identity", "logistic"])
def test_replace_one_sensitivity_is_attained_not_exceeded(link):
    """Random and adversarial neighbours: ||v - v'||_inf <= Delta, with equality for the extreme neighbour."""
    rng = np.random.default_rng(0)
    d, n, r = 6, 30, 1.5
    low, high = (-2.0, 2.0) if link == "identity" else (0.0, 1.0)
    c = config(link=link, radius=r, reward_low=low, reward_high=high, step=0.7)
    mu = (lambda z: z) if link == "identity" else (lambda z: 1 / (1 + np.exp(-z)))
    theta = np.zeros(d)
    theta[0] = r  # ||theta||_1 = C
    X = rng.uniform(-1, 1, (n, d))
    y = rng.uniform(low, high, n)
    step = lambda X, y: theta - c.step / n * X.T @ (mu(X @ theta) - y)  # noqa: E731
    v = step(X, y)
    worst = 0.0
    for _ in range(200):
        X2, y2 = X.copy(), y.copy()
        X2[0] = rng.choice([-1.0, 1.0], d)
        y2[0] = rng.choice([low, high])
        worst = max(worst, np.abs(step(X2, y2) - v).max())
        assert worst <= c.sensitivity(n) * (1 + 1e-12)
    X2, y2, X3, y3 = X.copy(), y.copy(), X.copy(), y.copy()
    X2[0], y2[0] = np.ones(d), low  # x^T theta = r: g_j = mu(r) - low = G for every j
    X3[0], y3[0] = np.concatenate([[-1.0], np.ones(d - 1)]), high  # x^T theta = -r: g_j = mu(-r) - high = -G, j > 0
    extreme = np.abs(step(X2, y2) - step(X3, y3)).max()
    assert extreme == pytest.approx(c.sensitivity(n), rel=1e-12)


def test_noise_off_recovers_the_support():
    rng = np.random.default_rng(1)
    n, d = 400, 50
    beta = np.zeros(d)
    beta[[3, 17, 40]] = [1.0, -0.8, 0.6]
    X = rng.uniform(-1, 1, (n, d))
    y = np.clip(X @ beta + 0.1 * rng.standard_normal(n), -3, 3)
    fit = niht(X, y, n, config(sparsity=3, step=3.0, iterations=5, reward_low=-3, reward_high=3), math.inf, rng)
    assert set(np.flatnonzero(fit.theta)) == {3, 17, 40}
    assert np.abs(fit.theta - beta).max() < 0.1
    assert np.all(fit.scales == 0.0) and not fit.theta.flags.writeable


def test_noise_off_selection_keeps_the_lowest_indices_of_equal_magnitudes():
    """The exact top-s is the same on every machine: of tied |v_j|, the lowest indices (np.argpartition's choice
    depends on the CPU's SIMD level: on this project's AVX-512 machine it kept other coordinates than these)."""
    x = np.clip(np.round(np.random.default_rng(0).standard_normal(400) * 2) / 4, -1, 1)  # steps of 0.25: many ties
    for s in (1, 3, 9, 20):
        # one user with reward 1: the first iterate is v = x (step 1, n = 1), kept whole by the large ball
        fit = niht(x[None, :], np.ones(1), 1.0, config(sparsity=s, radius=1e9), math.inf, np.random.default_rng(0))
        magnitude = np.sort(np.abs(x))[::-1][s - 1]  # the s-th largest |x_j|
        above = np.flatnonzero(np.abs(x) > magnitude)
        tied = np.flatnonzero(np.abs(x) == magnitude)[: s - len(above)]
        assert len(tied) > 0 and np.count_nonzero(np.abs(x) == magnitude) > len(tied), s  # a real tie is broken
        np.testing.assert_array_equal(np.flatnonzero(fit.theta), np.sort([*above, *tied]))
        np.testing.assert_array_equal(fit.theta[fit.theta != 0], x[fit.theta != 0])


@pytest.mark.parametrize("selection", ["laplace", "gumbel"])
def test_scales_are_the_calibrated_ones(selection):
    rng = np.random.default_rng(2)
    X, y = rng.uniform(-1, 1, (20, 8)), rng.uniform(-2, 2, 20)
    c = config(iterations=3, selection=selection, iterate_sensitivity=True, radius=0.5)
    fit = niht(X, y, 17.5, c, 0.2, rng)
    assert fit.sensitivities[0] == pytest.approx(1.0 / 17.5 * 2 * 2.0)  # theta^0 = 0: G(0) = R = 2
    for m in range(3):
        assert fit.scales[m] == pytest.approx(peeling_scale(fit.sensitivities[m], 2, 0.2, selection, repeats=3))
        assert fit.sensitivities[m] <= c.sensitivity(17.5) + 1e-15
    assert np.abs(fit.theta).sum() <= 0.5 + 1e-12 and np.count_nonzero(fit.theta) <= 2


def test_published_scale_is_4_xmax_too_small():
    """D-F1: the code's lambda = eta B against the sensitivity 4 x_max eta B of its own (full squared loss) step."""
    x_max, C, R, n, s, M, eps, delta = 3.46, 3.75, 13.4, 1000.0, 10, 1, 1.0, 0.01
    B = x_max * C + R
    pub = published_peeling_scale(2e-4, n, B, s, M, eps, delta)
    # the same formula (CWZ peeling at (eps/M, delta/M)) evaluated at the true sensitivity:
    sens = config(x_max=x_max, radius=C, reward_low=-R, reward_high=R, step=2e-4).sensitivity(n)
    assert sens == pytest.approx(4 * x_max * (2e-4 / (2 * n)) * B)
    assert pub * 4 * x_max == pytest.approx(sens * 2 * math.sqrt(3 * s * math.log(M / delta)) * M / eps)


def test_validation():
    with pytest.raises(ValueError, match="sparsity must be an integer >= 1"):
        config(sparsity=0)
    with pytest.raises(ValueError, match="selection must be one of"):
        config(selection="topk")
    with pytest.raises(ValueError, match="reward_low must be <= reward_high"):
        config(reward_low=1.0, reward_high=0.0)
    with pytest.raises(ValueError, match="clipped"):
        niht(np.zeros((2, 3)), np.array([0.0, 5.0]), 2.0, config(), 1.0, np.random.default_rng())
    with pytest.raises(ValueError, match="n_tilde must be a finite number > 0"):
        niht(np.zeros((2, 3)), np.zeros(2), 0.0, config(), 1.0, np.random.default_rng())


# -- empirical audit --------------------------------------------------------------------------------------------------

def _audit_inputs(d=10, n=50, R=2.0):
    """Neighbours differing in user 0's context: x = (1, -1, ..., -1) vs its negation, reward R. Every other user
    pushes all coordinates equally, so the change raises coordinate 0 by Delta and lowers all others by Delta: the
    worst case of the (non-monotone) noisy max. The released theta_0 is the statistic."""
    base = np.ones((n - 1, d))
    x = np.concatenate([[1.0], -np.ones(d - 1)])
    y = np.full(n, R)
    return np.vstack([x, base]), np.vstack([-x, base]), y


@pytest.mark.parametrize("factor, caught", [(1.0, False), (0.25, True)])
def test_audit_catches_the_published_calibration(factor, caught):
    XA, XB, y = _audit_inputs()
    n = y.size
    eps, delta = 1.0, 0.01
    rho = zcdp_rho_for(eps, delta)
    c = config(sparsity=1, radius=1e6, iterate_sensitivity=True)

    def mechanism(X, rng, k):
        return np.array([niht(X, y, n, c, rho, rng, scale_factor=factor).theta[0] for _ in range(k)])

    result = audit(mechanism, XA, XB, n_samples=6000, delta=delta, rng=stream(3, "privacy"))
    assert result.violates(eps) is caught, str(result)


def test_a_public_start_iterate_is_used_and_checked():
    """``start`` (issue 29 item 2): the first gradient step is taken at the public iterate; one outside the C ball or
    of the wrong shape is refused naming ``start``."""
    c = config(sparsity=1, radius=1.0)
    X, y = np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([0.0, 0.5])
    start = np.array([1.0, 0.0])
    fit = niht(X, y, 2.0, c, math.inf, stream(0, "privacy"), start=start)
    v = start - (1.0 / 2.0) * X.T @ (X @ start - y)  # (0.5, 0.25): coordinate 0 kept
    assert fit.theta.tolist() == [v[0], 0.0]
    with pytest.raises(ValueError, match="start must lie in the l1 ball of radius C = 1"):
        niht(X, y, 2.0, c, math.inf, stream(0, "privacy"), start=np.array([1.0, 0.5]))
    with pytest.raises(ValueError, match=r"start must be a finite vector of shape \(2,\)"):
        niht(X, y, 2.0, c, math.inf, stream(0, "privacy"), start=np.zeros(3))


@pytest.mark.parametrize("link", ["identity", "logistic"])
def test_iht_steps_is_the_noise_off_fit_bit_for_bit(link):
    """iht_steps (noise-off FLIPHAT's per-user fit) returns niht_gradient's rho = inf fit, the same bits, read-only."""
    from dpbandit.optim.niht import iht_steps, niht_gradient, rows_gradient

    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 1, (80, 12))
    y = (X[:, :3].sum(axis=1) > 0).astype(float) if link == "logistic" else X[:, :3].sum(axis=1)
    c = NIHTConfig(sparsity=3, step=0.7, iterations=4, radius=3.0, x_max=1.0, reward_low=-3.0, reward_high=3.0,
                   link=link)
    gradient, start = rows_gradient(X, y, link), np.r_[0.5, -0.25, np.zeros(10)]
    fast = iht_steps(gradient, start, 80, c)
    np.testing.assert_array_equal(fast, niht_gradient(gradient, 12, 80, c, math.inf, rng, start=start).theta)
    assert not fast.flags.writeable and np.count_nonzero(fast) <= 3
