"""The fliphat agent (dpbandit/agents/fliphat.py): conformance, the privacy report and its rho split, known-answer
calibrations, validation, learning with the noise off, and empirical audits of one episode's release that pass at
the correct calibration and catch the FLIPHAT code's D-F1 noise (x 1/(4 x_max) = 0.25 at x_max = 1) planted — for a
change of one user's context (shared structure) and for a user moved between arms (disjoint structure)."""

from __future__ import annotations

import math
import warnings

import gymnasium as gym
import numpy as np
import pytest

import dpbandit  # noqa: F401  (registers the environments)
from dpbandit import make_agent, simulate
from dpbandit.agents.fliphat import FLIPHAT, FLIPHATCurator
from dpbandit.envs.glm import GLMBanditEnv
from dpbandit.experiment.checks import check_agent, check_private_agent
from dpbandit.optim.gg_calibration import PublishedSettingWarning
from dpbandit.optim.niht import niht, niht_gradient
from dpbandit.privacy.audit import audit
from dpbandit.privacy.calibrate import zcdp_rho_for
from dpbandit.privacy.peeling import peeling_scale
from dpbandit.seeding import stream


def env_of(env_id="dpbandit/SparseLinear-v0", **kw):
    return gym.make(env_id, **kw)


@pytest.mark.parametrize("env_id, params", [
    ("dpbandit/SparseLinear-v0", {}),
    ("dpbandit/SparseLinear-v0", {"selection": "gumbel"}),
    ("dpbandit/SharedLinear-v0", {}),
    ("dpbandit/SparseLogistic-v0", {"selection": "gumbel", "iterations": 2}),
])
def test_conformance_and_quick_audit(env_id, params):
    env = env_of(env_id, horizon=200)
    agent = make_agent("fliphat", env, **params)
    check_private_agent(agent, env, n_rounds=16, audit=True, audit_samples=600)


def test_noise_off_is_an_agent_without_guarantee():
    env = env_of(horizon=200)
    agent = make_agent("fliphat", env, epsilon=math.inf)
    check_agent(agent, env)
    report = agent.privacy_report()
    assert report.guarantee == "none" and math.isinf(report.epsilon)


def test_report_states_unit_schedule_rho_and_assumptions():
    env = env_of(horizon=1000)
    agent = make_agent("fliphat", env, epsilon=1.0)
    report = agent.privacy_report()
    rho = zcdp_rho_for(1.0, 1e-3)
    assert report.guarantee == "JDP"
    assert report.rho == pytest.approx(rho, rel=1e-9)  # parallel over 10 episodes: charged once, not 10 times
    assert report.epsilon == pytest.approx(1.0, abs=2e-3)
    text = report.to_json() if hasattr(report, "to_json") else str(report)
    for needle in ("doubling episodes", "rho_c = rho/2", "rho/2 + rho_c = rho", "||x||_inf <= x_max = 1"):
        assert needle in text, needle


def test_known_answer_calibration():
    """SparseLinear-v0: x_max = 1, C = 1, clip = [-1.4, 1.4] (means in [-1, 1] +- 4 x 0.1), s = 5, eta = 1."""
    env = env_of(horizon=1000)
    agent = make_agent("fliphat", env, epsilon=1.0)
    rho = zcdp_rho_for(1.0, 1e-3)
    assert agent.count_sigma == pytest.approx(math.sqrt(2.0 / rho))
    assert agent.min_count == pytest.approx(max(10.0, 3.0 * math.sqrt(2.0 / rho)))
    delta_ = agent.niht_config.sensitivity(100.0)
    assert delta_ == pytest.approx(1.0 / 100.0 * 2.0 * 1.0 * (1.0 + 1.4))
    assert peeling_scale(delta_, 5, rho) == pytest.approx(delta_ * math.sqrt(2.5 * 5 / rho))
    gumbel = make_agent("fliphat", env, epsilon=1.0, selection="gumbel")
    assert gumbel.iterate_sensitivity and gumbel.niht_config.sensitivity(100.0, 0.0) == pytest.approx(0.02 * 1.4)


def test_validation_messages():
    env = env_of(horizon=100)
    with pytest.raises(ValueError, match="sparsity must be an integer in \\[1, 50\\]"):
        make_agent("fliphat", env, sparsity=51)
    with pytest.raises(ValueError, match="selection must be one of"):
        make_agent("fliphat", env, selection="exponential")
    with pytest.raises(ValueError, match="horizon=50 does not match"):
        make_agent("fliphat", env, horizon=50)
    with pytest.raises(ValueError, match="links"):
        make_agent("fliphat", env_of("dpbandit/SparseProbit-v0", horizon=100))
    with pytest.raises(ValueError, match="iterations must be an integer >= 1"):
        make_agent("fliphat", env, iterations=0)
    with pytest.raises(TypeError, match="published_setting_not_private must be a bool"):
        make_agent("fliphat", env, published_setting_not_private=1)
    with pytest.raises(ValueError, match="shared structure"):
        make_agent("fliphat", env, published_setting_not_private=True)


