"""Saved runs: privacy columns, load_run, parquet, paired comparisons, bands clipped at zero, in-memory default."""

import json
import math

import numpy as np
import pandas as pd
import pytest

import dpbandit
from dpbandit.experiment.cli import main
from dpbandit.experiment.config import AgentSpec, ExperimentConfig
from dpbandit.experiment.contrasts import compare_run
from dpbandit.experiment.results import PRIVACY_COLUMNS, privacy_legend, regret_bands
from dpbandit.experiment.runner import run_experiment
from dpbandit.experiment.stats import paired_difference
from dpbandit.files import write_json_atomic


def _config(**changes):
    base = dict(
        env_id="dpbandit/SparseLinear-v0",
        env_kwargs={"horizon": 300, "dim": 8},
        agents=(AgentSpec("random", label="Random"), AgentSpec("linucb", label="LinUCB"),
                AgentSpec("dp_ucb", label="DP-UCB", params={"epsilon": 2.0, "delta": 1e-4})),
        seeds=3,
        checkpoints=20,
        name="privacy",
    )
    base.update(changes)
    return ExperimentConfig(**base)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    return run_experiment(_config(), out=out, progress=False), out / "privacy"


def test_summary_states_each_agents_guarantee_epsilon_delta_rho(saved):
    result, run_dir = saved
    summary = result.summary.set_index("agent")
    assert list(result.summary.columns[:2 + len(PRIVACY_COLUMNS)]) == ["env_id", "agent", *PRIVACY_COLUMNS]
    assert summary.loc["DP-UCB", "epsilon"] == 2.0  # the request, not 1.9999999976 (issue 29 item 3)
    assert summary.loc["DP-UCB", "epsilon_from"].startswith("analytic Gaussian curve (not rho)")
    assert summary.loc["DP-UCB", "guarantee"] == "JDP"
    assert (summary.loc["DP-UCB", "epsilon"], summary.loc["DP-UCB", "delta"]) == pytest.approx((2.0, 1e-4), rel=1e-6)
    assert 0 < summary.loc["DP-UCB", "rho"] < math.inf
    assert summary.loc["Random", "guarantee"] == "none" and summary.loc["Random", "epsilon"] == math.inf
    on_disk = pd.read_csv(run_dir / "summary.csv").set_index("agent")
    assert on_disk.loc["DP-UCB", "guarantee"] == "JDP" and on_disk.loc["LinUCB", "epsilon"] == math.inf
    assert privacy_legend("DP-UCB", summary.loc["DP-UCB"].to_dict()) == "DP-UCB [JDP ε=2, δ=0.0001]"
    assert privacy_legend("Random", summary.loc["Random"].to_dict()) == "Random [non-private]"


def test_load_run_returns_tables_config_and_reports(saved):
    result, run_dir = saved
    run = dpbandit.load_run(run_dir)
    assert run.complete
    pd.testing.assert_frame_equal(run.results, result.results, check_dtype=False)
    assert list(run.summary["agent"]) == list(result.summary["agent"])
    assert ExperimentConfig.from_dict(run.config).config_hash() == _config().config_hash()
    report = run.privacy["dpbandit/SparseLinear-v0 / DP-UCB"]
    assert report.guarantee == "JDP" and report.epsilon == pytest.approx(2.0, rel=1e-6)
    assert run.privacy["dpbandit/SparseLinear-v0 / Random"] is None
    assert dpbandit.load_run(run_dir / "manifest.json").run_dir == run_dir
    with pytest.raises(ValueError, match="not a dpbandit run directory"):
        dpbandit.load_run(run_dir / "jobs")


