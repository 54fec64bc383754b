"""DP-HDB (spec/han-frank-wolfe.md §6): noise-off regret against random play, the JDP report, the curator / action
rule split (structural), the synthetic update, the warm-up and pre-selection, the two-stream audit, bad inputs.
"""

from __future__ import annotations

import dataclasses
import inspect
import math

import gymnasium
import numpy as np
import pytest

import dpbandit.envs  # noqa: F401  (registers the dpbandit/ ids)
from dpbandit.agents import AGENTS, make_agent
from dpbandit.agents.baselines import UniformRandom
from dpbandit.agents.dp_hdb import DPHDB, HDBCurator, HDBRelease, warmup_length
from dpbandit.agents.private import PrivateAgent
from dpbandit.experiment.runner import simulate
from dpbandit.optim.losses import LogisticLoss, SquaredLoss
from dpbandit.optim.pofw import DPPOFWBatch
from dpbandit.privacy.audit import audit
from dpbandit.privacy.calibrate import zcdp_rho_for
from dpbandit.seeding import stream


def figure_env(K: int = 2, **kwargs):
    return gymnasium.make(f"dpbandit/HanFigure51-K{K}-v0", **kwargs)


def constants(K: int = 2, **kwargs):
    return figure_env(K, **kwargs).unwrapped.constants


def play(env, agent, seed: int, rounds: int | None = None):
    """The protocol loop; returns (actions, releases seen by the action rule, cumulative regret)."""
    obs, _ = env.reset(seed=seed)
    agent.reset(seed)
    actions, releases, regret = [], [], 0.0
    for _ in range(rounds or env.unwrapped.constants.horizon):
        releases.append(agent._release)
        arm = agent.act(obs)
        obs_next, reward, _, _, info = env.step(arm)
        agent.update(obs, arm, reward, info)
        actions.append(arm)
        regret += info["regret"]
        obs = obs_next
    return actions, releases, regret


# --------------------------------------------------------------------------------------------------------------
# Regret: the noise-off requirement at full scale (T = 1e4, d = 50, K = 2)
# --------------------------------------------------------------------------------------------------------------


def test_noise_off_regret_is_below_30_percent_of_random_play():
    env = figure_env(2)  # T = 1e4, d = 50: the Figure 5.1 environment
    c = env.unwrapped.constants
    assert (c.horizon, c.dim, c.n_arms) == (10_000, 50, 2)
    ratios = []
    for seed in (0, 1):
        hdb = simulate(env, DPHDB(c, epsilon=math.inf), seed, checkpoints=10)["cumulative_regret"].iloc[-1]
        rand = simulate(env, UniformRandom(c), seed, checkpoints=10)["cumulative_regret"].iloc[-1]
        ratios.append(hdb / rand)
    assert np.mean(ratios) < 0.30, ratios  # measured 0.04-0.08


def test_private_runs_are_reproducible_and_seed_dependent():
    env = figure_env(2, horizon=600)
    c = env.unwrapped.constants
    agent = DPHDB(c, epsilon=2.0)
    first = play(env, agent, 3)[0]
    assert play(env, agent, 3)[0] == first
    assert play(env, DPHDB(c, epsilon=2.0), 3)[0] == first
    assert play(env, agent, 4)[0] != first


# --------------------------------------------------------------------------------------------------------------
# JDP report
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon, delta, form", [(1.0, None, "gumbel"), (4.0, 1e-6, "laplace"), (0.5, 1e-3, "gumbel")])
def test_report_states_the_configured_epsilon_delta(epsilon, delta, form):
    c = constants(2)
    agent = DPHDB(c, epsilon=epsilon, delta=delta, form=form)
    report = agent.privacy_report()
    expected_delta = 1.0 / c.horizon if delta is None else delta
    assert report.guarantee == "JDP" and report.delta == expected_delta
    assert report.epsilon == pytest.approx(epsilon, rel=1e-9) and report.epsilon <= epsilon * (1 + 1e-12)
    assert report.rho == pytest.approx(zcdp_rho_for(epsilon, expected_delta), rel=1e-12)
    assert report.privacy_unit.startswith("one user") and report.neighboring == "replace-one"
    assert "E6" in report.events[0]["bound"] and "billboard" in report.note
    text = report.sensitivity_assumption
    assert "||x||_inf <= 1" in text and "b = 1" in text
    assert "rewards clipped to [-1.2, 1.2] (unbounded Gaussian rewards: mean bounds -/+ 4 noise_std" in text


