import json

import gymnasium
import numpy as np
import pandas as pd
import pytest

from dpbandit.agents import make_agent
from dpbandit.experiment.config import AgentSpec, ExperimentConfig
from dpbandit.experiment.results import COLUMNS, checkpoint_rounds, mean_ci
from dpbandit.experiment.runner import run_experiment, simulate


def _config(**changes):
    base = dict(
        env_id="dpbandit/SparseLinear-v0",
        env_kwargs={"horizon": 200, "dim": 10},
        agents=(AgentSpec("random"), AgentSpec("egreedy", params={"epsilon": 0.1})),
        seeds=2,
        checkpoints=20,
        name="t",
    )
    base.update(changes)
    return ExperimentConfig(**base)


def test_checkpoints_cover_first_and_last_round():
    rounds = checkpoint_rounds(10_000, 100)
    assert rounds[0] == 1 and rounds[-1] == 10_000
    assert np.all(np.diff(rounds) > 0)
    assert 80 <= rounds.size <= 100
    assert np.array_equal(checkpoint_rounds(7, None), np.arange(1, 8))


def test_mean_ci_matches_t_interval():
    mean, half = mean_ci(np.array([1.0, 2.0, 3.0, 4.0]))
    assert mean == 2.5
    assert half == pytest.approx(3.182446305 * np.std([1, 2, 3, 4], ddof=1) / 2, rel=1e-8)


def test_simulate_records_cumulative_regret_consistently():
    env = gymnasium.make("dpbandit/SparseLinear-v0", horizon=300, dim=8)
    agent = make_agent("random", env)
    frame = simulate(env, agent, seed=3, checkpoints=None)
    assert list(frame["t"]) == list(range(1, 301))
    assert np.allclose(np.cumsum(frame["regret"]), frame["cumulative_regret"])
    assert np.allclose(np.cumsum(frame["reward"]), frame["cumulative_reward"])
    assert (frame["regret"] >= 0).all()


def test_oracle_has_zero_regret():
    env = gymnasium.make("dpbandit/SparseLinear-v0", horizon=500)
    frame = simulate(env, make_agent("oracle", env), seed=0)
    assert frame["cumulative_regret"].iloc[-1] == 0.0


def test_same_seed_same_table_and_different_seeds_differ():
    a = run_experiment(_config(), out=False, progress=False).results
    b = run_experiment(_config(), out=False, progress=False).results
    pd.testing.assert_frame_equal(a, b)
    assert list(a.columns) == list(COLUMNS)
    s0 = a[(a.agent == "random") & (a.seed == 0)]["cumulative_regret"].to_numpy()
    s1 = a[(a.agent == "random") & (a.seed == 1)]["cumulative_regret"].to_numpy()
    assert not np.allclose(s0, s1)


def test_parallel_equals_sequential():
    seq = run_experiment(_config(n_jobs=1), out=False, progress=False).results
    par = run_experiment(_config(n_jobs=2), out=False, progress=False).results
    pd.testing.assert_frame_equal(seq, par)


def test_run_directory_layout(tmp_path):
    result = run_experiment(_config(), out=tmp_path, progress=False)
    run_dir = result.run_dir
    assert run_dir.parent == tmp_path
    for name in ("results.csv", "summary.csv", "regret.png", "manifest.json"):
        assert (run_dir / name).is_file(), name
    assert len(list((run_dir / "jobs").glob("*.csv"))) == 4
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert manifest["config"]["seeds"] == [0, 1]
    assert set(manifest["seconds_per_agent"]) == {"random", "egreedy"}
    assert "numpy" in manifest["versions"]
    table = pd.read_csv(run_dir / "results.csv")
    assert len(table) == len(result.results)
    summary = pd.read_csv(run_dir / "summary.csv")
    assert set(summary["agent"]) == {"random", "egreedy"}
    assert (summary["us_per_round"] > 0).all()