def test_load_run_reads_the_finished_jobs_of_an_interrupted_run(saved, tmp_path):
    _, run_dir = saved
    import shutil

    copy = tmp_path / "killed"
    shutil.copytree(run_dir, copy)
    (copy / "results.csv").unlink()
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest = {k: v for k, v in manifest.items() if k not in ("privacy", "files")} | {"status": "running"}
    write_json_atomic(copy / "manifest.json", manifest)  # as written when the run started
    for stem in sorted((copy / "jobs").glob("*DP-UCB*.json")):
        stem.unlink()  # those jobs did not finish
    run = dpbandit.load_run(copy)
    assert not run.complete and run.summary is None
    assert set(run.results["agent"]) == {"Random", "LinUCB"}
    assert run.report("dpbandit/SparseLinear-v0", "LinUCB") is None  # read from the finished jobs
    with pytest.raises(KeyError, match="no privacy report recorded for 'DP-UCB'"):
        run.report("dpbandit/SparseLinear-v0", "DP-UCB")


def test_compare_against_the_baseline_uses_paired_differences(saved, capsys):
    _, run_dir = saved
    run = dpbandit.load_run(run_dir)
    table = compare_run(run, "random").set_index("agent")  # a type resolves to its one label
    finals = run.results[run.results["t"] == 300].pivot(index="seed", columns="agent", values="cumulative_regret")
    expected = paired_difference(finals["LinUCB"], finals["Random"])
    row = table.loc["LinUCB"]
    assert (row["difference"], row["low"], row["high"]) == pytest.approx((expected.estimate, expected.low,
                                                                        expected.high))
    assert row["high"] < 0 and row["verdict"].startswith("LinUCB beats Random")
    assert list(table.index) == ["LinUCB", "DP-UCB"]  # configuration order
    assert table.loc["DP-UCB", "guarantee"] == "JDP" and table.loc["DP-UCB", "epsilon"] == pytest.approx(2.0, rel=1e-6)
    assert main(["compare", str(run_dir), "--baseline", "random"]) == 0
    out = capsys.readouterr().out
    assert "Paired differences against 'Random'" in out and "LinUCB beats Random" in out
    assert main(["compare", str(run_dir), "--baseline", "lasso"]) == 2
    assert "baseline 'lasso' is not an agent of this run" in capsys.readouterr().err


def test_parquet_format_round_trips(tmp_path):
    pytest.importorskip("pyarrow")
    config = _config(agents=(AgentSpec("random"), AgentSpec("linucb")), seeds=2, name="pq")
    result = run_experiment(config, out=tmp_path, progress=False, format="parquet")
    assert result.table_path == tmp_path / "pq" / "results.parquet"
    assert not (tmp_path / "pq" / "results.csv").exists()
    run = dpbandit.load_run(tmp_path / "pq")
    pd.testing.assert_frame_equal(run.results, result.results)
    pd.testing.assert_frame_equal(run.summary, result.summary)
    with pytest.raises(ValueError, match="format"):
        run_experiment(config, out=tmp_path, progress=False, format="xlsx")


def test_pseudo_regret_bands_are_clipped_at_zero_and_others_are_not():
    frame = pd.DataFrame({"env_id": "e", "agent": "a", "seed": [0, 1, 2], "t": 1,
                          "cumulative_regret": [0.0, 0.0, 3.0]})
    free = regret_bands(frame)
    clipped = regret_bands(frame, floor=0.0)
    assert free["low"].iloc[0] < 0 and clipped["low"].iloc[0] == 0.0
    assert clipped["high"].iloc[0] == free["high"].iloc[0] and clipped["mean"].iloc[0] == 1.0


def test_run_experiment_without_out_stays_in_memory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = _config(agents=(AgentSpec("random"),), seeds=1)
    result = run_experiment(config, progress=False)
    assert result.run_dir is None and result.table_path is None and not any(tmp_path.iterdir())
    again = run_experiment(config.replace(seeds=2), progress=False)  # an edited experiment just runs
    assert again.summary["seeds"].iloc[0] == 2 and not any(tmp_path.iterdir())
    written = run_experiment(config, out=True, progress=False)  # True: the config's out folder
    assert written.run_dir.resolve() == (tmp_path / "runs" / "privacy").resolve()
    assert np.array_equal(written.results["cumulative_regret"], result.results["cumulative_regret"])
