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
from dpbandit.agents.fliphat import FLIPHAT
from dpbandit.envs.glm import GLMBanditEnv
from dpbandit.experiment.checks import check_agent, check_private_agent
from dpbandit.optim.gg_calibration import PublishedSettingWarning
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


class Planted(FLIPHAT):
    """The D-F1 calibration planted: every peeling scale x 1/(4 x_max) = 0.25 (x_max = 1)."""

    _scale_factor = 0.25


def _release_mechanism(cls, constants, statistic, **params):
    """One episode's release as a mechanism of the episode's (X, arms, rewards): the curator's ``_publish`` (the
    counts and fits it runs when an episode ends), called directly so that thousands of releases stay cheap."""
    agent = cls(constants, epsilon=1.0, delta=0.01, sparsity=1, radius=0.05, reward_bound=2.0, **params)

    def mechanism(data, rng, k):
        X, arms, rewards = data
        out = np.empty(k)
        for i in range(k):
            out[i] = statistic(agent._make_curator(rng)._publish(X, arms, rewards).theta)
        return out

    return mechanism


def _adversarial_row(d=10):
    return np.concatenate([[1.0], -np.ones(d - 1)])  # raises coordinate 0 of the step, lowers every other one


@pytest.mark.parametrize("cls, caught", [(FLIPHAT, False), (Planted, True)])
def test_audit_context_change_shared(cls, caught):
    """Shared structure: user 0's played row is x or -x (reward 2 = the clip); the other 39 rows are all-ones."""
    c = _episode_env("shared").unwrapped.constants
    n, x = 40, _adversarial_row()
    X = np.ones((n, 10))
    XA, XB = X.copy(), X.copy()
    XA[0], XB[0] = x, -x
    arms, rewards = np.zeros(n, dtype=np.int64), np.full(n, 2.0)
    mech = _release_mechanism(cls, c, lambda theta: theta[0])
    result = audit(mech, (XA, arms, rewards), (XB, arms, rewards), n_samples=5000, delta=0.01,
                   rng=stream(5, "privacy"))
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
            b = cls._scale_factor * peeling_scale(config.sensitivity(n_tilde, 0.0), 1, agent.rho_fit)
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