def test_interrupted_run_keeps_finished_jobs(tmp_path, monkeypatch):
    """A job that crashes does not lose the jobs that finished before it."""
    from dpbandit.experiment import runner

    real_simulate = runner.simulate

    def crashing_simulate(env, agent, seed, checkpoints=None):
        if seed == 1:
            raise KeyboardInterrupt
        return real_simulate(env, agent, seed, checkpoints)

    monkeypatch.setattr(runner, "simulate", crashing_simulate)
    with pytest.raises(KeyboardInterrupt):
        run_experiment(_config(agents=(AgentSpec("random"),)), out=tmp_path, progress=False)
    (run_dir,) = tmp_path.iterdir()
    jobs = sorted(p.name for p in (run_dir / "jobs").iterdir())
    assert jobs == ["00-random__seed0.csv", "00-random__seed0.json"]
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "running"


def test_bad_config_fails_before_any_job(tmp_path):
    config = _config(agents=(AgentSpec("random"), AgentSpec("linucb", params={"alpha": -2.0})))
    with pytest.raises((ValueError, TypeError), match="alpha"):
        run_experiment(config, out=tmp_path, progress=False)
    assert list(tmp_path.iterdir()) == []


def test_resume_after_interruption_equals_uninterrupted_run(tmp_path, monkeypatch):
    from dpbandit.experiment import runner

    config = _config(agents=(AgentSpec("random"), AgentSpec("linucb")), seeds=3, batch="off")  # seed by seed
    reference = run_experiment(config, out=tmp_path / "ref", progress=False).results

    real_run_job = runner._run_job
    calls = []

    def dying_run_job(cfg, job):
        calls.append(job)
        if len(calls) == 4:
            raise KeyboardInterrupt  # the process dies while the 4th job runs
        return real_run_job(cfg, job)

    monkeypatch.setattr(runner, "_run_job", dying_run_job)
    with pytest.raises(KeyboardInterrupt):
        run_experiment(config, out=tmp_path / "resume", progress=False)
    monkeypatch.setattr(runner, "_run_job", real_run_job)
    run_dir = tmp_path / "resume" / config.name
    assert len(list((run_dir / "jobs").glob("*.json"))) == 3

    rerun_calls = []
    monkeypatch.setattr(runner, "_run_job", lambda cfg, job: rerun_calls.append(job) or real_run_job(cfg, job))
    resumed = run_experiment(config, out=tmp_path / "resume", progress=False)
    assert resumed.resumed_jobs == 3 and len(rerun_calls) == 3  # only the 3 unfinished jobs ran again
    pd.testing.assert_frame_equal(resumed.results, reference, check_exact=True)
    table = pd.read_csv(run_dir / "results.csv")
    assert not table.duplicated(["env_id", "agent", "seed", "t"]).any()
    assert len(table) == len(reference)


def test_changed_config_is_refused_unless_fresh(tmp_path):
    run_experiment(_config(), out=tmp_path, progress=False)
    changed = _config(seeds=3)
    with pytest.raises(ValueError, match="different experiment.*fresh"):
        run_experiment(changed, out=tmp_path, progress=False)
    result = run_experiment(changed, out=tmp_path, progress=False, fresh=True)
    assert result.resumed_jobs == 0 and set(result.results["seed"]) == {0, 1, 2}
    # n_jobs does not change the experiment: resuming with another n_jobs is allowed
    again = run_experiment(changed.replace(n_jobs=2), out=tmp_path, progress=False)
    assert again.resumed_jobs == 6


def test_several_environments_in_one_sweep(tmp_path):
    from dpbandit.experiment.config import EnvSpec

    config = ExperimentConfig(
        envs=(
            EnvSpec("dpbandit/SparseLinear-v0", {"horizon": 100, "dim": 10}, label="d10"),
            EnvSpec("dpbandit/SparseLinear-v0", {"horizon": 100, "dim": 20}, label="d20"),
        ),
        agents=(AgentSpec("random"), AgentSpec("linucb")),
        seeds=2,
        checkpoints=10,
        name="sweep",
    )
    result = run_experiment(config, out=tmp_path, progress=False)
    assert set(result.results["env_id"]) == {"d10", "d20"}
    assert len(result.summary) == 4 and set(result.summary["env_id"]) == {"d10", "d20"}
    assert len(list((result.run_dir / "jobs").glob("*.json"))) == 8
    assert ExperimentConfig.from_dict(config.to_dict()) == config


