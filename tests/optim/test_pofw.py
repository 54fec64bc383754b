"""DP-POFW (spec/han-frank-wolfe.md §5 with spec/errata.md E3, E4): calibration known answers, the recursion and the
Frank-Wolfe step, the selection laws, the ledger, the empirical audit of the release stream, and bad inputs.

Statistical tests use fixed seeds and thresholds at p ~ 1e-6 (chi-square quantiles at 1 - 1e-6, audits at
confidence 1 - 1e-6).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats

from dpbandit.optim.losses import LogisticLoss, SquaredLoss
from dpbandit.optim.pofw import DPPOFW, DPPOFWBatch, POFWCalibration, glm_lipschitz
from dpbandit.privacy.audit import audit
from dpbandit.privacy.calibrate import zcdp_epsilon
from dpbandit.seeding import stream

P_FAIL = 1e-6


def rng(seed: int = 0) -> np.random.Generator:
    return stream(seed, "privacy")


def calibration(**changes) -> POFWCalibration:
    params = dict(epsilon=1.0, delta=1e-4, horizon=10_000, radius=1.0, lipschitz=1.0, smoothness=2.0)
    return POFWCalibration.build(**{**params, **changes})


def batch(n=3, d=4, T=50, **changes) -> DPPOFWBatch:
    generator = changes.pop("rng", None) or rng()
    params = dict(epsilon=1.0, delta=1e-5, lipschitz=2.0, radius=1.0, feature_bound=1.0, loss=SquaredLoss(0.5))
    return DPPOFWBatch(n, d, T, **{**params, **changes}, rng=generator)


def linf_rows(generator: np.random.Generator, n: int, d: int) -> np.ndarray:
    X = generator.normal(size=(n, d))
    return X / np.abs(X).max(axis=1, keepdims=True)


# --------------------------------------------------------------------------------------------------------------
# Calibration: known answers (E1, E3, E4)
# --------------------------------------------------------------------------------------------------------------


def test_harmonic_sum_is_H_T_plus_1_minus_1():
    for T in (1, 2, 10, 10_000):
        assert calibration(horizon=T).harmonic == pytest.approx(math.fsum(1 / (t + 1) for t in range(1, T + 1)),
                                                                rel=1e-12)


@pytest.mark.parametrize("epsilon, delta, rho", [(1.0, 1e-3, 0.05939), (1.0, 1e-5, 0.03056)])
def test_rho_star_is_the_cks_inversion(epsilon, delta, rho):
    assert calibration(epsilon=epsilon, delta=delta).rho == pytest.approx(rho, abs=1e-5)  # spec/errata.md E1


@pytest.mark.parametrize("epsilon, ratio", [(1.0, 0.40), (8.0, 0.53)])
def test_gumbel_scale_against_the_spec_laplace_scale(epsilon, ratio):
    """E4 item 4: beta_t / lambda_t(spec §5) = 0.40 at eps = 1 and 0.53 at eps = 8 (T = 1e4, delta = 1e-4)."""
    T, delta, t = 10_000, 1e-4, 37
    cal = calibration(epsilon=epsilon, delta=delta, horizon=T)
    spread = cal.radius * (cal.lipschitz + cal.smoothness * cal.diameter)
    log_term = math.sqrt(math.log(T + 1) * math.log(1 / delta))
    lam_spec = 4 * math.sqrt(2) * spread * log_term / (epsilon * math.sqrt(t + 1))
    assert cal.scale(t) / lam_spec == pytest.approx(ratio, abs=0.005)


def test_laplace_scale_is_twice_the_gumbel_scale():
    """E4 items 3-4: at the same rho*, lambda_t = 2 beta_t."""
    g, lap = calibration(form="gumbel"), calibration(form="laplace")
    assert lap.coefficient == pytest.approx(2 * g.coefficient, rel=1e-12)


def test_scale_formula_with_L1_of_the_squared_loss():
    """E3: squared loss (x.theta - y)^2 with ||x||_inf <= 1 has L1 = 2; the factor sqrt(2) r (L0 + L1 D) is
    5 sqrt(2) = 7.07 for r = 1, L0 = 1, D = 2, and beta_t = that * sqrt(H/rho*)/sqrt(t+1)."""
    assert SquaredLoss().smoothness(1.0) == 2.0
    cal = calibration(smoothness=SquaredLoss().smoothness(1.0))
    assert cal.coefficient / math.sqrt(cal.harmonic / cal.rho) == pytest.approx(5 * math.sqrt(2), rel=1e-12)
    assert cal.scale(3) == pytest.approx(cal.coefficient / 2.0)
    assert cal.sensitivity(9) == pytest.approx(2 * 1.0 * (1.0 + 2.0 * 2.0) / 10)


@pytest.mark.parametrize("form", ["gumbel", "laplace"])
def test_step_rhos_sum_to_rho_star(form):
    cal = calibration(form=form, epsilon=4.0, horizon=5000)
    t = np.arange(1, 5001)
    per = {"gumbel": math.sqrt(8 * cal.rho / cal.harmonic), "laplace": math.sqrt(2 * cal.rho / cal.harmonic)}[form]
    np.testing.assert_allclose(cal.step_epsilon(t), per / np.sqrt(t + 1), rtol=1e-12)
    assert math.fsum(cal.step_rho(t)) == pytest.approx(cal.rho, rel=1e-10)


@pytest.mark.parametrize("target, achieved", [(1, 0.778), (4, 3.741), (8, 8.587), (16, 20.97)])
def test_the_spec_laplace_scale_misses_the_target(target, achieved):
    """E4 table (zCDP column): the §5 scale lambda_t accounts to more than the target epsilon; the replacement
    calibration exists because of this."""
    T, delta = 10_000, 1e-4
    cal = calibration(epsilon=target, delta=delta, horizon=T)
    t = np.arange(1, T + 1)
    spread = cal.radius * (cal.lipschitz + cal.smoothness * cal.diameter)
    lam_spec = 4 * math.sqrt(2) * spread * math.sqrt(math.log(T + 1) * math.log(1 / delta)) / (target * np.sqrt(t + 1))
    eps_t = 2 * cal.sensitivity(t) / lam_spec
    assert zcdp_epsilon(math.fsum(eps_t**2 / 2), delta) == pytest.approx(achieved, abs=0.002)


def test_glm_lipschitz_bounds():
    # half squared loss: |z - y| <= b x + max(-low, high)
    assert glm_lipschitz(SquaredLoss(0.5), 1.0, 1.0, -1.15, 1.15) == pytest.approx(2.15)
    assert glm_lipschitz(SquaredLoss(1.0), 2.0, 0.5, 0.0, 1.0) == pytest.approx(2 * (1.0 + 1.0) * 0.5)
    assert glm_lipschitz(LogisticLoss(), 1.0, 1.0, 0.0, 1.0) == pytest.approx(1 / (1 + math.exp(-1)))
    with pytest.raises(ValueError, match="response_high must be >= response_low"):
        glm_lipschitz(SquaredLoss(), 1.0, 1.0, 1.0, -1.0)
    grid = np.linspace(-1, 1, 41)  # brute force: sup |phi'(z, y)| x_max over the box
    brute = max(abs(SquaredLoss(0.5).dphi(z, y)) for z in grid * 1.5 for y in (-0.3, 0.8))
    assert glm_lipschitz(SquaredLoss(0.5), 1.5, 1.0, -0.3, 0.8) == pytest.approx(brute)


# --------------------------------------------------------------------------------------------------------------
# Ledger and report
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["gumbel", "laplace"])
@pytest.mark.parametrize("epsilon, delta", [(1.0, 1e-5), (4.0, 1e-3), (0.5, 1e-6)])
def test_report_states_the_configured_epsilon_delta(form, epsilon, delta):
    learner = DPPOFW(5, 100, "squared", rng(), epsilon=epsilon, delta=delta, lipschitz=1.0, form=form)
    report = learner.privacy_report()
    assert report.guarantee == "DP" and report.delta == delta
    assert report.epsilon == pytest.approx(epsilon, rel=1e-9) and report.epsilon <= epsilon * (1 + 1e-12)
    assert report.rho == pytest.approx(learner.calibration.rho, rel=1e-15)
    assert "CKS" in report.conversion
    assert ("E4 item 4" if form == "gumbel" else "E4 item 3") in report.events[0]["bound"]
    assert "L0 = 1" in report.sensitivity_assumption and "L1 = 2" in report.sensitivity_assumption
    assert learner.ledger.rho == pytest.approx(learner.calibration.rho)


def test_defaults_are_the_papers_epsilon_1_delta_1_over_T_and_L0_1():
    learner = DPPOFW(5, 200, rng=rng())
    report = learner.privacy_report()
    assert report.delta == 1 / 200 and report.epsilon == pytest.approx(1.0, rel=1e-9)
    assert learner.calibration.lipschitz == 1.0 and learner.calibration.radius == 1.0


def test_noise_off_reports_no_guarantee():
    learner = DPPOFW(5, 100, "squared", rng(), epsilon=math.inf, delta=1e-5, lipschitz=1.0)
    report = learner.privacy_report()
    assert report.guarantee == "none" and report.epsilon == math.inf
    assert learner.calibration.noise_off and learner.calibration.coefficient == 0.0


# --------------------------------------------------------------------------------------------------------------
# The algorithm: recursion, Frank-Wolfe step, clipping, synthetic samples
# --------------------------------------------------------------------------------------------------------------


def vertices_from_iterates(iterates: np.ndarray) -> np.ndarray:
    """v_t = (t+1) x_{t+1} - t x_t from the releases x_1 = 0, x_2, ..., x_{T+1} (rows)."""
    t = np.arange(len(iterates))[:, None]
    return (t[1:] + 1) * iterates[1:] - t[1:] * iterates[:-1]


@pytest.mark.parametrize("loss", [SquaredLoss(1.0), LogisticLoss()])
def test_recursive_gradient_and_frank_wolfe_step_follow_the_spec(loss):
    """Re-run §5 from the releases: d_t = grad f(x_t) + (1 - 1/(t+1))(d_{t-1} - grad f(x_{t-1})) with clipped
    gradients, and x_{t+1} = x_t + (v_t - x_t)/(t+1) with a vertex v_t of the l1 ball of radius r."""
    d, T, r, L0 = 6, 40, 0.7, 0.9
    g = np.random.default_rng(3)
    X = linf_rows(g, T, d) * 0.8
    y = g.normal(size=T) * 3 if isinstance(loss, SquaredLoss) else (g.random(T) < 0.5).astype(float)
    learner = DPPOFW(d, T, loss, rng(1), epsilon=2.0, delta=1e-5, lipschitz=L0, radius=r, feature_bound=0.8)
    iterates = [learner.predict().copy()]
    for t in range(T):
        learner.update(X[t], y[t])
        iterates.append(learner.predict().copy())
    iterates = np.array(iterates)
    v = vertices_from_iterates(iterates)
    assert np.all(np.count_nonzero(np.abs(v) > 1e-9, axis=1) == 1)
    np.testing.assert_allclose(np.abs(v).sum(axis=1), r, rtol=1e-9)
    assert np.all(np.abs(iterates).sum(axis=1) <= r * (1 + 1e-12))

    def clipped_grad(theta, x, yy):
        c = loss.dphi(x @ theta, yy)
        limit = L0 / np.abs(x).max()
        return np.clip(c, -limit, limit) * x

    d_t = np.zeros(d)
    for t in range(1, T + 1):
        x_t, x_prev = iterates[t - 1], iterates[max(t - 2, 0)]  # x_0 = x_1 = 0
        z = (X[t - 1], y[t - 1])
        d_t = clipped_grad(x_t, *z) + (1 - 1 / (t + 1)) * (d_t - clipped_grad(x_prev, *z))
    np.testing.assert_allclose(learner._engine.S[0] / (T + 1), d_t, rtol=1e-9, atol=1e-12)


def test_every_g_t_respects_the_sensitivity_bound():
    """||g_t||_inf <= L0 + L1 D for adversarial samples (huge responses are clipped), the basis of
    Delta_t = 2r(L0 + L1 D)/(t+1) (spec/han-frank-wolfe.md §5, spec/errata.md E3)."""
    n, d, T, L0 = 64, 5, 60, 1.5
    learners = batch(n=n, d=d, T=T, lipschitz=L0, loss=SquaredLoss(1.0), epsilon=50.0)
    L1, D = learners.calibration.smoothness, learners.calibration.diameter
    g = np.random.default_rng(4)
    worst = 0.0
    for _ in range(T):
        before = learners.S.copy()
        learners.update(linf_rows(g, n, d), g.choice([-1e6, 1e6, 0.3], size=n))
        worst = max(worst, float(np.abs(learners.S - before).max()))
    assert worst <= (L0 + L1 * D) * (1 + 1e-12)
    assert worst > 0.9 * L0  # the clip is reached


def test_zero_samples_have_zero_gradient_but_still_step():
    learners = batch(n=3, d=4, T=20)
    x = np.array([1.0, -0.5, 0.2, 0.0])
    learners.update_one(1, x, 0.8)
    S = learners.S.copy()
    for _ in range(5):
        learners.update_one(1, np.zeros(4), 0.0)
    np.testing.assert_array_equal(learners.S, S)  # d_t = S/(t+1) shrinks by t/(t+1) per zero sample
    assert learners.t == 6
    assert np.all(np.abs(learners.V).sum(axis=1) > 0)  # every learner selected a vertex every step


def test_update_one_equals_the_general_update_with_zero_rows():
    a, b = batch(n=3, d=5, T=30, rng=rng(7)), batch(n=3, d=5, T=30, rng=rng(7))
    g = np.random.default_rng(8)
    for t in range(30):
        i, x, yy = t % 3, linf_rows(g, 1, 5)[0], g.normal()
        X = np.zeros((3, 5))
        X[i] = x
        y = np.zeros(3)
        y[i] = yy
        a.update(X, y)
        b.update_one(i, x, yy)
    np.testing.assert_allclose(a.predict(), b.predict(), rtol=0, atol=1e-15)
    np.testing.assert_allclose(a.S, b.S, rtol=1e-12)


def test_same_seed_same_stream_and_reset():
    g = np.random.default_rng(2)
    X, y = linf_rows(g, 25, 8), g.normal(size=25)

    def run(learner):
        out = []
        for t in range(25):
            learner.update(X[t], y[t])
            out.append(learner.predict().copy())
        return np.array(out)

    learner = DPPOFW(8, 25, "squared", rng(5), epsilon=1.0, delta=1e-5, lipschitz=1.0)
    first = run(learner)
    learner.reset(rng(5))
    np.testing.assert_array_equal(run(learner), first)
    other = DPPOFW(8, 25, "squared", rng(6), epsilon=1.0, delta=1e-5, lipschitz=1.0)
    assert not np.array_equal(run(other), first)


def test_release_is_read_only_and_fresh():
    learner = DPPOFW(3, 10, "squared", rng(), epsilon=1.0, delta=1e-5, lipschitz=1.0)
    x = learner.predict()
    with pytest.raises(ValueError):
        x[0] = 1.0
    learner.update(np.array([1.0, 0.0, 0.0]), 1.0)
    assert not np.shares_memory(x, learner.predict()) and np.all(x == 0)


def test_noise_off_converges_on_a_sparse_regression():
    d, T = 20, 5000
    g = np.random.default_rng(1)
    theta = np.zeros(d)
    theta[:5] = 0.2
    X = linf_rows(g, T, d)
    y = X @ theta + 0.05 * g.normal(size=T)
    loss = SquaredLoss(0.5)
    learner = DPPOFW(d, T, loss, rng(), epsilon=math.inf, delta=1e-5,
                     lipschitz=glm_lipschitz(loss, 1.0, 1.0, -1.2, 1.2))
    for t in range(T):
        learner.update(X[t], y[t])
    assert np.abs(learner.predict() - theta).sum() < 0.4  # measured 0.24; ||theta||_1 = 1 (0 gives 1.0)


def test_noise_off_selects_the_exact_lmo_vertex():
    learners = batch(n=1, d=5, T=3, epsilon=math.inf)
    x = np.array([0.2, -1.0, 0.5, 0.1, 0.0])
    learners.update_one(0, x, 2.0)  # d_1 = grad f(0)/2 = (0 - 2) x / 2 -> largest |entry| at j = 1, positive
    v = learners.predict()[0] * 2
    np.testing.assert_allclose(v, [0, -1.0, 0, 0, 0])  # argmin <v, d_1> = -r sign(d_1[1]) e_1


# --------------------------------------------------------------------------------------------------------------
# Selection laws (through the public API: the first selection after one sample)
# --------------------------------------------------------------------------------------------------------------


def first_vertices(learners: DPPOFWBatch, x: np.ndarray, y: float) -> np.ndarray:
    """Feed every learner the same sample; return the index k of v_1 (k < d: +r e_k, else -r e_{k-d})."""
    n, d = learners.n_learners, learners.dim
    learners.update(np.tile(x, (n, 1)), np.full(n, y))
    v = learners.predict() * 2.0 / learners.radius  # x_2 = v_1 / 2
    j = np.argmax(np.abs(v), axis=1)
    return np.where(v[np.arange(n), j] > 0, j, j + d)


def exponential_law(learners: DPPOFWBatch) -> np.ndarray:
    """P(v) ~ exp(-<v, d_1>/beta_1) for learner 0 after one step (E4 item 4)."""
    d1 = learners.S[0] / 2.0
    score = np.concatenate([-d1, d1]) * learners.radius
    logw = score / float(learners.calibration.scale(1))
    w = np.exp(logw - logw.max())
    return w / w.sum()


def chi_square_ok(counts: np.ndarray, probs: np.ndarray) -> None:
    expected = counts.sum() * probs
    stat = float(((counts - expected) ** 2 / expected).sum())
    assert stat < stats.chi2.ppf(1 - P_FAIL, counts.size - 1), (stat, counts, expected)


@pytest.mark.parametrize(
    "d, epsilon, rejection",
    [(3, 1.0, False), (40, 1.0, True), (40, 300.0, False)],  # 2d <= 64 always takes the inverse CDF
)
def test_exponential_mechanism_law(d, epsilon, rejection):
    """Both sampler branches (rejection from the uniform proposal, inverse CDF) draw exactly the E4 law."""
    n = 200_000
    learners = batch(n=n, d=d, T=2, epsilon=epsilon, delta=1e-5, lipschitz=1.0, loss=SquaredLoss(1.0), rng=rng(11))
    x = np.linspace(-1.0, 1.0, d)
    k = first_vertices(learners, x, 0.7)
    probs = exponential_law(learners)
    a = learners.radius / (2.0 * float(learners.calibration.scale(1)))
    near_uniform = 2 * a * np.abs(learners.S[0]).max() <= math.log(8)
    assert (near_uniform and d > 32) == rejection
    keep = probs * n > 5  # chi-square cells with enough mass; the rest pooled
    counts = np.bincount(k, minlength=2 * d).astype(float)
    j = int(np.argmax(np.abs(learners.S[0])))
    assert counts[j] > 0 and counts[j + d] > 0  # both signs of a coordinate: the sign is noisy too (never §9 D4)
    if not keep.all():
        counts, probs = np.append(counts[keep], counts[~keep].sum()), np.append(probs[keep], probs[~keep].sum())
    chi_square_ok(counts, probs)


def test_laplace_report_noisy_max_law():
    """Laplace form = argmax(score + Laplace(lambda_1)) per vertex: two-sample homogeneity against a direct
    simulation with an independent generator."""
    n, d = 200_000, 4
    learners = batch(n=n, d=d, T=2, epsilon=3.0, lipschitz=1.0, loss=SquaredLoss(1.0), form="laplace", rng=rng(12))
    x = np.array([1.0, -0.4, 0.1, 0.7])
    k = first_vertices(learners, x, -0.5)
    d1 = learners.S[0] / 2.0
    score = np.concatenate([-d1, d1]) * learners.radius
    lam = float(learners.calibration.scale(1))
    direct = np.argmax(score + np.random.default_rng(99).laplace(0, lam, (n, 2 * d)), axis=1)
    table = np.array([np.bincount(k, minlength=2 * d), np.bincount(direct, minlength=2 * d)])
    table = table[:, table.sum(axis=0) > 0]
    stat, p, dof, _ = stats.chi2_contingency(table)
    assert p > P_FAIL


def test_noise_off_breaks_ties_uniformly():
    n, d = 100_000, 3
    learners = batch(n=n, d=d, T=2, epsilon=math.inf, rng=rng(13))
    k = first_vertices(learners, np.zeros(d), 0.0)  # d_1 = 0: every vertex minimises <v, d_1>
    chi_square_ok(np.bincount(k, minlength=2 * d).astype(float), np.full(2 * d, 1 / (2 * d)))


# --------------------------------------------------------------------------------------------------------------
# Empirical audit of the release stream (spec/dp-testing-and-accounting.md §5)
# --------------------------------------------------------------------------------------------------------------

AUDIT_T, AUDIT_DELTA = 16, 1e-3


def pofw_stream(form: str, noise_divisor: float = 1.0):
    """Neighbouring streams: the first sample (x = 1, y = +-1000: clipped gradients -L0 / +L0), then zero samples
    (what an unplayed DP-HDB arm sees). Output: the signs of the T selected vertices (d = 1). SquaredLoss(0.01)
    makes L1 D small, so this pair nearly attains the worst-case sensitivity 2(L0 + L1 D).

    ``noise_divisor`` > 1 builds a deliberately under-noised learner **here in the test**: its scale coefficient is
    divided while its ledger still claims the configured epsilon."""

    def mechanism(y0, generator, n):
        learners = DPPOFWBatch(n, 1, AUDIT_T, epsilon=1.0, delta=AUDIT_DELTA, lipschitz=1.0, loss=SquaredLoss(0.01),
                               form=form, rng=generator)
        if noise_divisor != 1.0:
            cal = learners.calibration
            learners.calibration = dataclasses.replace(cal, coefficient=cal.coefficient / noise_divisor)
        signs, previous = np.empty((n, AUDIT_T)), np.zeros(n)
        zeros_x, zeros_y = np.zeros((n, 1)), np.zeros(n)
        for t in range(1, AUDIT_T + 1):
            if t == 1:
                learners.update(np.ones((n, 1)), np.full(n, y0))
            else:
                learners.update(zeros_x, zeros_y)
            current = learners.predict()[:, 0] * (t + 1)  # = sum of the selected vertices
            signs[:, t - 1] = np.sign(current - previous)
            previous = current
        return signs

    return mechanism


def stream_statistic(signs: np.ndarray) -> np.ndarray:
    """Log-likelihood ratio of the Gumbel form up to scale: step t's logit shift is proportional to 1/sqrt(t+1)."""
    return signs @ (1.0 / np.sqrt(np.arange(2, AUDIT_T + 2)))