def test_report_is_per_run_and_noise_off_has_no_guarantee():
    agent = DPHDB(constants(2, horizon=200), epsilon=math.inf)
    report = agent.privacy_report()
    assert report.guarantee == "none" and report.epsilon == math.inf
    env = figure_env(2, horizon=200)
    play(env, agent, 0)
    assert agent.privacy_report() == report  # the calibration fixes the guarantee up front (fixed T)


def test_report_through_the_registry_and_runner_manifest():
    env = figure_env(5, horizon=300)
    agent = make_agent("dp_hdb", env, epsilon=1.0, delta=1e-5)
    assert isinstance(agent, DPHDB) and AGENTS["dp_hdb"] is DPHDB and DPHDB.private
    frame = simulate(env, agent, 0, checkpoints=5)
    assert frame["t"].iloc[-1] == 300
    assert agent.privacy_report().to_dict()["guarantee"] == "JDP"


# --------------------------------------------------------------------------------------------------------------
# Curator / action rule: the action rule cannot read other users' data (structural)
# --------------------------------------------------------------------------------------------------------------


def test_action_rule_is_a_static_function_of_release_observation_rng():
    rule = inspect.getattr_static(DPHDB, "action_rule")
    assert isinstance(rule, staticmethod)
    assert list(inspect.signature(DPHDB.action_rule).parameters) == ["release", "observation", "rng"]
    names = inspect.getclosurevars(DPHDB.action_rule)
    assert not names.nonlocals  # no captured state
    assert set(names.globals) <= {"np", "greedy_index", "argmax_random_tie"}, names.globals  # no curator, agent, history
    assert issubclass(DPHDB, PrivateAgent)
    with pytest.raises(TypeError, match="must be a @staticmethod"):
        type("Leaky", (DPHDB,), {"action_rule": lambda self, release, observation, rng: 0})


