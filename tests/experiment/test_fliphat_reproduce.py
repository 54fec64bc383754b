"""``dpbandit reproduce fliphat`` (dpbandit/experiment/reproduce/fliphat.py) on a tiny horizon: the setting, the
columns and their guarantees, the published numbers, files, and one-line CLI errors."""

from __future__ import annotations

import math

import gymnasium
import numpy as np
import pandas as pd
import pytest

from dpbandit.experiment.reproduce import main as reproduce_main
from dpbandit.experiment.reproduce.fliphat import PUBLISHED, VERDICTS, env_kwargs, reproduce


def test_setting_is_the_repositorys():
    env = gymnasium.make("dpbandit/GLMBandit-v0", **env_kwargs(3, 100))
    c = env.unwrapped.constants
    assert (c.n_arms, c.dim, c.structure, c.sparsity) == (3, 400, "shared", 5)
    assert c.context_bound == math.sqrt(2 * math.log(400)) and c.noise_std == 0.1
    env.reset(seed=0)
    theta = env.unwrapped.theta
    assert np.count_nonzero(theta) == 5 and math.isclose(np.abs(theta).sum(), 3.75)
    magnitudes = np.abs(theta[theta != 0])
    assert magnitudes.max() <= 2 * magnitudes.min()  # U[0.5, 1] entries, rescaled together
    assert PUBLISHED[2][1.0] == 3901 and PUBLISHED[3][5.0] == 1551


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return reproduce(out=tmp_path_factory.mktemp("runs"), progress=False, horizon=200, seeds=2, epsilons=(1.0,),
                     arms=(2,))


def test_quick_run_columns_guarantees_and_files(tiny):
    results, table, summary, run_dir = tiny
    guarantees = results.groupby("column")["guarantee"].first()
    assert guarantees["published calibration (NOT PRIVATE)"] == "none"
    assert guarantees["correct (Laplace)"] == guarantees["DP-HDB (disjoint analogue)"] == "JDP"
    assert list(table["published (repository, T = 1e4)"]) == [3901]
    assert (results.groupby(["column", "epsilon"], dropna=False).size() == 2).all()
    assert "NOT PRIVATE" in summary and "uniform random (shared)" in summary
    for name in ("results.csv", "table.csv", "table.md", "summary.txt"):
        assert (run_dir / name).is_file()


def test_paired_verdicts_and_figure(tiny):
    """Issue 29 item 4: the verdicts of figure-5.1's wording (stats.verdict) over common seeds, and a figure."""
    results, _, summary, run_dir = tiny
    comparison = pd.read_csv(run_dir / "comparison.csv")
    assert list(zip(comparison["a"], comparison["b"])) == list(VERDICTS)
    for a_name, b_name in VERDICTS:
        a = results[results["column"] == a_name].set_index("seed")["final_regret"]
        b = results[results["column"] == b_name].set_index("seed")["final_regret"]
        row = comparison[(comparison["a"] == a_name) & (comparison["b"] == b_name)].iloc[0]
        assert row["seeds"] == 2 and row["difference"] == pytest.approx((b - a).mean())
        assert row["low"] < row["difference"] < row["high"]
        assert row["verdict"] in summary
        assert (f"{a_name} beats {b_name}" in row["verdict"] or f"{b_name} beats {a_name}" in row["verdict"]
                or "not distinguishable (2 seeds)" in row["verdict"])
    figure = run_dir / "figure.png"
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and figure.stat().st_size > 10_000


def test_cli_error_is_one_line(capsys):
    assert reproduce_main(["fliphat", "--horizon", "1", "--no-progress", "--out", "/nonexistent-never"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("dpbandit reproduce fliphat: error: horizon must be")