@pytest.mark.parametrize("form, seed", [("gumbel", 21), ("laplace", 22)])
def test_audit_finds_no_violation_on_the_release_stream(form, seed):
    claimed = DPPOFWBatch(1, 1, AUDIT_T, epsilon=1.0, delta=AUDIT_DELTA, lipschitz=1.0, loss=SquaredLoss(0.01),
                          form=form, rng=rng()).privacy_report().epsilon
    result = audit(pofw_stream(form), 1000.0, -1000.0, n_samples=200_000, delta=AUDIT_DELTA, rng=rng(seed),
                   statistic=stream_statistic, confidence=1 - P_FAIL)
    assert not result.violates(claimed), str(result)
    if form == "gumbel":
        assert result.epsilon_lower_bound > 0.3  # the audit has power (measured 0.57)


@pytest.mark.parametrize("form, seed", [("gumbel", 23), ("laplace", 24)])
def test_audit_flags_noise_scaled_down_five_times(form, seed):
    result = audit(pofw_stream(form, noise_divisor=5.0), 1000.0, -1000.0, n_samples=200_000, delta=AUDIT_DELTA,
                   rng=rng(seed), statistic=stream_statistic, confidence=1 - P_FAIL)
    assert result.violates(1.0), str(result)  # measured lower bounds: 4.1 (Gumbel), 1.8 (Laplace)