def test_release_holds_only_published_read_only_arrays():
    env = figure_env(2, horizon=400)
    agent = DPHDB(env.unwrapped.constants, epsilon=1.0, warmup=50)
    _, releases, _ = play(env, agent, 0, rounds=200)
    release = agent._release
    assert {f.name for f in dataclasses.fields(HDBRelease)} == {"round", "theta", "theta_forced", "warmup_rounds",
                                                               "h", "link"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        release.theta = None
    for array in (release.theta, release.theta_forced):
        assert not array.flags.writeable
        with pytest.raises(ValueError):
            array[0, 0] = 1.0
        for state in (agent.curator.learners.S, agent.curator.learners.V):
            assert not np.shares_memory(array, state)
    old = releases[150]
    kept = old.theta.copy()
    play(env, agent, 0, rounds=10)  # the curator moves on; a published release never changes
    np.testing.assert_array_equal(old.theta, kept)


def test_action_depends_only_on_the_release_and_own_observation():
    """Two curators with different histories that publish the same release give the same action (same rng)."""
    K = 3
    theta = np.array([[0.1, 0, 0, 0], [0, 0.2, 0, 0], [0, 0, 0, 0.3]])
    forced = np.array([[0.5, 0, 0, 0], [0, 0.1, 0, 0], [0, 0, 0, 0.0]])
    release = HDBRelease(round=100, theta=theta, theta_forced=forced, warmup_rounds=30, h=0.6, link="identity")
    obs = np.tile(np.array([1.0, 1.0, 0.0, 1.0]), (K, 1))
    # forced means 0.5, 0.1, 0.0 with h/2 = 0.3: arm 0 only -> arm 0, although arm 2 has the best all-sample score
    assert DPHDB.action_rule(release, obs, stream(0, "exploration")) == 0
    wide = dataclasses.replace(release, h=2.0)  # every arm pre-selected -> greedy on theta: arm 2
    assert DPHDB.action_rule(wide, obs, stream(0, "exploration")) == 2
    warm = dataclasses.replace(release, round=7, theta_forced=None)
    assert DPHDB.action_rule(warm, obs, stream(0, "exploration")) == 7 % K  # round robin


def test_logistic_pre_selection_uses_the_mean_scale():
    theta = np.array([[0.0, 0.0], [0.0, 0.0]])
    forced = np.array([[4.0, 0.0], [3.0, 0.0]])  # logits 4 and 3: means 0.982 and 0.953, 0.03 apart
    release = HDBRelease(round=50, theta=theta + [[0, 0], [1, 0]], theta_forced=forced, warmup_rounds=2, h=0.1,
                         link="logistic")
    obs = np.ones((2, 2))
    assert DPHDB.action_rule(release, obs, stream(0, "exploration")) == 1  # within h/2 in mean units
    assert DPHDB.action_rule(dataclasses.replace(release, link="identity"), obs, stream(0, "exploration")) == 0


# --------------------------------------------------------------------------------------------------------------
# Warm-up, frozen forced-sample estimators, synthetic update
# --------------------------------------------------------------------------------------------------------------


def test_warmup_length_matches_the_published_code():
    assert warmup_length(50, 10_000, 2, 1.0) == 120  # spec/han-frank-wolfe.md §6
    assert warmup_length(50, 10_000, 2, math.inf) == 1
    assert warmup_length(50, 1000, 5, 0.1) == 200  # capped at T // K
    assert DPHDB(constants(2), epsilon=1.0).warmup_rounds == 240


def test_warmup_round_robin_then_frozen_forced_estimators():
    env = figure_env(5, horizon=500)
    agent = DPHDB(env.unwrapped.constants, epsilon=2.0, warmup=20)
    actions, releases, _ = play(env, agent, 1)
    assert actions[:100] == [t % 5 for t in range(100)]
    assert all(r.theta_forced is None for r in releases[:100])
    frozen = releases[100].theta_forced
    np.testing.assert_array_equal(frozen, releases[100].theta)  # the iterates after the warm-up
    assert all(r.theta_forced is frozen for r in releases[100:])
    assert not np.array_equal(releases[-1].theta, frozen)  # the all-sample estimators keep learning


def test_synthetic_update_steps_every_arm_every_round():
    env = figure_env(5, horizon=60)
    agent = DPHDB(env.unwrapped.constants, epsilon=1.0, warmup=4)
    obs, _ = env.reset(seed=0)
    agent.reset(0)
    learners = agent.curator.learners
    for t in range(1, 31):
        arm = agent.act(obs)
        S_before, V_before = learners.S.copy(), learners.V.copy()
        obs_next, reward, _, _, info = env.step(arm)
        agent.update(obs, arm, reward, info)
        others = np.arange(5) != arm
        np.testing.assert_array_equal(learners.S[others], S_before[others])  # zero samples: zero gradient
        assert learners.t == t and agent.curator.round == t
        step = learners.V - V_before  # every arm's learner selected one vertex +-r e_j this round
        assert np.all(np.count_nonzero(step, axis=1) == 1)
        np.testing.assert_allclose(np.abs(step).sum(axis=1), learners.radius)
        obs = obs_next


def test_rewards_are_clipped_to_the_stated_range():
    """The private agents' one rule (agents/private.py reward_clip_range), stated in the report."""
    c = constants(2, horizon=50)
    agent = DPHDB(c, epsilon=1.0)
    assert agent.reward_range == pytest.approx((-1.2, 1.2))  # mean bound 1 +- 4 noise_std (0.05)
    assert agent.lipschitz == pytest.approx(2.2)  # |x.theta - y| <= b x_max + 1.2
    x = np.zeros((2, 50))
    x[:, 0] = 1.0
    agent.update(x, 0, 1e9, {})  # clipped to 1.2: finite gradient, clip not even needed
    g = agent.curator.learners.S[0, 0]
    assert g == pytest.approx(-1.2)  # t = 1: g_1 = grad f(0) = (0 - 1.2) x
    bounded = DPHDB(constants(2, horizon=50, reward_clip=0.5), epsilon=1.0)
    assert bounded.reward_range == (-0.5, 0.5)
    assert "(the environment's reward range)" in bounded.privacy_report().sensitivity_assumption
    override = DPHDB(c, epsilon=1.0, reward_bound=2.0)
    assert override.reward_range == (-2.0, 2.0)
    assert "[-2, 2] (reward_bound = 2)" in override.privacy_report().sensitivity_assumption
    with pytest.raises(ValueError, match="reward_bound"):
        DPHDB(c, epsilon=1.0, reward_bound=0.0)


def test_logistic_link_uses_the_logistic_glm_loss():
    env = gymnasium.make("dpbandit/SparseLogistic-v0", horizon=300)
    agent = make_agent("dp_hdb", env, epsilon=2.0)
    assert isinstance(agent.loss, LogisticLoss) and agent.reward_range == (0.0, 1.0)
    assert agent.radius == 3.0 and agent.lipschitz == pytest.approx(1 / (1 + math.exp(-3.0)))
    assert isinstance(DPHDB(constants(2), epsilon=1.0).loss, SquaredLoss)
    actions, _, _ = play(env, agent, 0)
    assert set(actions) == set(range(5))


# --------------------------------------------------------------------------------------------------------------
# The two-stream case (spec/han-frank-wolfe.md §6, spec/errata.md E6): audit of the billboard
# --------------------------------------------------------------------------------------------------------------

T_AUDIT, DELTA_AUDIT = 12, 1e-3


def two_arm_billboard(noise_divisor: float = 1.0):
    """Neighbouring users: A sends its datum (x = 1, y = -1000) to arm 0, B a different datum (y = +1000) to arm 1
    (their contexts decide the arm); then zero samples for both arms (the synthetic update). Output: the signs of
    both arms' selected vertices (d = 1), n billboards at once (rows 2i, 2i+1 are copy i's arms 0 and 1).
    ``noise_divisor`` > 1 is a deliberately under-noised version built here in the test."""

    def mechanism(arm_a, generator, n):
        learners = DPPOFWBatch(2 * n, 1, T_AUDIT, epsilon=1.0, delta=DELTA_AUDIT, lipschitz=1.0,
                               loss=SquaredLoss(0.01), rng=generator)
        if noise_divisor != 1.0:
            cal = learners.calibration
            learners.calibration = dataclasses.replace(cal, coefficient=cal.coefficient / noise_divisor)
        X, y = np.zeros((2 * n, 1)), np.zeros(2 * n)
        X[arm_a::2] = 1.0
        y[arm_a::2] = -1000.0 if arm_a == 0 else 1000.0
        signs, previous = np.empty((2 * n, T_AUDIT)), np.zeros(2 * n)
        for t in range(1, T_AUDIT + 1):
            learners.update(X if t == 1 else np.zeros_like(X), y if t == 1 else np.zeros_like(y))
            current = learners.predict()[:, 0] * (t + 1)
            signs[:, t - 1] = np.sign(current - previous)
            previous = current
        return signs.reshape(n, 2 * T_AUDIT)

    return mechanism


def billboard_statistic(signs: np.ndarray) -> np.ndarray:
    w = 1.0 / np.sqrt(np.arange(2, T_AUDIT + 2))  # LLR up to scale: from A to B both arms shift towards "+"
    return signs[:, :T_AUDIT] @ w + signs[:, T_AUDIT:] @ w


@pytest.mark.parametrize("divisor, caught, seed", [(1.0, False, 31), (5.0, True, 32)])
def test_two_stream_billboard_audit(divisor, caught, seed):
    claimed = 1.0  # every arm calibrated at the full (1, 1e-3): E6's resolution claims (1, 1e-3)-JDP
    result = audit(two_arm_billboard(divisor), 0, 1, n_samples=150_000, delta=DELTA_AUDIT, rng=stream(seed, "privacy"),
                   statistic=billboard_statistic, confidence=1 - 1e-6)
    assert result.violates(claimed) is caught, str(result)


# --------------------------------------------------------------------------------------------------------------
# Bad inputs
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "params, error, match",
    [
        ({"epsilon": 0.0}, ValueError, "epsilon must be a number > 0"),
        ({"epsilon": -1.0}, ValueError, "epsilon must be a number > 0"),
        ({"epsilon": float("nan")}, ValueError, "epsilon must be a number > 0, got nan"),
        ({"delta": 0.0}, ValueError, r"delta must be a finite number in \(0, 1\)"),
        ({"delta": 1.0}, ValueError, r"delta must be a finite number in \(0, 1\)"),
        ({"delta": 1.5}, ValueError, r"delta must be a finite number in \(0, 1\)"),
        ({"horizon": 5000}, ValueError, "horizon=5000 does not match the environment's horizon T=10000"),
        ({"h": 0.0}, ValueError, "h must be a finite number > 0"),
        ({"radius": -1.0}, ValueError, "radius must be a finite number > 0"),
        ({"warmup": 6000}, ValueError, r"warmup must be an integer in \[0, 5000\]"),
        ({"reward_bound": 0.0}, ValueError, "reward_bound must be a finite number > 0"),
        ({"form": "gauss"}, ValueError, "form must be one of"),
        ({"epsilon": "1"}, TypeError, "epsilon must be a real number"),
    ],
)
def test_invalid_hyperparameters_raise_before_any_work(params, error, match):
    with pytest.raises(error, match=match):
        make_agent("dp_hdb", figure_env(2), **params)


