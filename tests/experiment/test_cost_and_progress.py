"""Issue 24 items 4-5: the cost of a run is stated and checked before any work, and the progress bar counts rounds
reported from inside long jobs (in this process and from worker processes), without changing a single result."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpbandit.experiment import execution, planning
from dpbandit.experiment.config import AgentSpec, ExperimentConfig
from dpbandit.experiment.runner import run_experiment
from tests.experiment.slow_agent import SlowAgent


def _config(**changes):
    base = dict(env_id="dpbandit/SparseLinear-v0", env_kwargs={"horizon": 50, "dim": 10},
                agents=(AgentSpec("random"), AgentSpec("linucb")), seeds=2, checkpoints=10, name="t")
    base.update(changes)
    return ExperimentConfig(**base)


# -- cost before work ----------------------------------------------------------------------------------------------


def test_the_planned_work_is_one_line_before_the_run(tmp_path, capsys):
    run_experiment(_config(), out=tmp_path, progress=True)
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["t: 4 jobs (1 env x 2 agents x 2 seeds) x 50 rounds = 200 rounds"]


def test_an_absurd_horizon_is_refused_with_its_estimate_before_any_file(tmp_path):
    """horizon = 1e12 used to start with no estimate; a Python round costs more than 0.15 microseconds, so these
    4e12 rounds take far more than a week on any machine."""
    config = _config(env_kwargs={"horizon": 10**12, "dim": 10})
    with pytest.raises(ValueError, match=r"t: 4 jobs .* = 4,000,000,000,000 rounds; about [\d.,]+ (days|years) with "
                                         r"1 parallel job: more than the 7.0 days a run may take; .*--allow-long"):
        run_experiment(config, out=tmp_path, progress=False)
    assert list(tmp_path.iterdir()) == []


def test_long_runs_get_a_calibrated_estimate_and_allow_long_lifts_the_refusal():
    config = _config(env_kwargs={"horizon": 100_000, "dim": 10}, n_jobs=2)
    plan = planning.plan_run(config, config.validate().horizons)
    assert plan.rounds == 400_000 and plan.workers == 2
    assert plan.seconds is not None and 0 < plan.seconds < planning.MAX_SECONDS
    assert plan.line().startswith("t: 4 jobs (1 env x 2 agents x 2 seeds) x 100,000 rounds = 400,000 rounds; about ")
    absurd = planning.Plan("t", (1, 1, 1), (10**12,), 1, seconds=1e9)
    with pytest.raises(ValueError, match="about 31.7 years"):
        absurd.check()
    absurd.check(allow_long=True)  # the explicit flag runs it


def test_the_estimate_leaves_out_the_first_rounds_one_off_costs():
    """On a fresh installation the first rounds compile kernels (seconds each, once per process): a calibration
    that timed them estimated 22 days for a frontier sweep at T = 1e6 that takes about an hour, and refused it. The
    untimed first pass pays them; the timed pass replays the same rounds."""
    import time

    import gymnasium

    from dpbandit.agents import make_agent

    env = gymnasium.make("dpbandit/SparseLinear-v0", horizon=10**6, dim=10)
    agent = make_agent("random", env)
    calls, act = [], agent.act

    def compiles_in_round_two(obs):
        calls.append(1)
        if len(calls) == 2:
            time.sleep(0.3)  # a kernel compiled on its first use
        return act(obs)

    agent.act = compiles_in_round_two
    assert planning.seconds_per_round(env, agent, 0, budget=0.1) < 0.01
    assert len(calls) > planning.WARM_UP_ROUNDS  # both passes played


def test_a_results_table_that_cannot_fit_is_refused_before_calibrating(tmp_path, monkeypatch):
    monkeypatch.setattr(planning, "calibrate", lambda *args: pytest.fail("calibrated a run that cannot fit"))
    config = _config(agents=(AgentSpec("random"),), env_kwargs={"horizon": 10**10, "dim": 10}, checkpoints=None)
    with pytest.raises(ValueError, match=r"the results of 't' \(20,000,000,000 recorded rows.* memory"):
        run_experiment(config, out=tmp_path, progress=False)
    assert list(tmp_path.iterdir()) == []


def test_regression_n_arms_beyond_memory_is_refused_before_building(monkeypatch):
    """dpbandit/Regression-v0 with n_arms = 1e8 ran 563 s, then out of memory."""
    import dpbandit.validation
    from dpbandit.envs.regression import RegressionBanditEnv

    monkeypatch.setattr(dpbandit.validation, "physical_memory", lambda: 10**9)
    with pytest.raises(ValueError, match=r"RegressionBanditEnv\(n_arms=1000000, rows=442, dim=10\).*lower n_arms"):
        RegressionBanditEnv(n_arms=10**6)
    with pytest.raises(ValueError, match=r"n_arms=1000000.*lower arms"):
        RegressionBanditEnv(arms=np.arange(10**6, dtype=float))
    assert RegressionBanditEnv(n_arms=5).candidates.size == 5


def test_a_log_whose_action_ids_are_labels_is_refused(tmp_path):
    """A log whose largest action id is 1e5 made K = 100001: minutes and a gigabyte for 5 logged actions."""
    from dpbandit.offline.logged import read_logged

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.normal(size=50), "action": [0, 3, 7, 9, 100_000] * 10,
                          "reward": rng.random(50)})
    frame.to_csv(tmp_path / "log.csv", index=False)
    with pytest.raises(ValueError, match=r"largest action id is 100000, so n_actions would be 100001, but only 5 "
                                         r"distinct actions were logged.*--n-actions"):
        read_logged(tmp_path / "log.csv")
    frame["action"] = frame["action"].where(frame["action"] < 100, 11)  # ids 0..11, some never logged: fine
    frame.to_csv(tmp_path / "log.csv", index=False)
    assert read_logged(tmp_path / "log.csv").n_actions == 12


# -- progress within jobs ------------------------------------------------------------------------------------------


@pytest.fixture
def reports(monkeypatch):
    """Every (job index, rounds) the driver's bar received, in order (finishing included)."""
    seen: list[tuple[int, int]] = []
    real = execution._Meter.report

    def report(self, index, done):
        seen.append((index, int(done)))
        real(self, index, done)

    monkeypatch.setattr(execution._Meter, "report", report)
    return seen


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_the_bar_counts_rounds_reported_while_a_long_job_runs(reports, n_jobs):
    """A 2-seed run sat at 0/2 jobs for minutes: now each job reports its rounds about twice a second (in this
    process, or from worker processes over the loopback socket), and finishing fills it to T."""
    T = 1500  # at least 3 s per job (2 ms per round): several reports before it ends
    config = _config(agents=(AgentSpec(SlowAgent, params={"pause": 0.002}),), env_kwargs={"horizon": T, "dim": 5},
                     n_jobs=n_jobs)
    run_experiment(config, out=None, progress=True)
    for index in (0, 1):
        mine = [done for i, done in reports if i == index]
        assert any(0 < done < T for done in mine), mine  # movement inside the job
        assert mine == sorted(mine) and mine[-1] == T


def test_progress_reports_leave_every_result_bit_identical():
    config = _config(env_kwargs={"horizon": 3000, "dim": 10}, seeds=3, checkpoints=None)
    quiet = run_experiment(config, progress=False).results
    for n_jobs, batch in ((1, "auto"), (2, "off")):
        shown = run_experiment(config.replace(n_jobs=n_jobs, batch=batch), progress=True).results
        pd.testing.assert_frame_equal(shown, quiet, check_exact=True)


def test_a_ticker_reports_weighted_rounds_only_for_a_watched_job():
    assert execution.round_ticker() is None  # simulate() outside execute_jobs: nothing to report to, no cost
    sent = []
    job = execution._JobRounds(3, lambda index, done: sent.append((index, done)))
    job.sent = float("-inf")  # the report period has passed
    execution._JOB[0] = job
    try:
        tick = execution.round_ticker(weight=4)  # four seeds in lockstep
        following = tick(execution.FIRST_STEP)
    finally:
        execution._JOB[0] = None
    assert sent == [(3, 4 * execution.FIRST_STEP)]
    assert execution.FIRST_STEP < following <= execution.FIRST_STEP + execution.MAX_STEP