def test_context_beyond_the_bound_raises():
    env = env_of(horizon=100)
    agent = make_agent("fliphat", env)
    agent.reset(0)
    obs = np.full((5, 50), 1.5)
    with pytest.raises(ValueError, match="context_bound"):
        agent.update(obs, 0, 0.0, {})


def test_published_setting_warns_and_reports_none():
    env = env_of("dpbandit/SharedLinear-v0", horizon=100)
    with pytest.warns(PublishedSettingWarning, match="NOT differentially private"):
        agent = make_agent("fliphat", env, published_setting_not_private=True)
    assert agent.privacy_report().guarantee == "none"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PublishedSettingWarning)
        assert simulate(env, agent, seed=0)["cumulative_regret"].iloc[-1] > 0


def test_noise_off_learns():
    """Figure 5.1 environment, T = 3000: the noise-free agent's regret is far below uniform random play's."""
    env = env_of("dpbandit/HanFigure51-K2-v0", horizon=3000)
    ours = [simulate(env, make_agent("fliphat", env, epsilon=math.inf), seed=s)["cumulative_regret"].iloc[-1]
            for s in range(2)]
    rand = [simulate(env, make_agent("random", env), seed=s)["cumulative_regret"].iloc[-1] for s in range(2)]
    assert np.mean(ours) < 0.08 * np.mean(rand), (ours, rand)


# -- audits of one episode's release ----------------------------------------------------------------------------------

def _episode_env(structure):
    return GLMBanditEnv(n_arms=2, dim=10, horizon=2000, structure=structure, contexts="gaussian", context_norm="linf",
                        context_bound=1.0, normalize="clip", theta_norm="l1", theta_bound=1.0, sparsity=2)


PLANTED = 0.25  # the D-F1 calibration: every peeling scale x 1/(4 x_max) = 0.25 (x_max = 1)


class PlantedCurator(FLIPHATCurator):
    """The curator with the D-F1 noise planted. The hook lives here, in the tests: the agent has none (a noise scale
    changed outside the calibration would leave its report claiming the full (epsilon, delta))."""

    def _fit(self, gradient, n_tilde):
        a = self._agent
        return niht_gradient(gradient, a.dim, n_tilde, a.niht_config, a.rho_fit, self._rng, scale_factor=PLANTED).theta


class Planted(FLIPHAT):
    """FLIPHAT with the D-F1 noise planted (:class:`PlantedCurator`)."""

    def _make_curator(self, privacy_rng):
        return PlantedCurator(self, privacy_rng)


def test_a_noise_scale_set_from_outside_changes_nothing():
    """Issue 29 item 1: the agent has no noise-scale hook. Setting the old private ``_scale_factor`` (0.25) runs the
    calibrated noise, bit for bit, so the report's (epsilon, delta) stays true."""
    env = env_of(horizon=300)
    plain, tampered = make_agent("fliphat", env), make_agent("fliphat", env)
    tampered._scale_factor = 0.25
    a, b = simulate(env, plain, seed=3), simulate(env, tampered, seed=3)
    assert a["cumulative_regret"].to_numpy().tolist() == b["cumulative_regret"].to_numpy().tolist()
    assert tampered.privacy_report().to_dict() == plain.privacy_report().to_dict()


def _boundary_pair(agent, n=40, level=0.3):
    """Two neighbouring episodes (one user's row differs) and a public iterate at which N-IHT's step reaches its full
    replace-one sensitivity ``Delta = (eta/n) 2 x_max (x_max C + R)`` (identity link, clip [-R, R]).

    From theta^0 = 0 no pair reaches it (the residual of one user is at most R, not C + R), so a noise too small by
    x 0.25 reads about 0.99 against a claim of 1 and is missed. At ``theta = C e_1`` (on the l1 boundary) user 0 with
    ``x_1 = 1`` and reward ``-R`` has residual ``C + R``; its other coordinates are +-1 with opposite signs in the two
    episodes, so coordinates 1..d-1 of the step move by exactly Delta, half up and half down (the competing
    coordinates the non-monotone pick must separate). The other users hold every ``|v_j|`` near ``level``: 20 rows
    ``e_1`` lower v_0, 19 rows ``(0, 1, ..., 1)`` lift the rest. Returns (X_A, X_B, y, start, w) with ``w`` the
    statistic's weights: +1 where episode A's step is higher, -1 where lower."""
    cfg = agent.niht_config
    C, R, eta, d = cfg.radius, cfg.reward_high, cfg.step, agent.dim
    n_p, n_q = 20, n - 21
    y_p = C - ((C - level) * n / eta - (C + R)) / n_p
    y_q = level * n / eta / n_q
    assert max(abs(y_p), abs(y_q)) <= R
    X = np.zeros((n, d))
    X[1:1 + n_p, 0] = 1.0
    X[1 + n_p:, 1:] = 1.0
    y = np.r_[-R, np.full(n_p, y_p), np.full(n_q, y_q)]
    half = (d - 1) // 2
    sign = np.r_[1.0, np.ones(half), -np.ones(d - 1 - half)]
    XA, XB = X.copy(), X.copy()
    XA[0], XB[0] = sign, -sign
    XB[0, 0] = 1.0
    start = np.zeros(d)
    start[0] = C
    w = -sign
    w[0] = 0.0
    return XA, XB, y, start, w


