"""support_ridge's noise-off greedy form (dpbandit/agents/support_greedy.py; docs/episodic-agents.md §8.7): its release
after n users is the stated computation on all n users (supports: the s' largest |sum clip(x, +-tau) (y - c)| per
model, ties by index; ridge on them), its action rule, its refusals and report; private runs unchanged by it (their
arms pinned from the code before it, and the same whatever noise_off_form)."""

from __future__ import annotations

import hashlib
import math

import gymnasium
import numpy as np
import pytest

import dpbandit  # noqa: F401  (registers the environments)
from dpbandit.agents import make_agent
from dpbandit.agents.support_greedy import CHUNK_ROWS
from dpbandit.agents.support_ridge import SupportRidge
from dpbandit.envs.constants import BanditConstants
from dpbandit.experiment.checks import check_agent
from dpbandit.experiment.runner import simulate


def constants(K=3, d=12, T=1500, s=2, structure="disjoint"):
    return BanditConstants(
        n_arms=K, dim=d, horizon=T, structure=structure, link="logistic", context_norm="linf", context_bound=1.0,
        theta_norm="l1", theta_bound=3.0, sparsity=s, noise_std=0.0, reward_low=0.0, reward_high=1.0,
        mean_low=0.0, mean_high=1.0,
    )


def stated_release(X, models, y, M, s, tau, ridge, centre):
    """The module docstring's computation from scratch on all users so far: per model, the s' largest |v_j| (ties
    by index, by a Python sort), then ridge on those coordinates of the model's rows."""
    y = np.clip(y, 0.0, 1.0)  # the reward clip [lo, hi] = [0, 1], c = 1/2
    supports, thetas = [], []
    for m in range(M):
        mine = models == m
        v = (np.clip(X[mine], -tau, tau) * (y[mine] - 0.5)[:, None]).sum(axis=0)
        S = sorted(sorted(range(X.shape[1]), key=lambda j: (-abs(v[j]), j))[:s])
        Z = X[mine][:, S]
        target = y[mine] - 0.5 if centre else y[mine]
        supports.append(S)
        thetas.append(np.linalg.solve(Z.T @ Z + ridge * np.eye(s), Z.T @ target))
    return np.array(supports), np.array(thetas)


@pytest.mark.parametrize("structure, ridge_params", [("disjoint", {}), ("shared", {}),
                                                     ("disjoint", {"ridge": 2.5, "centre": False})])
def test_release_after_n_users_is_ridge_on_the_top_marginal_correlations_of_all_n_users(structure, ridge_params):
    K, d, T = 3, 12, 1500
    agent = SupportRidge(constants(K, d, T, structure=structure), epsilon=math.inf, ridge_params=ridge_params)
    s, tau = agent.selection.support_size, agent.selection.entry_clip
    assert s == 4 and tau < 1.0 and agent.greedy and agent.estimator is None
    M = K if structure == "disjoint" else 1
    rng = np.random.default_rng(5)
    obs = rng.uniform(-1, 1, (T, K, d))
    arms = rng.integers(0, K, T)
    y = np.where(rng.random(T) < 0.05, 1.7, (rng.random(T) < 0.5).astype(float))  # some rewards beyond the clip
    X = obs[np.arange(T), arms]
    models = arms if M > 1 else np.zeros(T, dtype=int)
    cur = agent._make_curator(np.random.default_rng(0))
    first = cur.release()
    np.testing.assert_array_equal(first.support, np.tile(np.arange(s), (M, 1)))  # no data: the first s', theta 0
    assert not first.ridge.theta.any()
    checkpoints = {1, 7, 300, 3 * CHUNK_ROWS + 5, T}  # past the chunk size for every model (Gram matrices absorbed)
    for t in range(T):
        cur.observe(obs[t], arms[t], y[t])
        if t + 1 in checkpoints:
            release = cur.release()
            support, theta = stated_release(X[: t + 1], models[: t + 1], y[: t + 1], M, s, tau,
                                            ridge_params.get("ridge", 1.0), ridge_params.get("centre", True))
            np.testing.assert_array_equal(release.support, support)
            np.testing.assert_allclose(release.ridge.theta, theta, rtol=1e-10, atol=1e-12)
            assert not release.support.flags.writeable and not release.ridge.theta.flags.writeable
            # the action rule: greedy on the projected rows (no row clip, no ties here)
            o = rng.uniform(-1, 1, (K, d))
            scores = [o[a, support[a if M > 1 else 0]] @ theta[a if M > 1 else 0] for a in range(K)]
            assert SupportRidge.action_rule(release, o, np.random.default_rng(1)) == int(np.argmax(scores))
    with pytest.raises(ValueError, match="horizon T = 1500"):
        cur.observe(obs[0], 0, 1.0)