# --------------------------------------------------------------------------------------------------------------
# Bad inputs
# --------------------------------------------------------------------------------------------------------------

GOOD = dict(epsilon=1.0, delta=1e-5, lipschitz=1.0)


@pytest.mark.parametrize(
    "changes, error, match",
    [
        ({"epsilon": 0.0}, ValueError, "epsilon must be a number > 0"),
        ({"epsilon": -1.0}, ValueError, "epsilon must be a number > 0"),
        ({"epsilon": float("nan")}, ValueError, "epsilon must be a number > 0, got nan"),
        ({"delta": 0.0}, ValueError, r"delta must be a finite number in \(0, 1\)"),
        ({"delta": 1.0}, ValueError, r"delta must be a finite number in \(0, 1\)"),
        ({"delta": -0.1}, ValueError, "delta"),
        ({"lipschitz": 0.0}, ValueError, "lipschitz must be a finite number > 0"),
        ({"lipschitz": math.inf}, ValueError, "lipschitz must be a finite number"),
        ({"radius": -1.0}, ValueError, "radius must be a finite number > 0"),
        ({"feature_bound": 0.0}, ValueError, "feature_bound must be a finite number > 0"),
        ({"form": "gaussian"}, ValueError, "form must be one of"),
        ({"zcdp_method": "pld"}, ValueError, "zcdp_method must be one of"),
        ({"epsilon": "1"}, TypeError, "epsilon must be a real number"),
    ],
)
def test_invalid_parameters_raise_before_any_work(changes, error, match):
    with pytest.raises(error, match=match):
        DPPOFW(3, 10, "squared", rng(), **{**GOOD, **changes})


