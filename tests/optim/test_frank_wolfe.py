"""DP-TOFW and online Frank-Wolfe (spec/han-frank-wolfe.md §2, §3, §9; spec/errata.md E1, E2, E3, E6).

Known answers for the calibrations, convergence without noise, the ledger, the E3 per-node rule, the published
(non-private) comparison mode, determinism, bad inputs, and an empirical audit of the release stream (correct
calibration passes, a 5x under-noised variant built here is caught; confidence 1 - 1e-6).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from dpbandit.envs.streams import RegressionStream
from dpbandit.optim.frank_wolfe import DPTOFW, OnlineFrankWolfe, PublishedSettingWarning
from dpbandit.privacy.audit import audit
from dpbandit.privacy.calibrate import gaussian_sigma_analytic
from dpbandit.privacy.noise import GaussianNoise, GeneralizedGaussianNoise
from dpbandit.privacy.report import PUBLISHED_CODE_SETTING
from dpbandit.seeding import stream


def rng(seed: int = 0) -> np.random.Generator:
    return stream(seed, "privacy")


def run(learner, data) -> np.ndarray:
    for x, y in zip(data.x, data.y):
        learner.update(x, y)
    return learner.predict()


# -- calibration known answers -------------------------------------------------------------------------------------


def test_paper_calibration_eq_3_2_with_l1_2():
    # spec/errata.md E3: T = 1000, d = 5, p = 1.5, kappa = 2, L0 = 1, L1 = 2, D = 4, (1, 1e-3) -> sigma = 1208.0
    learner = DPTOFW(5, 1000, p=1.5, radius=2.0, epsilon=1.0, delta=1e-3, calibration="paper", rng=rng())
    assert learner.smoothness == 2.0 and learner.sensitivity == 18.0
    assert (learner.kappa.kappa, learner.kappa.kappa_plus, learner.kappa.r) == (2.0, 2.0, 3.0)
    assert learner.sigma == pytest.approx(1208.0, abs=0.05)
    assert learner.paper_levels == 11 and learner.tree_levels == 10


def test_tight_calibration_e6():
    # spec/errata.md E6: same setting, CKS rho* = 0.05939 -> sigma = 233.6
    learner = DPTOFW(5, 1000, p=1.5, epsilon=1.0, delta=1e-3, rng=rng())
    assert learner.sigma == pytest.approx(233.6, abs=0.05)
    assert isinstance(learner.noise, GeneralizedGaussianNoise) and learner.noise.r == 3.0  # l_{kappa_+ + 1}, not D3


def test_gaussian_case_p_above_2_is_exact_tree_accounting():
    # p = inf, d = 5: Lemma 3.3, ||.||_+ = sqrt(5) ||.||_2, Gaussian noise; l2 sensitivity of a leaf <= its l1 one
    learner = DPTOFW(5, 1000, p=math.inf, epsilon=1.0, delta=1e-3, rng=rng())
    assert isinstance(learner.noise, GaussianNoise)
    std = gaussian_sigma_analytic(1.0, 1e-3, learner.sensitivity * math.sqrt(10))
    assert learner.noise.sigma == pytest.approx(std, rel=1e-8)
    assert learner.sigma == pytest.approx(std * math.sqrt(5), rel=1e-8)


def test_lr_scale_enters_the_sensitivity():
    learner = DPTOFW(5, 1000, lr_scale=0.4, delta=1e-3, calibration="paper", rng=rng())
    assert learner.sensitivity == pytest.approx(2 * (1 + 2 * 4 * 0.4))  # 2(L0 + L1 D s), spec §2 + E3


def test_paper_calibration_needs_eps_over_m_at_most_1():
    with pytest.raises(ValueError, match="E1"):
        DPTOFW(5, 1000, epsilon=12.0, calibration="paper", rng=rng())
    DPTOFW(5, 1000, epsilon=12.0, calibration="tight", rng=rng())  # valid for every epsilon


@pytest.mark.parametrize("p, calibration", [(1.5, "tight"), (1.5, "paper"), (math.inf, "tight"),
                                            (math.inf, "paper"), (3.0, "tight"), (1.2, "tight")])
def test_report_states_the_configured_guarantee(p, calibration):
    learner = DPTOFW(12, 500, p=p, epsilon=0.8, delta=1e-4, calibration=calibration, rng=rng())
    report = learner.privacy_report()
    assert report.guarantee == "DP" and report.delta == 1e-4
    assert report.calibration_mode == "correct" and calibration in report.note
    if calibration == "tight":
        assert report.epsilon == pytest.approx(0.8, rel=1e-6)
    else:  # basic composition over m levels is loose: tighter accountings certify far less than the target
        assert 0.0 < report.epsilon <= 0.8
        assert 0.3 < dict(report.alternatives)["basic"] <= 0.8
    assert report.tree_depth == 9 and report.horizon == 500


def test_default_delta_is_one_over_t():
    assert DPTOFW(3, 250, rng=rng()).privacy_report().delta == pytest.approx(1 / 250)


# -- E3 per-node rule ------------------------------------------------------------------------------------------------


def test_per_node_scale_for_non_constant_steps():
    learner = DPTOFW(4, 64, schedule="strongly-convex", lr_scale=1.0, rng=rng())
    # eta_t = 2/(t+2): i eta_{i-1} = 2i/(i+1) increases to its maximum 2T/(T+1) at the last leaf
    assert learner.c_max == pytest.approx(2 * 64 / 65)
    assert learner.sensitivity == pytest.approx(2 * (1 + 2 * 4 * 2 * 64 / 65))
    scales = [learner.node_scale(e) for e in range(1, 65)]
    assert np.all(np.diff(scales) > 0) and scales[-1] == pytest.approx(1.0)
    assert scales[0] == pytest.approx(9 / (1 + 8 * 128 / 65))
    data = RegressionStream(4, 64).draw(0)
    for t, (x, y) in enumerate(zip(data.x, data.y), start=1):
        learner.update(x, y)
        assert learner._noise.factor == pytest.approx(learner.node_scale(t))
    convex = DPTOFW(4, 64, rng=rng())
    assert all(convex.node_scale(e) == 1.0 for e in range(1, 65))


# -- optimisation -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("schedule", ["convex", "strongly-convex"])
@pytest.mark.parametrize("theta", ["code", "paper"])
def test_noise_free_online_frank_wolfe_converges(schedule, theta):
    data = RegressionStream(5, 5000, p=1.5, theta=theta).draw(11)
    theta_hat = run(OnlineFrankWolfe(5, 5000, p=1.5, schedule=schedule, lipschitz=1.0), data)
    assert data.subopt(theta_hat) < 0.05
    assert np.sum(np.abs(theta_hat) ** 1.5) ** (1 / 1.5) <= 2.0 + 1e-9


def test_online_frank_wolfe_p_inf_and_p_1():
    for p in (math.inf, 1.0):
        data = RegressionStream(5, 5000, p=p, theta="code").draw(3)
        assert data.subopt(run(OnlineFrankWolfe(5, 5000, p=p), data)) < 0.1


def test_dptofw_with_vanishing_noise_converges_like_the_reference():
    """epsilon -> inf: DP-TOFW follows the noise-free reference at first (the leaves multiply iterate differences
    by t, so trajectories separate slowly) and converges as it does: SubOpt < 0.05 at T = 5000, d = 5."""
    data = RegressionStream(5, 5000, theta="code").draw(2)
    ref, private = OnlineFrankWolfe(5, 5000, lipschitz=1.0), DPTOFW(5, 5000, epsilon=1e12, rng=rng())
    for t, (x, y) in enumerate(zip(data.x, data.y)):
        ref.update(x, y)
        private.update(x, y)
        if t < 3:
            np.testing.assert_allclose(private.predict(), ref.predict(), atol=1e-3)
    assert data.subopt(private.predict()) < 0.05 and data.subopt(ref.predict()) < 0.05


@pytest.mark.parametrize("schedule, honaker", [("convex", False), ("strongly-convex", True)])
def test_epsilon_inf_is_the_noise_free_reference_and_reports_no_guarantee(schedule, honaker):
    """The registry's noise-off convention: epsilon = inf needs no rng, sums the leaves exactly (the iterates of
    OnlineFrankWolfe with the same clipping, up to rounding, which the recursion amplifies slowly) and reports
    guarantee "none"."""
    data = RegressionStream(5, 100, theta="code").draw(3)
    off = DPTOFW(5, 100, epsilon=math.inf, schedule=schedule, honaker=honaker)
    ref = OnlineFrankWolfe(5, 100, lipschitz=1.0, schedule=schedule)
    for x, y in zip(data.x, data.y):
        off.update(x, y)
        ref.update(x, y)
        np.testing.assert_allclose(off.predict(), ref.predict(), rtol=0, atol=1e-10)
    assert off.tree.noise is None
    report = off.privacy_report()
    assert off.guarantee == "none" and DPTOFW.guarantee == "DP" and not off.needs_rng
    assert report.guarantee == "none" and report.epsilon == math.inf and "noise off" in report.note
    assert off.noise is None and off.sigma == 0.0
    with pytest.raises(ValueError, match="finite epsilon"), warnings.catch_warnings():
        warnings.simplefilter("ignore", PublishedSettingWarning)
        DPTOFW(5, 400, epsilon=math.inf, published_setting_not_private=True)


def test_recursion_is_the_normalised_prefix_sum():
    """d_1 = grad f(x_1; z_1)/2 (x_0 = x_1 = 0), then d_t = (sum of leaves)/(t+1) (spec §2, eq. 3.1)."""
    data = RegressionStream(3, 3).draw(5)
    learner = OnlineFrankWolfe(3, 3)
    learner.update(data.x[0], data.y[0])
    np.testing.assert_allclose(learner.gradient_estimate, -2 * data.y[0] * data.x[0] / 2)
    x1, x2 = np.zeros(3), learner.predict().copy()
    learner.update(data.x[1], data.y[1])
    g1 = -2 * data.y[0] * data.x[0]
    g2 = 3 * 2 * (data.x[1] @ x2 - data.y[1]) * data.x[1] - 2 * 2 * (data.x[1] @ x1 - data.y[1]) * data.x[1]
    np.testing.assert_allclose(learner.gradient_estimate, (g1 + g2) / 3)


# -- determinism, release, memory --------------------------------------------------------------------------------------


def test_same_seed_same_iterates_and_read_only_release():
    data = RegressionStream(5, 300).draw(0)
    a = run(DPTOFW(5, 300, rng=rng(4)), data).copy()
    b = run(DPTOFW(5, 300, rng=rng(4)), data).copy()
    c = run(DPTOFW(5, 300, rng=rng(5)), data).copy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    learner = DPTOFW(5, 300, rng=rng(4))
    with pytest.raises(ValueError):
        learner.predict()[0] = 1.0
    run(learner, data)
    learner.reset(rng(4))
    np.testing.assert_array_equal(run(learner, data), a)  # reset restarts exactly


def test_memory_is_o_d_log_t():
    learner = DPTOFW(1000, 10**6, rng=rng())
    assert learner.tree.nbytes <= 2 * 21 * 1000 * 8 + 1000 * 8
    assert learner._noise.block * 1000 <= 2**14


# -- published comparison mode (spec §9.5) ---------------------------------------------------------------------------


def test_published_setting_is_explicit_warned_and_not_private():
    with pytest.warns(PublishedSettingWarning, match="NOT differentially private"):
        learner = DPTOFW(5, 1000, delta=1e-3, published_setting_not_private=True, rng=rng())
    assert learner.sigma == pytest.approx(671.1, abs=0.05)  # the code's print (spec §2), L1 = 1
    report = learner.privacy_report()
    assert report.guarantee == "none" and report.epsilon == math.inf
    assert report.calibration_mode == PUBLISHED_CODE_SETTING and report.label == PUBLISHED_CODE_SETTING
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        default = DPTOFW(5, 1000, rng=rng())  # defaults never reach it
    assert default.privacy_report().guarantee == "DP"


# -- bad inputs -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, error, match", [
    ({"p": 0.5}, ValueError, "p must be a number >= 1"),
    ({"radius": 0.0}, ValueError, "radius must be a finite number > 0"),
    ({"horizon": 0}, ValueError, "horizon must be an integer >= 1"),
    ({"epsilon": 0.0}, ValueError, "epsilon must be a number > 0"),
    ({"epsilon": -1.0}, ValueError, "epsilon must be"),
    ({"delta": 1.0}, ValueError, "delta must be"),
    ({"lr_scale": 2.5}, ValueError, "lr_scale must be a finite number in"),
    ({"calibration": "loose"}, ValueError, "calibration must be one of"),
    ({"schedule": "fast"}, ValueError, "schedule must be one of"),
    ({"lipschitz": 0.0}, ValueError, "lipschitz must be"),
    ({"rng": None}, ValueError, "pass rng="),
    ({"rng": 3}, TypeError, "numpy.random.Generator"),
])
def test_bad_inputs(kwargs, error, match):
    base = {"dim": 3, "horizon": 10, "rng": rng()}
    with pytest.raises(error, match=match):
        DPTOFW(**{**base, **kwargs})


def test_bad_samples():
    learner = DPTOFW(3, 2, rng=rng())
    with pytest.raises(ValueError, match="x must have shape"):
        learner.update(np.zeros(4), 0.0)
    learner.update(np.zeros(3), 0.0)
    learner.update(np.zeros(3), 0.0)
    with pytest.raises(ValueError, match="horizon=2"):
        learner.update(np.zeros(3), 0.0)


# -- empirical audit of the release stream ----------------------------------------------------------------------------

T_AUDIT, D_AUDIT, DELTA_AUDIT = 4, 2, 1e-3
X1 = np.array([1.0, 0.0])  # ||x||_3 = 1; at x_1 = 0 the clipped gradients for y = +-1 are -+x: distance 2 L0


class UnderNoisedDPTOFW(DPTOFW):
    """Deliberately broken (test only): node noise 5x smaller than the calibration."""

    def _node_sigma(self, sigma):
        return sigma / 5.0


def release_stream(learner):
    """mechanism(y_1, rng, n): n runs on z_1 = (X1, y_1) followed by zero samples (whose leaves are 0); output the
    privatised gradient releases d_1..d_T (the iterates are post-processing of them)."""

    def mechanism(y1, rng_, n):
        out = np.empty((n, T_AUDIT, D_AUDIT))
        zero = np.zeros(D_AUDIT)
        for k in range(n):
            learner.reset(rng_)
            learner.update(X1, y1)
            out[k, 0] = learner.gradient_estimate
            for t in range(1, T_AUDIT):
                learner.update(zero, 0.0)
                out[k, t] = learner.gradient_estimate
        return out

    return mechanism


def gg_likelihood_ratio(out):
    """White-box statistic: the l_3 GG log-likelihood ratio of the nodes holding leaf 1, which are the prefix
    releases at t = 1, 2, 4 (s_t = (t+1) d_t); leaf 1 is -X1 under y = +1 and +X1 under y = -1."""
    total = 0.0
    for t in (1, 2, 4):
        s = (t + 1) * out[:, t - 1]
        dist_b = np.sum(np.abs(s - X1) ** 3, axis=1) ** (2 / 3)
        dist_a = np.sum(np.abs(s + X1) ** 3, axis=1) ** (2 / 3)
        total = total + (dist_b - dist_a)
    return total


@pytest.mark.slow
@pytest.mark.parametrize("broken", [False, True])
def test_audit_of_the_release_stream(broken):
    cls = UnderNoisedDPTOFW if broken else DPTOFW
    # lr_scale -> 0 makes the leaf-1 distance 2 L0 equal to the calibrated sensitivity 2(L0 + L1 D s)
    learner = cls(D_AUDIT, T_AUDIT, epsilon=1.0, delta=DELTA_AUDIT, lr_scale=1e-9, rng=rng())
    assert learner.sensitivity == pytest.approx(2.0, rel=1e-6)
    result = audit(release_stream(learner), 1.0, -1.0, n_samples=8000, delta=DELTA_AUDIT, rng=rng(1 + broken),
                   statistic=gg_likelihood_ratio, confidence=1 - 1e-6)
    if broken:
        assert result.violates(1.0), str(result)
    else:
        assert not result.violates(1.0), str(result)