def test_greedy_form_conforms_reports_no_guarantee_and_plays_uniformly_before_any_data():
    env = gymnasium.make("dpbandit/SparseLogistic-v0", n_arms=3, dim=20, horizon=80)
    agent = make_agent("support_ridge", env, epsilon=math.inf)
    check_agent(agent, env, n_rounds=60)
    report = agent.privacy_report()
    assert report.guarantee == "none" and "greedy form" in report.events[0]["mechanism"]
    assert agent.memory_estimate() == 8 * 3 * (20 * 20 + 2 * 20 + CHUNK_ROWS * 20 + 1)
    agent.reset(0)
    o = np.random.default_rng(2).uniform(-1, 1, (3, 20))
    arms = [SupportRidge.action_rule(agent.release, o, np.random.default_rng(i)) for i in range(600)]
    assert min(np.bincount(arms, minlength=3)) > 150  # theta = 0: every arm ties
    staged = make_agent("support_ridge", env, epsilon=math.inf, noise_off_form="staged")
    assert staged.privacy_report().guarantee == "none" and not staged.greedy


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(noise_off_form="eager"), ValueError, "noise_off_form"),
    (dict(selection_users=10), ValueError, "selection_users configure support_ridge's two stages"),
    (dict(ridge_params={"first_episode": 3, "mode": "forget"}), ValueError,
     "first_episode, mode configure support_ridge's two stages.*noise_off_form='staged'"),
    (dict(ridge_params={"ridge": 0.0}), ValueError, "ridge_params ridge"),
    (dict(ridge_params={"centre": 1}), TypeError, "ridge_params centre must be a bool"),
    (dict(ridge_params={"epsilon": 1.0}), ValueError, "may not set 'epsilon'"),
])
def test_refusals_of_the_greedy_form_name_the_parameter_in_one_line(kwargs, error, match):
    with pytest.raises(error, match=match) as info:
        SupportRidge(constants(), epsilon=math.inf, **kwargs)
    assert "\n" not in str(info.value)
    if "noise_off_form" not in kwargs:  # the staged form and private runs accept them
        SupportRidge(constants(), epsilon=math.inf, noise_off_form="staged", **{**kwargs, "ridge_params": {}})


def _arms(env, params, seed):
    agent = make_agent("support_ridge", env, **params)
    obs, _ = env.reset(seed=seed)
    agent.reset(seed)
    arms, regret = [], 0.0
    for _ in range(env.unwrapped.constants.horizon):
        arm = agent.act(obs)
        obs_next, reward, _, _, info = env.step(arm)
        agent.update(obs, arm, reward, info)
        arms.append(arm)
        regret += info["regret"]
        obs = obs_next
    return hashlib.sha256(np.asarray(arms, dtype=np.int64).tobytes()).hexdigest()[:16], regret


#: Private runs: (environment, parameters, seed) -> (digest of the arms, final regret), measured on the code before
#: the greedy form (commit b2cb178): the form must leave them bit for bit.
PRIVATE_RUNS = [
    (dict(id="dpbandit/SparseLogistic-v0", n_arms=3, dim=40, contexts="ar", rho=0.5, horizon=1500),
     dict(epsilon=4.0, selection_users=300, support_size=8), 0, ("1c350c8f17121209", 124.61175903626487)),
    (dict(id="dpbandit/GLMBandit-v0", n_arms=2, dim=20, structure="shared", theta="sparse", sparsity=2,
          theta_norm="l1", theta_bound=1.0, horizon=1200),
     dict(epsilon=1.0, selection_users=200), 1, ("daadc54e8ddedb0a", 103.39327072113346)),
]


@pytest.mark.parametrize("env_kwargs, params, seed, pinned", PRIVATE_RUNS)
def test_private_runs_are_bit_identical_to_the_code_before_the_greedy_form(env_kwargs, params, seed, pinned):
    env = gymnasium.make(**env_kwargs)
    assert _arms(env, params, seed) == pinned
    frames = [simulate(env, make_agent("support_ridge", env, **params, noise_off_form=form), seed)
              for form in ("greedy", "staged")]
    assert frames[0].equals(frames[1])  # noise_off_form does not touch a private run