def test_dask_backend_equals_local_backend(tmp_path):
    pytest.importorskip("dask.distributed")
    config = _config(agents=(AgentSpec("random"), AgentSpec("linucb"), AgentSpec("dp_hdb")), n_jobs=2)
    local = run_experiment(config, out=False, progress=False).results
    dask = run_experiment(config, out=tmp_path, progress=False, backend="dask").results
    pd.testing.assert_frame_equal(local, dask, check_exact=True)
    manifest = json.loads((tmp_path / config.name / "manifest.json").read_text())
    assert manifest["backend"] == "dask"


def test_bad_backend_arguments():
    with pytest.raises(ValueError, match="backend"):
        run_experiment(_config(), out=False, backend="spark")
    with pytest.raises(ValueError, match="dask_address"):
        run_experiment(_config(), out=False, dask_address="tcp://127.0.0.1:8786")


def test_agents_given_as_classes_or_import_paths():
    from dpbandit.agents.linucb import LinUCB

    by_name = run_experiment(_config(agents=(AgentSpec("linucb"),)), out=False, progress=False).results
    by_class = run_experiment(_config(agents=(AgentSpec(LinUCB),)), out=False, progress=False).results
    by_path = run_experiment(
        _config(agents=(AgentSpec("dpbandit.agents.linucb:LinUCB", "linucb"),), n_jobs=2), out=False, progress=False
    ).results
    pd.testing.assert_frame_equal(by_name, by_class)
    pd.testing.assert_frame_equal(by_name, by_path)
    assert _config(agents=(AgentSpec(LinUCB),)).to_dict()["agents"][0]["type"] == "dpbandit.agents.linucb:LinUCB"
    with pytest.raises(ValueError, match="cannot be imported"):
        _config(agents=(AgentSpec("nowhere.module:Agent"),)).validate()


def test_batched_runs_write_byte_identical_results(tmp_path):
    """batch = "auto" (LinUCB and greedy seeds in lockstep) and "off" give the same results.csv, byte for byte."""
    agents = (AgentSpec("random"), AgentSpec("linucb"), AgentSpec("greedy"))
    paths = {}
    for mode in ("auto", "off"):
        config = _config(agents=agents, seeds=5, batch=mode, name=f"b-{mode}", n_jobs=1)
        result = run_experiment(config, out=tmp_path, progress=False)
        paths[mode] = result.table_path
        metas = [json.loads(p.read_text()) for p in sorted((result.run_dir / "jobs").glob("*linucb*.json"))]
        assert [m["meta"]["batch"] for m in metas] == ([5] * 5 if mode == "auto" else [1] * 5)
    assert paths["auto"].read_bytes() == paths["off"].read_bytes()


def test_units_group_batched_seeds_and_keep_every_worker_busy():
    from dpbandit.experiment.runner import _units

    config = _config(agents=(AgentSpec("random"), AgentSpec("linucb")), seeds=40, n_jobs=2)
    built = config.validate()
    todo = [(0, a, s) for a in range(2) for s in config.seeds if not (a == 1 and s in (3, 4))]
    units = _units(config, todo, built)
    assert [u for u in units if u[1] == 0] == [(0, 0, (s,)) for s in config.seeds]  # random: no batched form
    batched = [u[2] for u in units if u[1] == 1]
    assert [len(b) for b in batched] == [16, 16, 6] and sorted(sum(batched, ())) == [s for s in range(40)
                                                                                      if s not in (3, 4)]
    alone = _config(agents=(AgentSpec("linucb"),), seeds=6, n_jobs=2)
    assert [len(u[2]) for u in _units(alone, [(0, 0, s) for s in range(6)], alone.validate())] == [3, 3]
    off = alone.replace(batch="off")
    assert len(_units(off, [(0, 0, s) for s in range(6)], off.validate())) == 6


def test_batch_mode_is_validated_and_not_part_of_the_experiment(tmp_path):
    with pytest.raises(ValueError, match="batch"):
        _config(batch="yes")
    assert _config(batch="off").config_hash() == _config().config_hash()


