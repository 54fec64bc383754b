"""Replay never prints nonsense (issue 24, item 3): one near-zero propensity, an undefined estimate and an agent that
would play like random are refused in one line, exit 2."""

import math

import gymnasium
import numpy as np
import pytest

import dpbandit.envs  # noqa: F401
from dpbandit.agents.base import Agent
from dpbandit.experiment.cli import main
from dpbandit.experiment.config import AgentSpec
from dpbandit.experiment.replay_cli import UndefinedEstimateWarning, replay_table, shown_table
from dpbandit.offline import LoggedData, ReplayEnv, evaluate_offline, log_policy
from dpbandit.offline.replay import MIN_EXPECTED_ACCEPTED, check_replayable, covering_horizon, expected_accepted

K, N = 3, 900


@pytest.fixture(scope="module")
def log():
    env = gymnasium.make("dpbandit/SparseLogistic-v0", horizon=10 * N, n_arms=K, dim=4, sparsity=2, instance_seed=0)
    return log_policy(env, N, seed=3)


def _with_pscore(data, index, value):
    pscore = data.pscore.copy()
    pscore[index] = value
    return LoggedData(data.context, data.action, data.reward, K, pscore=pscore)


def test_one_tiny_propensity_is_refused_before_any_work_naming_the_round(log):
    """Before: the default horizon became max(1, int(900 * 1e-300)) = 1, no round was accepted and the replay
    estimate printed as NaN with exit 0."""
    bad = _with_pscore(log, 17, 1e-300)
    with pytest.raises(ValueError) as info:
        replay_table(bad, [AgentSpec("random")], range(2))
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("the smallest logged propensity is 1e-300 (round 17), so replay")
    assert "expects n_rounds * p_min = 9e-298 accepted rounds, fewer than 10" in message
    assert "drop or correct the 1 round(s) with propensity below 10/n_rounds = 0.0111" in message
    with pytest.raises(ValueError, match=r"round 17"):  # an explicit horizon cannot help: acceptance is the limit
        replay_table(bad, [AgentSpec("random")], range(2), horizon=300)
    with pytest.raises(ValueError, match=r"round 17"):
        evaluate_offline(bad, _AlwaysLast(ReplayEnv.from_logged(bad, 300).constants), seed=0)
    ips = evaluate_offline(bad, _AlwaysLast(ReplayEnv.from_logged(bad, 300).constants), seed=0,
                           estimators=("ips", "dr"))  # IPS and DR need no acceptance
    assert all(math.isfinite(v.value) for v in ips.estimates.values())


def test_the_refusal_threshold_is_the_expected_number_of_accepted_rounds(log):
    assert expected_accepted(log) == pytest.approx(N / K)
    assert check_replayable(_with_pscore(log, 0, MIN_EXPECTED_ACCEPTED / N)) == pytest.approx(MIN_EXPECTED_ACCEPTED)
    with pytest.raises(ValueError, match="fewer than 10"):
        check_replayable(_with_pscore(log, 0, 0.99 * MIN_EXPECTED_ACCEPTED / N))
    # the default horizon lets a pass accept from the whole log: Binomial(N, p_min) accepted rounds, not capped at
    # their mean N * p_min = 300 (issue 26: the pass covers the whole log)
    assert covering_horizon(log) > N / K + 5 * math.sqrt(N / K * (1 - 1 / K))
    table = replay_table(log, [AgentSpec("random")], range(1))
    assert abs(table.loc[0, "accepted"] - N / K) < 4 * math.sqrt(N / K * (1 - 1 / K))


def test_cli_exits_2_with_one_line_for_a_tiny_propensity(log, tmp_path, capsys):
    path = _with_pscore(log, 17, 1e-300).write(tmp_path / "bad.npz")
    assert main(["replay", str(path), "--agent", "random", "--seeds", "2"]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.count("\n") == 0 and err.startswith("dpbandit replay: error: the smallest logged propensity is 1e-300")
    assert "nan" not in captured.out.lower()


class _AlwaysLast(Agent):
    """Plays the last arm every round."""

    name = "always-last"

    def _reset_state(self):
        pass

    def act(self, observation):
        return self.n_arms - 1

    def update(self, observation, arm, reward, info):
        pass


def test_an_estimate_that_stays_undefined_is_stated_not_printed_as_nan(log, tmp_path, capsys):
    """A log that never shows the last arm: an agent that always plays it is never accepted, so its replay
    estimate is undefined; before, the table held NaN silently. Now a one-line warning says so, the printed table says
    "undefined", and the other estimators (every round) still stand."""
    action = np.minimum(log.action, K - 2)
    never_last = LoggedData(log.context, action, log.reward, K, pscore=np.full(N, 0.5))
    with pytest.warns(UndefinedEstimateWarning) as record:
        table = replay_table(never_last, [AgentSpec("random"), AgentSpec(_AlwaysLast, label="always")], range(2))
    message = next(str(w.message) for w in record if w.category is UndefinedEstimateWarning)
    assert message.startswith("agent 'always': the replay estimate is undefined in seed(s) [0, 1]")
    assert "accepted rounds per seed: [0, 0]" in message and "\n" not in message
    shown = shown_table(table, ("replay", "ips")).set_index("agent")
    assert shown.loc["always", "replay"] == "undefined" and shown.loc["always", "ips"].startswith("0 [")
    assert "nan" not in shown.to_string().lower()


def test_dp_ucb_needs_theta_bound_in_replay_and_then_differs_from_random(log, tmp_path, capsys):
    """Before: without --theta-bound, DP-UCB's rows equalled random's in every column (infinite widths, random
    ties from the same stream)."""
    path = log.write(tmp_path / "log.npz")
    assert main(["replay", str(path), "--agent", "random", "--agent", "dp_ucb:epsilon=1", "--seeds", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "dp_ucb needs a finite theta_bound" in err and "--theta-bound" in err
    table = replay_table(log, [AgentSpec("random"), AgentSpec("dp_ucb", params={"epsilon": math.inf})], range(2),
                         context_norm="linf", theta_norm="l1", theta_bound=3.0).set_index("agent")
    assert table.loc["dp_ucb", "replay"] != table.loc["random", "replay"]
    assert table.loc["dp_ucb", "ips"] != table.loc["random", "ips"]


def test_an_undefined_action_distribution_is_stated_once_per_agent_not_once_per_seed(log):
    """The LASSO bandit overrides ``act``, so its distribution is undefined in every round: over three seeds the
    table says so in one warning naming the agent and the count (the ``played_rounds`` column keeps the number)."""
    from dpbandit.offline.replay import PlayedActionWarning

    with pytest.warns(PlayedActionWarning) as caught:
        table = replay_table(log, [AgentSpec("lasso")], range(3))
    played = [w for w in caught if issubclass(w.category, PlayedActionWarning)]
    assert len(played) == 1
    assert str(played[0].message).startswith(f"agent 'lasso': its action distribution is not defined in {N} of {N} "
                                             "rounds per seed")
    assert table.loc[0, "played_rounds"] == N