def test_invalid_horizon_dim_and_rng():
    with pytest.raises(ValueError, match="horizon must be an integer >= 1"):
        DPPOFW(3, 0, "squared", rng(), **GOOD)
    with pytest.raises(ValueError, match="dim must be an integer >= 1"):
        DPPOFW(0, 10, "squared", rng(), **GOOD)
    with pytest.raises(ValueError, match="pass rng="):
        DPPOFW(3, 10, "squared", None, **GOOD)
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        DPPOFWBatch(2, 3, 10, **GOOD, rng=np.random.RandomState(0))


def test_bad_samples_raise():
    learner = DPPOFW(3, 2, "squared", rng(), **GOOD, feature_bound=0.5)
    with pytest.raises(ValueError, match=r"\|\|x\|\|_inf = 0.6 > feature_bound = 0.5"):
        learner.update(np.array([0.6, 0.0, 0.0]), 0.0)
    with pytest.raises(ValueError, match="x must have shape"):
        learner.update(np.zeros(4), 0.0)
    with pytest.raises(ValueError, match="features must be finite"):
        learner.update(np.array([np.nan, 0.0, 0.0]), 0.0)
    with pytest.raises(ValueError, match="y must be finite"):
        learner.update(np.zeros(3), math.inf)
    assert learner.t == 0 and learner._engine.t == 0  # nothing was consumed
    learner.update(np.zeros(3), 0.0)
    learner.update(np.zeros(3), 0.0)
    with pytest.raises(ValueError, match="horizon=2"):
        learner.update(np.zeros(3), 0.0)
    learners = batch(n=2, d=3, T=5)
    with pytest.raises(ValueError, match=r"X must have shape \(2, 3\)"):
        learners.update(np.zeros((3, 3)), np.zeros(3))
    with pytest.raises(ValueError, match="index must be an integer in"):
        learners.update_one(2, np.zeros(3), 0.0)


def test_features_within_float_slack_are_clipped_not_rejected():
    learner = DPPOFW(2, 3, "squared", rng(), **GOOD)
    x = np.array([1.0 + 1e-12, -0.5])
    x.flags.writeable = False  # the caller's array is never modified
    learner.update(x, 0.3)
    assert learner.t == 1