def _killed_in_second_unit(config, tmp_path, monkeypatch) -> list:
    """Run ``config`` into ``tmp_path`` killed (KeyboardInterrupt) while its second lockstep unit runs; the seeds of
    each unit started (the batch module's runner is restored after the kill)."""
    from dpbandit.experiment import batch

    real, calls = batch.simulate_batch_agents, []

    def dying(*args, **kwargs):
        calls.append(args[2])
        if len(calls) == 2:
            raise KeyboardInterrupt  # killed while the second unit runs
        return real(*args, **kwargs)

    monkeypatch.setattr(batch, "simulate_batch_agents", dying)
    with pytest.raises(KeyboardInterrupt):
        run_experiment(config, out=tmp_path, progress=False)
    monkeypatch.setattr(batch, "simulate_batch_agents", real)
    return calls


def test_a_killed_batched_run_keeps_finished_units_and_resumes_to_the_same_table(tmp_path, monkeypatch):

    config = _config(agents=(AgentSpec("linucb"),), seeds=40, name="k")  # units of 16, 16, 8 seeds
    reference = run_experiment(config.replace(batch="off"), progress=False).results
    _killed_in_second_unit(config, tmp_path, monkeypatch)
    assert len(list((tmp_path / "k" / "jobs").glob("*.json"))) == 16  # the first unit's seeds are kept
    resumed = run_experiment(config, out=tmp_path, progress=False)
    assert resumed.resumed_jobs == 16
    pd.testing.assert_frame_equal(resumed.results, reference, check_exact=True)


def test_dp_hdb_seeds_are_the_same_alone_in_lockstep_in_parallel_and_resumed(tmp_path, monkeypatch):
    """DP-HDB's block path: every seed's rows are the same with batch off (one job per seed), in lockstep units of
    16 + 4 seeds, with two worker processes, and after a run killed in its second unit is resumed."""

    config = _config(agents=(AgentSpec("dp_hdb", params={"epsilon": 2.0}),), seeds=20, name="h")
    reference = run_experiment(config.replace(batch="off"), progress=False).results
    pd.testing.assert_frame_equal(run_experiment(config.replace(n_jobs=2), progress=False).results, reference,
                                  check_exact=True)
    calls = _killed_in_second_unit(config, tmp_path, monkeypatch)
    assert [len(c) for c in calls] == [16, 4]
    resumed = run_experiment(config, out=tmp_path, progress=False)
    assert resumed.resumed_jobs == 16
    pd.testing.assert_frame_equal(resumed.results, reference, check_exact=True)


def test_simulate_limits_blas_to_one_thread_and_rescans_libraries_only_after_imports(monkeypatch):
    import sys
    import types

    from threadpoolctl import ThreadpoolController, threadpool_info

    from dpbandit.agents.baselines import UniformRandom
    from dpbandit.experiment import runner

    seen = []

    class Probe(UniformRandom):
        def act(self, observation):
            seen.append({lib["filepath"]: lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"})
            return super().act(observation)

    scans = []
    monkeypatch.setattr(runner, "ThreadpoolController", lambda: scans.append(1) or ThreadpoolController())
    monkeypatch.setattr(runner, "_BLAS_CONTROLLER", None)
    env = gymnasium.make("dpbandit/SparseLinear-v0", horizon=3)
    before = {lib["filepath"]: lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}
    for seed in range(4):
        simulate(env, Probe(env.unwrapped.constants), seed)
    assert seen and all(set(threads.values()) == {1} for threads in seen)
    assert {lib["filepath"]: lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"} == before
    assert 1 <= len(scans) <= 2  # the first run (and once more if it imported modules), then the scan is reused
    scans.clear()
    monkeypatch.setitem(sys.modules, "dpbandit_test_new_module", types.ModuleType("dpbandit_test_new_module"))
    simulate(env, Probe(env.unwrapped.constants), 2)
    simulate(env, Probe(env.unwrapped.constants), 3)
    assert len(scans) == 1  # a module was imported since: scanned again, once


def test_simulating_imports_no_plotting_library():
    """A job's process (a joblib or Dask worker) imports the runner to simulate: it does not load matplotlib or
    seaborn (about 30 MB and most of a second per worker), only the process that draws the figure does."""
    import subprocess
    import sys

    code = ("import sys; from dpbandit.experiment.runner import simulate; from dpbandit.experiment import batch; "
            "print(sorted(m for m in ('matplotlib', 'seaborn') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