def test_matching_horizon_is_accepted():
    assert DPHDB(constants(2), horizon=10_000).constants.horizon == 10_000


def test_unsupported_environments_are_refused():
    with pytest.raises(ValueError, match="disjoint structure"):
        make_agent("dp_hdb", gymnasium.make("dpbandit/SharedLinear-v0"))
    with pytest.raises(ValueError, match="links .*'probit'"):
        make_agent("dp_hdb", gymnasium.make("dpbandit/SparseProbit-v0"))


def test_contexts_exceeding_the_declared_bound_raise():
    c = constants(2, horizon=100)
    agent = DPHDB(c, epsilon=1.0)
    obs = np.zeros((2, 50))
    obs[1, 3] = 1.5  # the played row exceeds ||x||_inf <= 1
    with pytest.raises(ValueError, match="context_bound = 1"):
        agent.update(obs, 1, 0.1, {})
    assert agent.curator.round == 0 and agent.curator.learners.t == 0
    with pytest.raises(ValueError, match="observation must have shape"):
        agent.update(np.zeros((3, 50)), 0, 0.1, {})
    with pytest.raises(ValueError, match="arm must be an integer"):
        agent.update(np.zeros((2, 50)), 2, 0.1, {})
    with pytest.raises(ValueError, match="reward must be a number"):
        agent.update(np.zeros((2, 50)), 0, float("nan"), {})