@pytest.mark.parametrize("factor, caught", [(1.0, False), (PLANTED, True)])
def test_audit_at_a_public_iterate_on_the_boundary(factor, caught):
    """Shared structure, default calibration (C = 1, clip [-1.4, 1.4], s = 1, (1, 0.01)): one N-IHT step from the
    public iterate ``C e_1`` on the boundary pair (:func:`_boundary_pair`), the statistic the released step on the
    competing coordinates weighted by w. The calibrated noise reads about 0.15-0.17 (5000 samples), the planted x 0.25
    about 1.42-1.47: caught (docs/auditor.md, "Audit where the sensitivity is reached")."""
    c = _episode_env("shared").unwrapped.constants
    agent = FLIPHAT(c, epsilon=1.0, delta=0.01, sparsity=1)
    XA, XB, y, start, w = _boundary_pair(agent)
    cfg, n = agent.niht_config, len(y)

    def step(X):
        return start - cfg.step / n * X.T @ (X @ start - y)

    moved = np.abs(step(XA) - step(XB))[1:]  # the full sensitivity on every competing coordinate
    assert moved == pytest.approx(np.full(agent.dim - 1, cfg.sensitivity(n)))

    def mechanism(X, rng, k):
        return np.array([niht(X, y, n, cfg, agent.rho_fit, rng, scale_factor=factor, start=start).theta @ w
                         for _ in range(k)])

    result = audit(mechanism, XA, XB, n_samples=5000, delta=0.01, rng=stream(5, "privacy"))
    assert result.violates(1.0) is caught, str(result)


def _pick_probability(gap: float, b: float) -> float:
    """P(Laplace noisy max picks coordinate 0) for two scores with |v_0| - |v_1| = gap (difference of two iid
    Laplace(b) variables)."""
    a = abs(gap)
    p = 1.0 - 0.5 * math.exp(-a / b) * (1.0 + a / (2.0 * b))
    return p if gap >= 0 else 1.0 - p


@pytest.mark.parametrize("cls, caught", [(FLIPHAT, False), (Planted, True)])
def test_audit_user_moved_between_arms_disjoint(cls, caught):
    """Disjoint structure, d = 2, s = 1: user 0 (context (1, -1), reward 2) plays arm 0 or arm 1; 40 users with context
    (1, 1) split evenly. A move is an add/remove on two fits (Delta/2 each) plus a count change, a weaker neighbour
    than a replacement, so the audit uses the white-box log-likelihood ratio of the release (both arms' picks and
    values, normalised by the released noisy counts) as its statistic. Fits calibrated to ||theta^0||_1 = 0 (tight)."""
    c = GLMBanditEnv(n_arms=2, dim=2, horizon=2000, structure="disjoint", context_norm="linf", context_bound=1.0,
                     normalize="clip", sparsity=1).unwrapped.constants
    n = 41
    X = np.ones((n, 2))
    X[0] = [1.0, -1.0]
    rewards = np.full(n, 2.0)
    arms_a = np.arange(n) % 2
    arms_b = arms_a.copy()
    arms_b[0] = 1
    agent = cls(c, epsilon=1.0, delta=0.01, sparsity=1, radius=100.0, reward_bound=2.0, min_count=1.0,
                iterate_sensitivity=True)
    config = agent.niht_config
    sums = {key: np.array([X[arms == k].T @ rewards[arms == k] for k in range(2)])
            for key, arms in (("A", arms_a), ("B", arms_b))}

    def log_likelihood_ratio(release):
        total = 0.0
        for k in range(2):
            n_tilde = release.counts[k]
            b = (PLANTED if cls is Planted else 1.0) * peeling_scale(config.sensitivity(n_tilde, 0.0), 1, agent.rho_fit)
            j = int(np.flatnonzero(release.theta[k])[0])
            u = release.theta[k, j]
            v_a, v_b = config.step / n_tilde * sums["A"][k], config.step / n_tilde * sums["B"][k]
            p_a, p_b = (_pick_probability(abs(v[0]) - abs(v[1]), b) for v in (v_a, v_b))
            if j == 1:
                p_a, p_b = 1.0 - p_a, 1.0 - p_b
            total += math.log(p_a / p_b) + (abs(u - v_b[j]) - abs(u - v_a[j])) / b
        return total

    def mechanism(data, rng, k):
        return np.array([log_likelihood_ratio(agent._make_curator(rng)._publish(*data)) for _ in range(k)])

    result = audit(mechanism, (X, arms_a, rewards), (X, arms_b, rewards), n_samples=4000, delta=0.01,
                   rng=stream(6, "privacy"))
    assert result.violates(1.0) is caught, str(result)
