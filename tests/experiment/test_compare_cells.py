"""dpbandit compare on runs with several cells (issue 24, item 3): a frontier run is compared cell by cell, pooled jobs
are refused in one line, an environment without the baseline is named."""

import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

import dpbandit
from dpbandit.experiment.cli import main
from dpbandit.experiment.config import AgentSpec, EnvSpec, ExperimentConfig
from dpbandit.experiment.contrasts import compare_run, format_comparison
from dpbandit.experiment.frontier import FrontierConfig, run_frontier
from dpbandit.experiment.run_data import LoadedRun
from dpbandit.experiment.runner import run_experiment
from dpbandit.experiment.stats import paired_difference


@pytest.fixture(scope="module")
def frontier(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    fc = FrontierConfig(agents=("dp_ucb",), epsilons=(2.0, math.inf), horizons=(60, 120), seeds=3, n_jobs=1,
                        checkpoints=5, name="fr")
    run_frontier(fc, out=out, progress=False)
    return out / "fr"


def test_a_frontier_run_is_compared_in_every_epsilon_horizon_cell(frontier, capsys):
    """Before: one row per agent (one cell picked silently) with 'epsilon NaN' (no report under that label)."""
    table = compare_run(dpbandit.load_run(frontier), "random")
    cells = set(zip(table["env_id"], table["agent"]))
    assert cells == {(f"T={T}", agent) for T in (60, 120) for agent in ("dp_ucb eps=2", "dp_ucb eps=inf", "linucb")}
    row = table.set_index(["env_id", "agent"]).loc[("T=60", "dp_ucb eps=2")]
    assert row["guarantee"] == "JDP" and row["epsilon"] == pytest.approx(2.0, rel=1e-6)
    assert table.set_index(["env_id", "agent"]).loc[("T=120", "dp_ucb eps=inf"), "guarantee"] == "none"
    assert not table[["epsilon", "delta", "difference"]].isna().any().any()
    # each cell is paired with the baseline of its own horizon
    results = pd.read_csv(frontier / "results.csv")
    last = results[results["t"] == results["horizon"]]
    agent = last[(last["agent"] == "dp_ucb") & (last["epsilon"] == 2.0) & (last["horizon"] == 60)].set_index("seed")
    base = last[(last["agent"] == "random") & (last["horizon"] == 60)].set_index("seed")
    expected = paired_difference(agent["cumulative_regret"], base["cumulative_regret"])
    assert row["difference"] == pytest.approx(expected.estimate)
    assert main(["compare", str(frontier), "--baseline", "random"]) == 0
    out = capsys.readouterr().out
    assert "nan" not in out.lower()
    assert "frontier run: every (epsilon, horizon) cell compared" in out
    assert "T=60: dp_ucb eps=2 vs random" in out and "T=120: dp_ucb eps=2 vs random" in out


def test_a_frontier_run_without_its_sweep_is_refused_in_one_line(frontier, tmp_path, capsys):
    copy = tmp_path / "fr"
    shutil.copytree(frontier, copy, ignore=shutil.ignore_patterns("sweep"))
    assert main(["compare", str(copy), "--baseline", "random"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "is a frontier run whose results pool every (epsilon, horizon) cell" in err


def _run(results: pd.DataFrame) -> LoadedRun:
    return LoadedRun(run_dir=Path("somewhere"), results=results, summary=None,
                     config={"agents": [{"type": "random", "label": "random"}, {"type": "linucb", "label": "linucb"}]},
                     manifest={}, privacy={})


def test_pooled_jobs_are_refused_naming_the_column_that_tells_them_apart():
    rows = [{"env_id": "e", "agent": a, "seed": s, "t": 10, "cumulative_regret": 1.0 + s, "alpha": alpha}
            for a in ("random", "linucb") for s in (0, 1) for alpha in ((0.1, 1.0) if a == "linucb" else (0.0,))]
    with pytest.raises(ValueError) as info:
        compare_run(_run(pd.DataFrame(rows)), "random")
    message = str(info.value)
    assert "holds several jobs per (environment, agent, seed)" in message and "told apart only by ['alpha']" in message
    assert "\n" not in message


def test_every_environment_is_compared_and_one_without_the_baseline_is_named(tmp_path):
    config = ExperimentConfig(envs=(EnvSpec("dpbandit/SparseLinear-v0", {"horizon": 50, "dim": 6}, label="a"),
                                    EnvSpec("dpbandit/SparseLinear-v0", {"horizon": 80, "dim": 6}, label="b")),
                              agents=(AgentSpec("random"), AgentSpec("linucb")), seeds=2, checkpoints=5, name="two")
    run_experiment(config, out=tmp_path, progress=False)
    run = dpbandit.load_run(tmp_path / "two")
    table = compare_run(run, "random")
    assert list(zip(table["env_id"], table["agent"])) == [("a", "linucb"), ("b", "linucb")]
    text = format_comparison(table)
    assert "a: linucb" in text and "b: linucb" in text
    no_base_in_b = run.results[~((run.results["env_id"] == "b") & (run.results["agent"] == "random"))]
    table = compare_run(LoadedRun(run.run_dir, no_base_in_b, None, run.config, run.manifest, run.privacy), "random")
    assert list(table["env_id"]) == ["a"]
    assert "not compared: 'random' did not run in environment 'b'" in format_comparison(table)