def test_more_rounds_than_the_calibrated_horizon_raise():
    c = constants(2, horizon=3)
    agent = DPHDB(c, epsilon=1.0)
    for _ in range(3):
        agent.update(np.zeros((2, 50)), 0, 0.0, {})
    with pytest.raises(ValueError, match="calibrated for horizon=3"):
        agent.update(np.zeros((2, 50)), 0, 0.0, {})


def test_curator_is_built_from_the_privacy_stream():
    c = constants(2, horizon=50)
    agent = DPHDB(c, epsilon=1.0)
    assert isinstance(agent.curator, HDBCurator)
    agent.reset(7)
    first = agent.curator.learners.rng.random()
    assert first == stream(7, "privacy").random()


@pytest.mark.parametrize("logistic", [False, True])
def test_greedy_index_is_the_h_over_2_preselection_then_greedy(logistic):
    """The compiled action rule against its formula: candidates within h/2 of the best forced-sample mean, then the
    largest all-sample score among them (-inf elsewhere); NaN scores are refused by the caller (ties = 0)."""
    from scipy.special import expit

    from dpbandit.agents.dp_hdb import greedy_index

    rng = np.random.default_rng(3)
    for _ in range(50):
        K, d = int(rng.integers(2, 8)), int(rng.integers(1, 40))
        X, forced, theta = rng.normal(size=(K, d)), rng.normal(size=(K, d)), rng.normal(size=(K, d))
        h = float(rng.uniform(0.0, 3.0))
        out = np.empty(K)
        best, ties = greedy_index(X, forced, theta, 1.0, h, logistic, out)
        sums, over, quotients = theta * 7.0, np.empty(K), np.empty(K)  # vertex sums and t + 1: the release's bits
        assert greedy_index(X, forced, sums, 7.0, h, logistic, over) == greedy_index(X, forced, sums / 7.0, 1.0, h,
                                                                                     logistic, quotients)
        assert np.array_equal(over, quotients)
        mean = np.einsum("kd,kd->k", X, forced)
        mean = expit(mean) if logistic else mean
        expected = np.where(mean >= mean.max() - h / 2, np.einsum("kd,kd->k", X, theta), -np.inf)
        np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
        assert best == int(np.argmax(out)) and ties == 1
    X[0, 0] = np.nan
    assert greedy_index(X, forced, theta, 1.0, 1.0, logistic, out)[1] != 1


def test_greedy_index_refuses_mismatched_shapes():
    from dpbandit.agents.dp_hdb import greedy_index

    X = np.zeros((3, 4))
    with pytest.raises(ValueError, match="share one"):
        greedy_index(X, np.zeros((3, 5)), X, 1.0, 1.0, False, np.empty(3))
