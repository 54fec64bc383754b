"""NoisySFW, NoisySGD and LocalMD (spec/han-frank-wolfe.md §7.1–7.3 with spec/errata.md E1–E3), and the measured
comparison of DP-TOFW with NoisySFW under the same calibration (§8.1's claim, checked honestly)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from dpbandit.envs.streams import RegressionStream
from dpbandit.optim.frank_wolfe import DPTOFW, PublishedSettingWarning
from dpbandit.optim.oracles import lp_norm
from dpbandit.optim.sco_baselines import (
    LocalMD,
    NoisySFW,
    NoisySGD,
    subsampled_gaussian_epsilon,
    subsampled_gaussian_multiplier,
)
from dpbandit.privacy.report import PUBLISHED_CODE_SETTING
from dpbandit.seeding import stream


def rng(seed: int = 0) -> np.random.Generator:
    return stream(seed, "privacy")


def run(learner, data) -> np.ndarray:
    for x, y in zip(data.x, data.y):
        learner.update(x, y)
    return learner.predict()


# -- NoisySFW --------------------------------------------------------------------------------------------------------


def test_noisy_sfw_schedule_and_sensitivities():
    learner = NoisySFW(5, 1000, lr_scale=0.1, delta=1e-3, calibration="paper", rng=rng())
    assert learner.steps == 31 and learner.batch0 == 500 and learner.batch == 15
    assert learner.eta == pytest.approx(0.1 * math.log(1000) / (2 * math.sqrt(1000)))
    s0, s1 = learner.sensitivities
    assert s0 == pytest.approx(4.0 / 1000)  # 2 L0/|B_0| = 4 L0/n (spec §7.1)
    assert s1 == pytest.approx(2 * 2.0 * learner.eta * 4.0 / 15)  # 2 L1 eta M/|B_t| with L1 = 2 (E3)
    # paper: sigma_0 = 4 sqrt(2) sqrt(kappa) L0 sqrt(ln(1/delta))/(n eps), kappa = 2 (spec §7.1)
    assert learner.noises[0].sigma == pytest.approx(4 * math.sqrt(2) * math.sqrt(2 * math.log(1e3)) / 1000)
    assert learner.noises[0].r == 3.0  # l_{kappa_+ + 1}, not the published exponent (D3)


def test_noisy_sfw_updates_once_per_batch():
    data = RegressionStream(5, 100).draw(0)
    learner = NoisySFW(5, 100, rng=rng())
    seen = []
    for x, y in zip(data.x, data.y):
        learner.update(x, y)
        seen.append(learner.predict().copy())
    changes = [t + 1 for t in range(1, 100) if not np.array_equal(seen[t], seen[t - 1])]
    assert np.any(seen[49] != 0) and np.all(seen[48] == 0)  # first release after B_0 = 50 samples
    assert changes == [50 + 5 * k for k in range(10)]  # then k - 1 = 9 batches of floor(10/2) = 5


@pytest.mark.parametrize("p", [1.5, math.inf])
def test_noisy_sfw_report(p):
    tight = NoisySFW(8, 400, p=p, epsilon=0.7, delta=1e-4, rng=rng()).privacy_report()
    assert tight.guarantee == "DP" and tight.epsilon == pytest.approx(0.7, rel=1e-6) and tight.delta == 1e-4
    paper = NoisySFW(8, 400, p=p, epsilon=0.7, delta=1e-4, calibration="paper", rng=rng()).privacy_report()
    assert 0.0 < paper.epsilon <= 0.7


def test_noisy_sfw_nearly_noiseless_makes_progress():
    data = RegressionStream(5, 2000, theta="code").draw(0)
    assert data.subopt(run(NoisySFW(5, 2000, epsilon=1e8, rng=rng()), data)) < 0.3


def test_noisy_sfw_published_setting():
    with pytest.warns(PublishedSettingWarning):
        learner = NoisySFW(5, 1000, delta=1e-3, published_setting_not_private=True, rng=rng())
    report = learner.privacy_report()
    assert report.guarantee == "none" and report.epsilon == math.inf and report.label == PUBLISHED_CODE_SETTING
    # the code's sigma_0 (spec §7.1) with kappa = min(q - 1, e^2(ln d - 1)) = 2, drawn by the D1-D3 sampler
    assert learner.noises[0].sigma == pytest.approx(4 * math.sqrt(2) * math.sqrt(2 * math.log(1e3)) / 1000)
    assert learner.noises[0].r == pytest.approx(math.log(5) - 1)


# -- NoisySGD ---------------------------------------------------------------------------------------------------------


def test_subsampled_gaussian_accounting():
    # q = 1: the subsampled event is the plain Gaussian mechanism composed `steps` times
    eps = subsampled_gaussian_epsilon(10, 10, 4.0, 3, 1e-5)
    z = subsampled_gaussian_multiplier(10, 10, 3, eps, 1e-5)
    assert z == pytest.approx(4.0, rel=2e-4) and z >= 4.0 * (1 - 1e-9)
    # sampling one point out of n amplifies: far less epsilon than without subsampling
    assert subsampled_gaussian_epsilon(100, 1, 4.0, 100, 1e-5) < subsampled_gaussian_epsilon(100, 100, 4.0, 100, 1e-5)


def test_noisy_sgd_calibrations_and_report():
    tight = NoisySGD(5, 100, epsilon=1.0, delta=1e-3, rng=rng())
    assert tight.steps == 10_000
    assert tight.privacy_report().epsilon == pytest.approx(1.0, rel=1e-3)
    assert tight.privacy_report().epsilon <= 1.0
    paper = NoisySGD(5, 100, epsilon=1.0, delta=1e-3, calibration="paper", rng=rng())
    assert paper.sigma == pytest.approx(math.sqrt(8 * math.log(1e3)))  # spec §7.3 [recalled]
    # measured truth: under replace-one RDP accounting the recalled sigma does not certify epsilon = 1
    report = paper.privacy_report()
    assert report.epsilon > 1.0 and "EXCEEDS" in report.note


def test_noisy_sgd_runs_at_the_last_sample_and_stays_feasible():
    data = RegressionStream(4, 60, p=math.inf).draw(1)
    learner = NoisySGD(4, 60, p=math.inf, radius=2.0, rng=rng())
    for x, y in zip(data.x[:-1], data.y[:-1]):
        learner.update(x, y)
        assert np.all(learner.predict() == 0)
    learner.update(data.x[-1], data.y[-1])
    assert np.any(learner.predict() != 0) and np.max(np.abs(learner.predict())) <= 2.0
    with pytest.warns(PublishedSettingWarning):
        pub = NoisySGD(4, 60, published_setting_not_private=True, rng=rng())
    assert pub.project_radius == 1.0 and pub.privacy_report().guarantee == "none"


def test_noisy_sgd_general_p_projection():
    data = RegressionStream(3, 12, p=1.5).draw(0)
    theta = run(NoisySGD(3, 12, p=1.5, radius=0.05, epsilon=0.5, rng=rng()), data)
    assert lp_norm(theta, 1.5) <= 0.05 * (1 + 1e-9)


# -- LocalMD ----------------------------------------------------------------------------------------------------------


def test_local_md_mirror_step_is_the_exact_minimiser():
    """argmin_{||u'||_p <= R} <g, u'> + D_h(u', u)/eta with h = ||.||_p^2/(2(p-1)), against sampled candidates."""
    learner = LocalMD(3, 64, p=1.5, rng=rng())
    p = 1.5
    gen = np.random.default_rng(7)

    def h(u):
        return lp_norm(u, p) ** 2 / (2 * (p - 1))

    def grad_h(u):
        n = lp_norm(u, p)
        return n ** (2 - p) * np.sign(u) * np.abs(u) ** (p - 1) / (p - 1)

    for radius in (0.05, 10.0):  # constrained and unconstrained
        u, g, eta = gen.standard_normal(3) * 0.1, gen.standard_normal(3), 0.3
        new = learner._mirror_step(u, g, eta, radius)

        def objective(v):  # v (3,) or (n, 3)
            return v @ g + (h(v) - h(u) - (v - u) @ grad_h(u)) / eta

        cand = gen.standard_normal((100_000, 3))
        cand *= (radius * gen.random((100_000, 1)) ** (1 / 3)) / lp_norm(cand, p)[:, None]
        if radius > 1:  # concentrate candidates near the unconstrained optimum too
            cand = np.concatenate([cand, new + 0.05 * gen.standard_normal((100_000, 3))])
            cand = cand[lp_norm(cand, p) <= radius]
        values = objective(cand)
        assert lp_norm(new, p) <= radius * (1 + 1e-12)
        assert objective(new) <= values.min() + 1e-9


@pytest.mark.slow
def test_local_md_report_and_measured_convergence():
    """Measured (T = 2000, d = 5, p = 1.5, seed 0): with the noise formula of §7.2 (constant 100) LocalMD diverges
    for every scale of the paper's grid, as the paper reports; with RDP-calibrated noise at the same (1, 1/T) and
    the closed-form mirror step it converges (SubOpt 0.025 at scale 100)."""
    data = RegressionStream(5, 2000, theta="code").draw(0)
    for scale in (1e2, 1e3, 1e4):
        paper = LocalMD(5, 2000, lr_scale=scale, calibration="paper", rng=rng())
        assert data.subopt(run(paper, data)) > 1.0
        assert paper.privacy_report().epsilon < 0.1  # the constant 100 is far more noise than (1, 1/T) needs
    tight = LocalMD(5, 2000, lr_scale=1e2, rng=rng())
    assert data.subopt(run(tight, data)) < 0.1
    report = tight.privacy_report()
    assert report.guarantee == "DP" and report.epsilon == pytest.approx(1.0, rel=1e-3) and report.epsilon <= 1.0


def test_local_md_rejects_p_outside_1_2():
    for p in (1.0, 2.5, math.inf):
        with pytest.raises(ValueError, match=r"p must be a number in \(1, 2\]"):
            LocalMD(3, 64, p=p, rng=rng())


# -- bad inputs -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [NoisySFW, NoisySGD, LocalMD])
@pytest.mark.parametrize("kwargs, error, match", [
    ({"radius": 0.0}, ValueError, "radius must be a finite number > 0"),
    ({"horizon": 0}, ValueError, "horizon must be an integer >= 1"),
    ({"epsilon": 0.0}, ValueError, "epsilon must be a finite number > 0"),
    ({"delta": 0.0}, ValueError, "delta must be"),
    ({"lr_scale": -1.0}, ValueError, "lr_scale must be"),
    ({"calibration": "x"}, ValueError, "calibration must be one of"),
    ({"rng": None}, ValueError, "pass rng="),
])
def test_bad_inputs(cls, kwargs, error, match):
    base = {"dim": 3, "horizon": 16, "rng": rng()}
    with pytest.raises(error, match=match):
        cls(**{**base, **kwargs})


def test_p_below_one_is_rejected():
    for cls in (NoisySFW, NoisySGD):
        with pytest.raises(ValueError, match="p must be a number >= 1"):
            cls(3, 16, p=0.5, rng=rng())


# -- DP-TOFW against NoisySFW (spec §8.1 claim) ---------------------------------------------------------------------


def best_mean_risk(cls, grid, datas):
    means = []
    for scale in grid:
        risks = [d.risk(run(cls(5, 2000, lr_scale=scale, calibration="tight", rng=rng(s)), d))
                 for s, d in enumerate(datas)]
        means.append(np.mean(risks))
    return min(means)


@pytest.mark.slow
def test_dptofw_against_noisy_sfw_measured_truth():
    """The paper claims DP-TOFW "significantly outperforms" NoisySFW (Table 5.1 at T = 2000, d = 5, p = 1.5:
    0.00285 vs 0.0746, 26x). Under the same correct (tight) calibration at (1, 1/T), with the paper's scale grids,
    10 seeds and best scale by mean risk, the measured risks are about equal (DP-TOFW 0.068 at scale 0.4,
    NoisySFW 0.066 at scale 0.08): DP-TOFW does not beat NoisySFW there, and its risk is ~24x the published one."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        datas = [RegressionStream(5, 2000, p=1.5, theta="code").draw(s) for s in range(10)]
        tofw = best_mean_risk(DPTOFW, (0.4, 0.6, 1.0), datas)
        sfw = best_mean_risk(NoisySFW, (0.01, 0.02, 0.04, 0.06, 0.08, 0.1), datas)
    assert tofw > 0.5 * sfw  # no 2x advantage, let alone the published 26x
    assert tofw > 10 * 0.00285
