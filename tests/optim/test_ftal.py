"""PFTAL and WDP-COCOP (dpbandit/optim/ftal.py; spec/private-oco-learners.md §2, §3.2–§3.4).

* calibration known answers (Gamma-norm c = Delta k/epsilon; Gaussian node sigma 12.37 at T = W = 1024, Delta = 1,
  (1, 1e-5), spec/dp-testing-and-accounting.md §1.2) and ledgers equal to the configured privacy;
* noise off: the iterates of non-private FTAL, computed here by a generic solver;
* the learners really use the configured trees: the gradient-sum error recovered from the releases has variance
  popcount(t) sigma^2 (full tree) and |N_t| sigma^2 (window tree, which does not grow with t);
* window-DP is labelled as such, with the warning about users older than the window, never as DP;
* regret: noise off within the O(L^2 ln T/mu) bound, private near-logarithmic (slow);
* the auditor on the release streams: both learners pass, copies with the replace-one factor 2 forgotten (built
  here) are caught (slow);
* validation.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats
from scipy.special import expit

from dpbandit.optim.ftal import PFTAL, WDPCOCOP, WINDOW_WARNING
from dpbandit.optim.losses import SquaredLoss
from dpbandit.privacy.audit import audit
from dpbandit.privacy.tree import popcount
from dpbandit.privacy.window import WindowTree
from dpbandit.seeding import stream
from tests.optim.ridge_streams import HALF_SQUARED, regret, sphere_stream

def both(**kwargs):
    """A PFTAL and a WDP-COCOP with the same parameters (window 8)."""
    return PFTAL(**kwargs), WDPCOCOP(window=8, **kwargs)


# --------------------------------------------------------------------------------------------------------------
# Calibration and ledgers
# --------------------------------------------------------------------------------------------------------------


def test_gamma_calibration_and_ledger():
    # squared loss (scale 1), ||x|| <= 1, |y| <= 1, radius 1: G = 2(1 + 1) = 4, Delta = 2 G = 8.
    pftal = PFTAL(3, 1000, mu=1.0, epsilon=1.0, rng=stream(0, "privacy"))
    assert pftal.sensitivity == 8.0 and pftal.nodes_per_item == 10  # L = floor(log2 1000) + 1
    assert pftal.node_noise.scale == pytest.approx(80.0)  # c = Delta L / epsilon
    report = pftal.privacy_report()
    assert report.guarantee == "DP" and report.delta == 0.0 and report.epsilon == pytest.approx(1.0, rel=1e-12)
    assert report.events[0]["kind"] == "pure" and report.events[0]["count"] == 10
    wdp = WDPCOCOP(3, 1000, window=50, mu=1.0, epsilon=2.0, rng=stream(0, "privacy"))
    assert wdp.nodes_per_item == 7 and wdp.node_noise.scale == pytest.approx(8.0 * 7 / 2.0)  # W -> 64: k_W = 7
    report = wdp.privacy_report()
    assert report.guarantee == "window-DP" and report.window == 64 and report.epsilon == pytest.approx(2.0)


@pytest.mark.parametrize("horizon, window, sigma", [(1024, 1024, 12.37), (100_000, 65_536, 15.38)])
def test_gaussian_calibration_known_answers(horizon, window, sigma):
    """Delta = 1 with the squared loss of scale 1/8 (G = 2/8 (1 + 1) = 1/2); spec/dp-testing-and-accounting.md
    §1.2: per-node sigma at (1, 1e-5) is 12.37 (T = 1024, L = 11) and 15.38 (T = 1e5, L = 17); a window of W users
    has the nodes of a tree of W items (W = 1024: 11, W = 2^16: 17)."""
    kwargs = dict(mu=1.0, loss=SquaredLoss(0.125), epsilon=1.0, delta=1e-5, noise="gaussian",
                  rng=stream(0, "privacy"))
    pftal = PFTAL(2, horizon, **kwargs)
    wdp = WDPCOCOP(2, 10 * horizon, window=window, **kwargs)
    assert pftal.sensitivity == 1.0
    for learner, guarantee in ((pftal, "DP"), (wdp, "window-DP")):
        assert learner.node_noise.sigma == pytest.approx(sigma, abs=0.005)
        report = learner.privacy_report()
        assert report.guarantee == guarantee and report.delta == 1e-5
        assert report.epsilon == pytest.approx(1.0, rel=1e-6) and report.epsilon <= 1.0 + 1e-9


def test_window_dp_is_labelled_with_its_warning_and_never_dp():
    wdp = WDPCOCOP(3, 500, window=16, mu=1.0, epsilon=1.0, rng=stream(0, "privacy"))
    assert wdp.guarantee == "window-DP" and WDPCOCOP.guarantee == "window-DP" and PFTAL.guarantee == "DP"
    report = wdp.privacy_report()
    assert report.guarantee == "window-DP" and report.window == 16
    assert report.note == WINDOW_WARNING and "NO guarantee" in report.note and "older than the window" in report.note
    assert report.label.startswith("window-DP W=16")
    with pytest.raises(ValueError, match="window"):
        wdp.ledger.report(0.0, guarantee="DP", sensitivity_assumption="")
    assert "no guarantee" in WDPCOCOP.__doc__


def test_noise_off_reports_no_guarantee():
    for learner in both(dim=3, horizon=20, mu=1.0, epsilon=math.inf):
        report = learner.privacy_report()
        assert learner.guarantee == "none" and report.guarantee == "none" and report.epsilon == math.inf


# --------------------------------------------------------------------------------------------------------------
# Noise off = FTAL; the trees in use
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_noise_off_is_non_private_ftal(loss):
    """FTAL: x_{t+1} = argmin_{||x|| <= R} sum_tau <grad f_tau(x_tau), x> + mu/2 ||x - x_tau||^2 (SLSQP here)."""
    d, T, mu, radius = 3, 30, 0.4, 0.25
    x, y = sphere_stream(1, T, d, norm=2.0)
    if loss == "logistic":
        y = (y > 0).astype(float)
    learners = both(dim=d, horizon=T, mu=mu, loss=loss, radius=radius, y_bound=2.0, epsilon=math.inf)
    played, grads = [np.zeros(d)], []
    for t in range(T):
        w = played[-1]
        z = x[t] @ w
        dphi = 2.0 * (z - y[t]) if loss == "squared" else expit(z) - y[t]
        grads.append(dphi * x[t] + mu * w)
        G, P = np.sum(grads, axis=0), np.array(played)

        def surrogate(v):
            return G @ v + 0.5 * mu * np.sum((v - P) ** 2)

        res = optimize.minimize(surrogate, np.zeros(d), jac=lambda v: G + mu * (len(P) * v - P.sum(axis=0)),
                                method="SLSQP", options={"ftol": 1e-15, "maxiter": 500},
                                constraints=[{"type": "ineq", "fun": lambda v: radius**2 - v @ v}])
        played.append(res.x)
        for learner in learners:
            learner.update(x[t], y[t])
            np.testing.assert_allclose(learner.predict(), res.x, atol=1e-7)


@pytest.mark.parametrize("window", [None, 16])
def test_gradient_sum_error_has_the_tree_variance(window):
    """No projection (mu large): ghat_t = mu (sum_{tau<=t} xhat_tau - t xhat_{t+1}) is recovered from the
    releases; its error against the exact gradient sum is popcount(t) sigma^2 (full tree) or |N_t| sigma^2 (window
    tree) per coordinate (chi-square test of the pooled standardised errors, p = 1e-6)."""
    d, T, mu = 3, 2048, 2000.0
    x, y = sphere_stream(2, T, d)
    kwargs = dict(mu=mu, epsilon=1.0, delta=1e-5, noise="gaussian", rng=stream(4, "privacy"))
    learner = PFTAL(d, T, **kwargs) if window is None else WDPCOCOP(d, T, window=window, **kwargs)
    sigma = learner.node_noise.sigma
    nodes = (lambda t: popcount(t)) if window is None else WindowTree(1, window).nodes_in_release
    played_sum, grad_sum, z = np.zeros(d), np.zeros(d), []
    for t in range(1, T + 1):
        w = np.array(learner.predict())
        grad_sum += 2.0 * (x[t - 1] @ w - y[t - 1]) * x[t - 1] + mu * w
        played_sum += w
        learner.update(x[t - 1], y[t - 1])
        ghat = mu * (played_sum - t * np.asarray(learner.predict()))
        z.append((ghat - grad_sum) / (sigma * math.sqrt(nodes(t))))
    z = np.concatenate(z)
    cdf = stats.chi2.cdf(np.sum(z**2), z.size)
    assert 2 * min(cdf, 1 - cdf) > 1e-6
    assert stats.kstest(z, "norm").pvalue > 1e-6
    if window is not None:
        assert max(nodes(t) for t in range(1, T + 1)) <= 5  # log2 16 + 1: the error does not grow with t


def test_same_seed_same_releases_and_iterates_in_the_domain():
    d, T = 4, 300
    x, y = sphere_stream(3, T, d)
    for make in (lambda: PFTAL(d, T, mu=0.5, epsilon=0.5, domain="l1-ball", rng=stream(7, "privacy")),
                 lambda: WDPCOCOP(d, T, window=32, mu=0.5, epsilon=0.5, domain="box", radius=0.3,
                                  rng=stream(7, "privacy"))):
        runs = []
        for _ in range(2):
            learner = make()
            out = []
            for t in range(T):
                learner.update(x[t], y[t])
                assert learner.domain.contains(learner.predict())
                out.append(np.array(learner.predict()))
            runs.append(np.array(out))
        np.testing.assert_array_equal(runs[0], runs[1])


# --------------------------------------------------------------------------------------------------------------
# Regret
# --------------------------------------------------------------------------------------------------------------


def test_noise_off_regret_is_logarithmic():
    d, mu = 5, 1.0
    for T in (256, 4096):
        x, y = sphere_stream(9, T, d)
        for learner in both(dim=d, horizon=T, mu=mu, loss=HALF_SQUARED, epsilon=math.inf):
            bound = 2 * learner.lipschitz**2 / mu * (1 + math.log(T))  # follow-the-leader on mu-strongly convex
            assert -1e-9 <= regret(learner, x, y, mu) <= bound


@pytest.mark.slow
@pytest.mark.parametrize("cls, power", [(PFTAL, 2.5), (WDPCOCOP, 1.0)])
def test_private_regret_is_near_logarithmic(cls, power):
    """Standard stream, mu = 1, epsilon = 4 (gamma noise), W = 64: the log-log slope is far below 1/2 and the growth
    from T = 2^9 to 2^14 stays within the theory's polylog law (ln T)^power (ln^2.5 T for PFTAL, §3.4; ln T for
    WDP-COCOP, Thm 3), with slack 1.25."""
    Ts = [2**k for k in range(9, 15)]
    extra = {} if cls is PFTAL else {"window": 64}
    mean = np.array([np.mean([regret(cls(5, T, mu=1.0, loss=HALF_SQUARED, epsilon=4.0, rng=stream(s, "privacy"),
                                         **extra), *sphere_stream(100 + s, T), 1.0) for s in range(2)])
                     for T in Ts])
    slope = np.polyfit(np.log(Ts), np.log(mean), 1)[0]
    assert slope < 0.35, (slope, mean)
    assert mean[-1] / mean[0] <= 1.25 * (math.log(Ts[-1]) / math.log(Ts[0])) ** power, mean


# --------------------------------------------------------------------------------------------------------------
# Empirical audit of the release streams
# --------------------------------------------------------------------------------------------------------------


def halved(cls):
    """A deliberately mis-calibrated copy of ``cls``: the replace-one factor 2 of the leaf sensitivity forgotten."""

    class Halved(cls):
        def _calibrate(self, horizon):
            self.loss_lipschitz /= 2.0
            super()._calibrate(horizon)

    return Halved


@pytest.mark.slow
@pytest.mark.parametrize("cls, noise, delta", [(PFTAL, "gamma", 0.0), (WDPCOCOP, "gaussian", 0.05)])
def test_auditor_passes_the_learner_and_catches_a_miscalibrated_copy(cls, noise, delta):
    """d = 1, T = 2, logistic loss on the ball of radius 0.1 (leaf difference 1 against the bound 2 sigmoid(0.1)):
    neighbours differ in the first label. From the releases the test recovers the noisy nodes containing leaf 1,
    ghat_1 and ghat_2, and computes the exact privacy-loss statistic (Laplace in d = 1 for the Gamma-norm noise,
    Gaussian likelihood ratio otherwise)."""
    T, mu, eps = 2, 500.0, 1.0
    xs, ys_a, ys_b = np.ones(T), np.array([1.0, 0.0]), np.array([0.0, 0.0])
    kwargs = dict(mu=mu, loss="logistic", radius=0.1, epsilon=eps, noise=noise, delta=delta or None,
                  rng=stream(0, "privacy"), **({} if cls is PFTAL else {"window": 2}))

    def statistic(out):  # out: (n, T) releases xhat_2, xhat_3
        ghat1 = -mu * out[:, 0]  # mu (xhat_1 - xhat_2), xhat_1 = 0
        ghat2 = mu * (out[:, 0] - 2 * out[:, 1])
        leaf2 = expit(out[:, 0]) + mu * out[:, 0]  # grad f_2(xhat_2), label 0, same under both inputs
        a1, b1 = 0.5 - ys_a[0], 0.5 - ys_b[0]  # leaf 1 at xhat_1 = 0
        clean_a, clean_b, noisy = (a1, a1 + leaf2), (b1, b1 + leaf2), (ghat1, ghat2)
        if noise == "gamma":
            return sum(np.abs(n - b) - np.abs(n - a) for n, a, b in zip(noisy, clean_a, clean_b))
        return sum((n - 0.5 * (a + b)) * (a - b) for n, a, b in zip(noisy, clean_a, clean_b))

    bounds = []
    for learner in (cls(1, T, **kwargs), halved(cls)(1, T, **kwargs)):
        def mechanism(ys, rng, n, learner=learner):
            out = np.empty((n, T))
            for i in range(n):
                learner.reset(rng)
                for t in range(T):
                    learner.update(xs[t:t + 1], ys[t])
                    out[i, t] = learner.predict()[0]
            return out

        result = audit(mechanism, ys_a, ys_b, n_samples=10_000, delta=delta, rng=stream(1, "privacy"),
                       statistic=statistic, confidence=1 - 1e-6)
        bounds.append(result.epsilon_lower_bound)
    assert bounds[0] <= eps  # a pass is no proof
    assert bounds[1] > eps, bounds  # true epsilon about 1.9 (gamma) / 2.8 (gaussian): caught


# --------------------------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(mu=0.0), ValueError, "mu"),
    (dict(mu=-0.5), ValueError, "mu"),
    (dict(radius=0.0), ValueError, "radius"),
    (dict(epsilon=0.0), ValueError, "epsilon"),
    (dict(epsilon=float("nan")), ValueError, "epsilon"),
    (dict(noise="laplace"), ValueError, "noise"),
    (dict(delta=1e-5), ValueError, "delta"),  # gamma noise is pure DP
    (dict(noise="gaussian"), ValueError, "delta"),
    (dict(noise="gaussian", delta=0.0), ValueError, "delta"),
    (dict(noise="gaussian", delta=1.5), ValueError, "delta"),
    (dict(x_bound=-1.0), ValueError, "x_bound"),
    (dict(horizon=0), ValueError, "horizon"),
])
def test_bad_hyperparameters_raise(kwargs, error, match):
    for cls, extra in ((PFTAL, {}), (WDPCOCOP, {"window": 4})):
        params = dict(dim=3, horizon=10, mu=1.0, epsilon=1.0, rng=stream(0, "privacy"), **extra)
        params.update(kwargs)
        with pytest.raises(error, match=match):
            cls(**params)


@pytest.mark.parametrize("window, error", [(0, ValueError), (-3, ValueError), (None, TypeError), (2.5, TypeError)])
def test_bad_window_raises(window, error):
    with pytest.raises(error, match="window"):
        WDPCOCOP(3, 10, window=window, mu=1.0, rng=stream(0, "privacy"))


def test_missing_rng_raises_only_when_private():
    with pytest.raises(ValueError, match="rng"):
        PFTAL(3, 10, mu=1.0, epsilon=1.0)
    PFTAL(3, 10, mu=1.0, epsilon=math.inf)  # noise off: no randomness needed
