"""The privacy–regret frontier (dpbandit/experiment/frontier.py): configuration, tables, plot, run directory, CLI."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from dpbandit.agents import AGENTS
from dpbandit.agents.dp_ucb import DPUCB
from dpbandit.experiment.frontier import (
    EPSILONS,
    HORIZONS,
    RESULT_COLUMNS,
    FrontierConfig,
    beating_lines,
    first_epsilon_beating,
    frontier_table,
    main,
    plot_frontier,
    run_frontier,
)
from dpbandit.privacy.report import PUBLISHED_CODE_SETTING, PrivacyReport

SMALL = dict(env_id="dpbandit/SharedLinear-v0", env_kwargs={"dim": 5, "n_arms": 3}, agents=("dp_ucb",),
             epsilons=(math.inf, 2.0), horizons=(120, 60), seeds=2, n_jobs=1, checkpoints=5)


def _strict_json(path):
    def refuse(name):
        raise ValueError(f"non-strict JSON constant {name}")

    return json.loads(path.read_text(), parse_constant=refuse)


def test_defaults_are_the_issue_grid():
    fc = FrontierConfig(agents=("dp_ucb",))
    assert EPSILONS == (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, math.inf) and fc.epsilons == EPSILONS
    assert HORIZONS == (10_000, 100_000) and fc.horizons == HORIZONS
    assert fc.references == ("random", "linucb") and fc.env_id == "dpbandit/HanFigure51-K2-v0"
    defaults = FrontierConfig().agents  # every registered private agent with an epsilon to sweep
    assert "dp_ucb" in defaults and all(AGENTS[a].private for a in defaults)


def test_experiment_expands_agents_epsilons_and_horizons():
    fc = FrontierConfig(**{**SMALL, "delta": 1e-3, "agent_params": {"dp_ucb": {"calibration": "paper"}}})
    assert fc.epsilons == (2.0, math.inf) and fc.horizons == (60, 120)  # sorted
    config, labels = fc.experiment()
    assert [e.label for e in config.envs] == ["T=60", "T=120"]
    assert [e.kwargs["horizon"] for e in config.envs] == [60, 120] and config.envs[0].kwargs["dim"] == 5
    by_label = {a.label: a for a in config.agents}
    assert by_label["dp_ucb eps=inf"].params == {"calibration": "paper", "epsilon": math.inf, "delta": 1e-3}
    assert labels["dp_ucb eps=2"] == ("dp_ucb", 2.0, "private")
    assert labels["random"] == ("random", math.inf, "reference") and "linucb" in by_label


@pytest.mark.parametrize(
    "changes, words",
    [
        ({"agents": ("nope",)}, "unknown agent"),
        ({"agents": ("linucb",)}, "not private"),
        ({"agents": ()}, "at least one private agent"),
        ({"references": ("dp_ucb",)}, "is a private agent"),
        ({"epsilons": (0.0, 1.0)}, "epsilons entry"),
        ({"epsilons": (-1.0,)}, "epsilons entry"),
        ({"epsilons": (1.0, 1.0)}, "must not repeat"),
        ({"epsilons": ()}, "at least one"),
        ({"horizons": (1,)}, "horizons entry"),
        ({"delta": 1.0}, "delta"),
        ({"env_kwargs": {"horizon": 10}}, "must not set 'horizon'"),
        ({"agent_params": {"dp_ucb": {"epsilon": 1.0}}}, "must not set epsilon"),
        ({"agent_params": {"lasso": {}}}, "neither in agents nor in references"),
        ({"seeds": 0}, "seeds"),
    ],
)
def test_bad_configurations_raise(changes, words):
    with pytest.raises((ValueError, TypeError), match=words):
        FrontierConfig(**{**SMALL, **changes})


def test_bad_agent_hyperparameters_fail_before_any_job(tmp_path):
    fc = FrontierConfig(**{**SMALL, "agent_params": {"dp_ucb": {"lam": -1.0}}})
    with pytest.raises(ValueError, match="lam"):
        run_frontier(fc, out=tmp_path, progress=False)
    assert not any(tmp_path.iterdir())


def _synthetic_results(extra=None, seeds=2):
    rows = []
    finals = {("dp_ucb", 1.0): [92, 88], ("dp_ucb", 4.0): [41, 39], ("dp_ucb", math.inf): [11, 9],
              ("random", math.inf): [101, 99], ("linucb", math.inf): [6, 4], **(extra or {})}
    finals = {k: (v * 3)[:seeds] for k, v in finals.items()}  # seeds > 2: the pattern repeated
    for (agent, eps), values in finals.items():
        role = "private" if agent == "dp_ucb" else "reference"
        for seed, v in enumerate(values):
            for t, frac in ((50, 0.5), (100, 1.0)):
                rows.append({"env_id": "e", "agent": agent, "seed": seed, "t": t, "reward": 0.0, "regret": 0.0,
                             "cumulative_reward": 0.0, "cumulative_regret": v * frac, "epsilon": eps,
                             "horizon": 100, "role": role})
    return pd.DataFrame(rows, columns=list(RESULT_COLUMNS))


def test_frontier_table_and_first_epsilon_beating_random():
    table = frontier_table(_synthetic_results())
    row = table[(table["agent"] == "dp_ucb") & (table["epsilon"] == 4.0)].iloc[0]
    assert row["final_regret_mean"] == 40.0 and row["seeds"] == 2
    assert row["final_regret_ci95"] == pytest.approx(12.7062 * 1.0, rel=1e-4)  # t_{0.975,1} * sd/sqrt(2), sd = sqrt 2
    assert set(table["role"]) == {"private", "reference"} and len(table) == 5
    results = _synthetic_results(seeds=6)
    beats = first_epsilon_beating(results)
    (row,) = beats.to_dict("records")
    assert {k: row[k] for k in ("agent", "horizon", "factor", "epsilon", "ratio_at_epsilon", "seeds",
                                "random_regret")} == {"agent": "dp_ucb", "horizon": 100, "factor": 2.0,
                                                      "epsilon": 4.0, "ratio_at_epsilon": 2.5, "seeds": 6,
                                                      "random_regret": 100.0}
    assert 101 / 41 <= row["ratio_low"] < 2.5 < row["ratio_high"] <= 99 / 39
    assert row["point_epsilon"] == 4.0
    off_only = first_epsilon_beating(results, factor=5.0).iloc[0]  # only noise off (ratio 10) reaches 5x
    assert math.isnan(off_only["epsilon"]) and math.isnan(off_only["point_epsilon"])
    two = first_epsilon_beating(_synthetic_results()).iloc[0]  # 2 seeds: too few for a bootstrap claim
    assert math.isnan(two["epsilon"]) and two["point_epsilon"] == 4.0 and two["seeds"] == 2
    (line,) = beating_lines(first_epsilon_beating(_synthetic_results()), _synthetic_results())
    assert "undetermined: 2 seeds" in line and "(2.5, 2 seeds: no interval)" in line
    never = first_epsilon_beating(results, factor=20.0).iloc[0]
    assert math.isnan(never["epsilon"]) and math.isnan(never["ratio_at_epsilon"])
    with pytest.raises(ValueError, match="reference agent 'greedy'"):
        first_epsilon_beating(results, reference="greedy")
    with pytest.raises(ValueError, match="per-seed results"):
        first_epsilon_beating(table)


def test_first_epsilon_beating_uses_the_lower_bound_of_the_ratio_interval():
    """Issue 12: the mean ratio reaching 2x is not enough; its paired-bootstrap interval must exclude less."""
    results = _synthetic_results({("dp_ucb", 2.0): [30, 70]}, seeds=6)  # mean ratio 100/50 = 2; 101/30, 99/70
    row = first_epsilon_beating(results).iloc[0]
    assert row["point_epsilon"] == 2.0 and row["epsilon"] == 4.0
    (line,) = beating_lines(first_epsilon_beating(results), results)
    assert line.startswith("dp_ucb at T = 100: first beats uniform random by 2x at epsilon = 4: ratio random/agent "
                           f"2.5 [{row['ratio_low']:.3g}, {row['ratio_high']:.3g}] (95% paired bootstrap over 6 "
                           "seeds; lower bound >= 2)")
    assert "the mean ratio reaches 2x at epsilon = 2 (2 [1." in line and "n=6)), but its interval" in line
    assert "does not exclude less" in line


def test_plot_frontier_writes_a_figure(tmp_path):
    path = plot_frontier(frontier_table(_synthetic_results()), tmp_path / "f.png", title="t")
    assert path.stat().st_size > 5000


def test_run_frontier_writes_the_run_directory_and_resumes(tmp_path):
    fc = FrontierConfig(**SMALL)
    result = run_frontier(fc, out=tmp_path, progress=False)
    run_dir = tmp_path / "frontier"
    assert result.run_dir == run_dir
    for name in ("results.csv", "frontier.csv", "frontier.png", "manifest.json", "sweep/manifest.json"):
        assert (run_dir / name).is_file(), name
    results = pd.read_csv(run_dir / "results.csv")
    assert tuple(results.columns) == RESULT_COLUMNS
    assert set(results["horizon"]) == {60, 120} and set(results["env_id"]) == {"dpbandit/SharedLinear-v0"}
    assert set(results["epsilon"]) == {2.0, math.inf} and set(results["agent"]) == {"dp_ucb", "random", "linucb"}
    assert len(results.groupby(["agent", "epsilon", "horizon", "seed"])) == 4 * 2 * 2
    table = pd.read_csv(run_dir / "frontier.csv")
    assert len(table) == 8 and set(table["seeds"]) == {2}
    priv = table[(table["agent"] == "dp_ucb") & (table["epsilon"] == 2.0)]
    assert set(priv["guarantee"]) == {"JDP"} and np.allclose(priv["reported_epsilon"], 2.0, rtol=1e-3)
    assert set(priv["delta"]) == {1 / 60, 1 / 120}
    assert set(table.loc[table["role"] == "reference", "guarantee"]) == {"none"}
    manifest = _strict_json(run_dir / "manifest.json")
    assert manifest["status"] == "complete" and manifest["config"]["epsilons"] == ["2", "inf"]
    assert set(manifest["privacy"]) == {f"dp_ucb eps={e} T={T}" for e in ("2", "inf") for T in (60, 120)}
    assert manifest["privacy"]["dp_ucb eps=2 T=60"]["guarantee"] == "JDP"
    assert {r["horizon"] for r in manifest["beats_random_2x"]} == {60, 120}
    # a second run of the same sweep resumes every job and reproduces the tables
    again = run_frontier(fc, out=tmp_path, progress=False)
    assert _strict_json(run_dir / "manifest.json")["resumed_jobs"] == 16
    pd.testing.assert_frame_equal(again.frontier, result.frontier)
    # a different sweep under the same name is refused unless fresh
    other = FrontierConfig(**{**SMALL, "epsilons": (math.inf,)})
    with pytest.raises(ValueError, match="different experiment"):
        run_frontier(other, out=tmp_path, progress=False)
    assert len(run_frontier(other, out=tmp_path, progress=False, fresh=True).frontier) == 6


def test_run_in_memory():
    result = run_frontier(FrontierConfig(**{**SMALL, "horizons": (40,), "references": ("random",)}), out=False,
                          progress=False)
    assert result.run_dir is None and result.plot_path is None and len(result.frontier) == 3


class _WindowAgent(DPUCB):
    name = "test_window"

    def privacy_report(self):
        if math.isinf(self.epsilon):
            return super().privacy_report()
        return PrivacyReport(guarantee="window-JDP", epsilon=self.epsilon, delta=self.delta, window=10)


class _PublishedAgent(DPUCB):
    name = "test_published"

    def privacy_report(self):
        return PrivacyReport(guarantee="none", epsilon=math.inf, delta=self.delta,
                             calibration_mode=PUBLISHED_CODE_SETTING)


def test_mixed_guarantees_and_published_settings_are_refused(monkeypatch, tmp_path):
    monkeypatch.setitem(AGENTS, "test_window", _WindowAgent)
    monkeypatch.setitem(AGENTS, "test_published", _PublishedAgent)
    with pytest.raises(ValueError, match="different guarantee types"):
        run_frontier(FrontierConfig(**{**SMALL, "agents": ("dp_ucb", "test_window")}), out=tmp_path, progress=False)
    with pytest.raises(ValueError, match="not a correctly calibrated private run"):
        run_frontier(FrontierConfig(**{**SMALL, "agents": ("test_published",)}), out=tmp_path, progress=False)
    assert not any(tmp_path.iterdir())


def test_cli_prints_the_verdict_and_the_files(tmp_path, capsys):
    argv = ["--agents", "dp_ucb", "--env", "dpbandit/SharedLinear-v0", "--epsilons", "inf", "--horizons",
            "50", "1e2", "--seeds", "2", "--n-jobs", "1", "--out", str(tmp_path), "--no-progress"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "dp_ucb at T = 100:" in out and "uniform random by 2x" in out
    assert "Frontier plot:" in out and (tmp_path / "frontier" / "frontier.png").is_file()
    table = pd.read_csv(tmp_path / "frontier" / "frontier.csv")
    assert set(table["horizon"]) == {50, 100} and set(table["epsilon"]) == {math.inf}


def test_cli_errors(tmp_path, capsys):
    assert main(["--agents", "linucb", "--out", str(tmp_path)]) == 2
    assert "not private" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--epsilons", "0"])
    with pytest.raises(SystemExit):
        main(["--horizons", "1.5"])


@pytest.mark.slow
def test_quick_mode_is_small(tmp_path, capsys):
    # Bounded work, not wall time (robust to machine load): (3 epsilons + 2 references) x 2 horizons x 2 seeds,
    # at most 2500 rounds per (agent, seed).
    assert main(["--quick", "--agents", "dp_ucb", "--out", str(tmp_path), "--no-progress"]) == 0
    results = pd.read_csv(tmp_path / "frontier-quick" / "results.csv")
    jobs = results.groupby(["agent", "epsilon", "horizon", "seed"])["t"].max()
    assert len(jobs) == (3 + 2) * 2 * 2 and jobs.sum() == (3 + 2) * 2 * (500 + 2000)
    table = pd.read_csv(tmp_path / "frontier-quick" / "frontier.csv")
    assert set(table["horizon"]) == {500, 2000} and set(table["epsilon"]) == {1.0, 16.0, math.inf}
    assert set(table["seeds"]) == {2}


def test_batched_and_seed_by_seed_sweeps_write_byte_identical_results(tmp_path):
    """Issue 15's determinism acceptance: the sweep's results.csv is the same bytes with batch = "auto" (agents with
    a batched form run their seeds in lockstep) and "off", for every private agent of the acceptance sweep."""
    grid = dict(agents=("dp_hdb", "dp_ucb", "fliphat", "episodic_ridge"), epsilons=(1.0, math.inf), horizons=(300,),
                seeds=3, references=("random", "linucb"), n_jobs=1, checkpoints=10)
    paths = [run_frontier(FrontierConfig(**grid, batch=mode, name=f"f-{mode}"), out=tmp_path, progress=False)
             .run_dir / "results.csv" for mode in ("auto", "off")]
    assert paths[0].read_bytes() == paths[1].read_bytes()


def test_default_agents_are_the_private_agents_that_run_on_the_environment():
    """Before: the default sweep built every registered private agent and stopped at the first that refuses the
    environment (episodic_glm on Gaussian rewards: 'dpbandit frontier --quick' failed). Now the refusing ones are
    left out, stated in the manifest's config and in the command's output."""
    fc = FrontierConfig(env_id="dpbandit/SharedLinear-v0", env_kwargs={"dim": 3, "n_arms": 2}, horizons=(60,))
    assert "episodic_glm" in fc.refused and "episodic_glm" not in fc.agents and "dp_ucb" in fc.agents
    assert "rewards" in fc.refused["episodic_glm"] and fc.to_dict()["refused"] == fc.refused
    named = FrontierConfig(env_id="dpbandit/SharedLinear-v0", agents=("episodic_glm",), horizons=(60,))
    with pytest.raises(ValueError, match="episodic_glm fits a logistic model"):  # named explicitly: refused
        run_frontier(named, out=False, progress=False)
