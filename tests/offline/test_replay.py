"""Offline evaluation: replay recovers simulated rewards; IPS and DR against the known truth; the CLI."""

import math

import gymnasium
import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpbandit.envs  # noqa: F401
from dpbandit.agents import make_agent
from dpbandit.agents.base import Agent
from dpbandit.experiment.cli import main
from dpbandit.experiment.runner import simulate
from dpbandit.offline import OFFLINE_PRIVACY_SCOPE, LoggedData, ReplayEnv, evaluate_offline, log_policy
from dpbandit.offline.replay import ESTIMATORS

K, T, SEEDS = 3, 300, 10
ENV = dict(n_arms=K, dim=5, sparsity=2, instance_seed=0)
AGENTS = [("random", {}), ("egreedy", {}), ("linucb", {"alpha": 0.5}), ("dp_ucb", {"epsilon": 1.0})]


def _replay_env(data, horizon=T):
    return ReplayEnv.from_logged(data, horizon, context_norm="linf", context_bound=1.0, reward_range=(0, 1),
                                 theta_norm="l1", theta_bound=3.0)  # the simulator's public constants


@pytest.fixture(scope="module")
def logs():
    env = gymnasium.make("dpbandit/SparseLogistic-v0", horizon=10 * K * T, **ENV)
    return [log_policy(env, int(1.6 * K * T), seed=100 + s) for s in range(SEEDS)]


def test_replay_of_uniform_logs_recovers_every_agents_simulated_reward(logs):
    """Li et al. (2011): replay on uniformly logged data is distributed as an online run. Per agent, the mean
    reward per round over T rounds online (10 seeds) and by replay (10 independent logs) agree: the 99% Welch
    interval of their difference contains 0 and is narrow (< 0.07 per round), and replay separates LinUCB from
    random play."""
    env = gymnasium.make("dpbandit/SparseLogistic-v0", horizon=T, **ENV)
    replayed = {}
    for name, params in AGENTS:
        online = np.array([simulate(env, make_agent(name, env, **params), seed=s)["cumulative_reward"].iloc[-1] / T
                           for s in range(SEEDS)])
        offline = []
        for s, data in enumerate(logs):
            result = evaluate_offline(data, make_agent(name, _replay_env(data), **params), seed=s)
            assert result.accepted == T and result.curve["t"].iloc[-1] == T
            assert result.privacy_scope == OFFLINE_PRIVACY_SCOPE
            offline.append(result.estimates["replay"].value)
        offline = np.array(offline)
        va, vb = online.var(ddof=1) / SEEDS, offline.var(ddof=1) / SEEDS
        dof = (va + vb) ** 2 / (va**2 / (SEEDS - 1) + vb**2 / (SEEDS - 1))
        half = stats.t.ppf(0.995, dof) * math.sqrt(va + vb)
        diff = online.mean() - offline.mean()
        assert abs(diff) <= half and half < 0.07, (name, online.mean(), offline.mean(), half)
        replayed[name] = offline
    gain = replayed["linucb"] - replayed["random"]
    assert gain.mean() - stats.t.ppf(0.975, SEEDS - 1) * gain.std(ddof=1) / math.sqrt(SEEDS) > 0


class _Always(Agent):
    name = "always"

    def _reset_state(self):
        pass

    def act(self, observation):
        return 1

    def update(self, observation, arm, reward, info):
        pass


def test_ips_dr_and_rejection_replay_on_a_skewed_log_match_the_truth():
    """A log whose behaviour policy plays arm 0 with probability 0.7: IPS, DR and replay with acceptance
    p_min/p of a fixed policy (always arm 1) and of uniform play are unbiased for the true values kept by
    log_policy; accepting every match (plain replay) would be biased for non-uniform logs."""
    env = gymnasium.make("dpbandit/SparseLogistic-v0", horizon=50_000, **ENV)
    data = log_policy(env, 6000, seed=7, policy=lambda obs, rng: np.array([0.7, 0.15, 0.15]))
    truth = data.extra["expected_reward"]
    renv = _replay_env(data, horizon=6000)
    fixed = evaluate_offline(data, _Always(renv.constants), seed=0, estimators=ESTIMATORS)
    for name in ESTIMATORS:
        e = fixed.estimates[name]
        assert e.covers(truth[:, 1].mean()), (name, e, truth[:, 1].mean())
    assert fixed.estimates["dr"].half_width < fixed.estimates["ips"].half_width  # the reward model reduces variance
    uniform = evaluate_offline(data, make_agent("random", renv), seed=0)
    e = uniform.estimates["replay"]
    assert e.covers(truth.mean()) and e.n == pytest.approx(6000 * 0.15, rel=0.15)
    # uniform play's distribution is known: IPS weights 1/3 / p, not one sampled action (issue 26, item 1)
    assert uniform.estimates["ips"].ess > 0.5 * 6000 and np.allclose(uniform.pi, 1 / 3)


def test_offline_inputs_are_checked(logs):
    data = logs[0]
    agent = make_agent("random", _replay_env(data))
    no_pscore = LoggedData(data.context, data.action, data.reward, K)
    with pytest.raises(ValueError, match="pass uniform=True"):
        evaluate_offline(no_pscore, agent, seed=0)
    assert evaluate_offline(no_pscore, agent, seed=0, uniform=True).accepted == T
    with pytest.raises(ValueError, match=r"outside the stated reward_range \[0, 0.5\]"):
        evaluate_offline(data, make_agent("random", ReplayEnv.from_logged(data, T, reward_range=(0, 0.5))), seed=0)
    wide = LoggedData(np.ones((5, 2)), [0, 1, 2, 0, 1], np.ones(5), K, pscore=np.full(5, 1 / 3))
    with pytest.raises(ValueError, match=r"agent has \(K, d\) = \(3, 5\) but the log has \(3, 2\)"):
        evaluate_offline(wide, agent, seed=0)
    with pytest.raises(ValueError, match="reward_range must be finite with low < high"):
        ReplayEnv.from_logged(data, T, reward_range=(1, 0))
    with pytest.raises(ValueError, match="estimator"):
        evaluate_offline(data, agent, seed=0, estimators=("magic",))


def test_cli_replay_prints_privacy_and_estimates(logs, tmp_path, capsys):
    path = logs[0].write(tmp_path / "log.npz")
    code = main(["replay", str(path), "--agent", "random", "--agent", "dp_ucb:epsilon=2", "--seeds", "2",
                 "--context-norm", "linf", "--theta-norm", "l1", "--theta-bound", "3", "--horizon", "200",
                 "--out", str(tmp_path / "t.csv")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "1440 logged rounds, K=3 actions (the file's n_actions), d=5" in out
    assert "Privacy: offline: the privacy report covers" in out
    lines = {line.split()[0]: line.split() for line in out.splitlines() if line.strip().startswith(("random", "dp_"))}
    assert lines["dp_ucb:epsilon=2"][1:3] == ["JDP", "2"] and lines["random"][1:3] == ["none", "inf"]
    table = pd.read_csv(tmp_path / "t.csv").set_index("agent")
    assert len(table) == 2 and (table["ips_low"] < table["ips"]).all() and (table["ips"] < table["ips_high"]).all()
    assert main(["replay", str(path), "--agent", "nosuch"]) == 2
    assert "unknown agent 'nosuch'" in capsys.readouterr().err
