"""``dpbandit bench`` (issue 27): the suite's scenarios, the shipped references and their staleness, the scores'
known answers, a tiny run end to end (scorecard, resume, plot, compare) and a plugin agent scored against the
shipped reference on the same seeds."""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path

import gymnasium
import numpy as np
import pandas as pd
import pytest

import dpbandit.envs  # noqa: F401
from dpbandit.experiment import bench
from dpbandit.experiment.bench import references as refs
from dpbandit.experiment.bench import runner as bench_runner
from dpbandit.experiment.bench.runner import BenchConfig, run_bench
from dpbandit.experiment.bench.scores import score_table
from dpbandit.experiment.cli import main
from dpbandit.experiment.stats import BOOTSTRAP_MIN_SEEDS
from tests.one_line import one_line_error

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]


def _env(name: str, size: str):
    spec = bench.scenario(name, size)
    return gymnasium.make(spec.id, **spec.kwargs).unwrapped


def test_the_suite_has_the_scenarios_the_issue_lists():
    names = bench.scenario_names()
    assert bench.suite_name() == "dpbandit-v1" and len(names) >= 10 and len(set(names)) == len(names)
    found = set()
    for name in names:
        sc = bench.load_scenario(name)
        assert len(sc.why) > 80, name  # the docs' sentence
        for size in bench.SIZES:
            s = sc.sizes[size]
            assert s.seeds >= BOOTSTRAP_MIN_SEEDS and all(math.isfinite(e) and e > 0 for e in s.epsilons)
            c = _env(name, size).constants
            assert c.horizon == s.horizon
        assert sc.sizes["full"].horizon >= sc.sizes["quick"].horizon
        c, kw = _env(name, "quick").constants, sc.env_kwargs
        found |= {("figure-5.1" if sc.env_id.startswith("dpbandit/HanFigure51") else None),
                  ("fliphat" if c.structure == "shared" and c.dim == 400 and kw.get("contexts") == "ar" else None),
                  ("dense" if c.structure == "shared" and kw.get("theta", "dense") == "dense" else None),
                  (f"logistic-{kw.get('contexts')}-{c.dim}" if c.link == "logistic" else None),
                  ("probit" if c.link == "probit" else None),
                  ("classification" if sc.env_id in ("dpbandit/Digits-v0", "dpbandit/BreastCancer-v0") else None),
                  ("diabetes" if sc.env_id == "dpbandit/Diabetes-v0" else None),
                  ("many arms" if c.n_arms >= 50 else None)}
    assert found >= {"figure-5.1", "fliphat", "dense", "logistic-ar-100", "logistic-ar-400",
                     "logistic-equicorrelated-100", "logistic-equicorrelated-400", "probit", "classification",
                     "diabetes", "many arms"}
    assert bench.scenario("sparse-logistic-ar-d400", "full").kwargs["horizon"] == 20_000  # issue 28's T = 2e4


def test_an_unknown_scenario_is_named():
    with pytest.raises(ValueError, match="unknown scenario 'nope'.*han-figure-5.1"):
        bench.scenario("nope")


def test_the_package_data_ships_configs_and_references():
    """pyproject's package data covers every file the bench reads (tests/test_release.py builds no wheel)."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    globs = data["dpbandit.experiment.bench"]
    folder = ROOT / "dpbandit" / "experiment" / "bench"
    shipped = {p.relative_to(folder).as_posix() for g in globs for p in folder.glob(g)}
    needed = {"suite.toml", *(f"scenarios/{n}.toml" for n in bench.scenario_names()), "references/quick.csv",
              "references/quick.json"}
    assert needed <= shipped


def test_the_shipped_references_are_current():
    """Fails when a reference is stale: regenerate it with the command it names."""
    assert refs.load_reference("quick") is not None
    for size in bench.SIZES:
        if refs.load_reference(size) is not None:
            problems = refs.reference_problems(size)
            assert not problems, f"stale {size} reference ({'; '.join(problems)}): run " + \
                refs.COMMAND.format(size=size)


def test_a_stale_reference_is_named_and_refused(monkeypatch, tmp_path, capsys):
    ref = refs.load_reference("quick")
    digits = ref.meta["scenarios"]["digits"]
    scenarios = {**ref.meta["scenarios"], "digits": {**digits, "config_hashes": {
        **digits["config_hashes"], "random": "0" * 64}}}
    stale = dataclasses.replace(ref, meta={**ref.meta, "dpbandit": "0.0.1", "scenarios": scenarios})
    problems = refs.reference_problems("quick", stale)
    assert any("made by dpbandit 0.0.1" in p for p in problems)
    assert any("scenario 'digits', agent 'random' changed (config hash 000000000000" in p for p in problems)
    monkeypatch.setattr(refs, "load_reference", lambda size: stale)
    code = main(["bench", "--quick", "--agent", "episodic_ridge", "--scenarios", "dense-shared-linear", "--out",
                 str(tmp_path), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2
    one_line_error(err)
    assert "python -m dpbandit.experiment.bench.make_references --size quick" in err and "--no-reference" in err
    assert not any(tmp_path.iterdir())  # refused before anything was written


def test_a_new_built_in_agent_makes_the_reference_incomplete_not_unusable(monkeypatch):
    """The test of the shipped references fails (regenerate them), a bench with --agent still reads the other rows."""
    monkeypatch.setattr(refs, "builtin_agents", lambda: ("dp_ucb", "dp_hdb", "episodic_ridge", "fliphat", "new"))
    assert refs.reference_problems("quick") == ["built-in private agent(s) ['new'] are not in it"]
    assert refs.reference_problems("quick", missing_ok=True) == []


def _finals(values: dict[str, list[float]], scenario: str = "s") -> pd.DataFrame:
    rows = []
    for label, regrets in values.items():
        stem, eps = (label.split(" eps=") + ["inf"])[:2]
        for seed, r in enumerate(regrets):
            rows.append({"scenario": scenario, "agent": label, "stem": stem, "epsilon": float(eps), "seed": seed,
                         "horizon": 100, "cumulative_regret": r, "cpu_seconds": 0.002, "source": "this run"})
    return pd.DataFrame(rows)


def test_scores_known_answers():
    rand = [10.0, 12.0, 14.0, 16.0, 18.0]
    finals = _finals({"random": rand, "a eps=1": [0.5 * r for r in rand], "a eps=inf": [0.25 * r for r in rand],
                      "b eps=1": [r + 1.0 for r in rand]})
    report = {"guarantee": "JDP", "epsilon": 1.0, "delta": 1e-5, "rho": 0.1, "privacy_unit": "user",
              "conversion": "CKS20"}
    scores = score_table(finals, {"s / a eps=1": report}, refused={"s / c": "C needs the disjoint structure"},
                         noise_off={"s / b": "epsilon must be finite"})
    assert scores.loc[scores["agent"] == "c", "note"].tolist() == ["refused: C needs the disjoint structure"]
    scores = scores.set_index(["agent", "epsilon"])
    a = scores.loc[("a", 1.0)]
    assert (a["ratio_random"], a["ratio_random_low"], a["ratio_random_high"]) == pytest.approx((0.5, 0.5, 0.5))
    assert a["verdict_random"].startswith("a eps=1 beats uniform random")
    assert (a["ratio_noise_off"], a["ratio_noise_off_low"]) == pytest.approx((2.0, 2.0))
    assert a["verdict_noise_off"].startswith("a eps=inf beats a eps=1")
    assert (a["guarantee"], a["reported_epsilon"], a["unit"]) == ("JDP", 1.0, "user")
    assert a["cpu_us_per_round"] == pytest.approx(20.0)
    assert scores.loc[("a", math.inf), "verdict_noise_off"] == "n/a: this is the noise-off version"
    b = scores.loc[("b", 1.0)]
    assert b["ratio_random"] == pytest.approx(15 / 14) and b["verdict_random"].startswith("uniform random beats b")
    assert b["verdict_noise_off"] == "n/a: no noise-off version (epsilon must be finite)"
    few = score_table(finals[finals["seed"] < 3], {}).set_index(["agent", "epsilon"]).loc[("a", 1.0)]
    assert few["ratio_random"] == pytest.approx(0.5) and np.isnan(few["ratio_random_low"])  # < 5 seeds: no interval


TINY = ["bench", "--tiny", "--n-jobs", "1", "--no-progress"]


def test_a_tiny_bench_writes_its_scorecard_resumes_and_is_plotted_and_compared(tmp_path, capsys):
    assert main([*TINY, "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    run = tmp_path / "bench-tiny"
    assert f"Scorecard:    {run / 'scorecard.md'}" in out and "ratio_random_low" in out and "epsilon" in out
    scores = pd.read_csv(run / "scores.csv")
    ran = scores[scores["source"] == "this run"]
    assert set(zip(ran["agent"], ran["epsilon"])) == {("random", math.inf), *(
        (a, e) for a in ("dp_ucb", "episodic_ridge", "fliphat") for e in (1.0, math.inf))}
    assert scores.loc[scores["agent"] == "dp_hdb", "note"].str.startswith("refused: DP-HDB needs the disjoint").all()
    private = ran[(ran["agent"] != "random") & (ran["epsilon"] == 1.0)]
    assert (private["guarantee"] == "JDP").all() and (private["seeds"] == 5).all()
    assert private["ratio_random_low"].le(private["ratio_random"]).all() and (private["cpu_us_per_round"] > 0).all()
    md = (run / "scorecard.md").read_text()
    assert "## Summary across scenarios" in md and "## dense-shared-linear" in md and "ratio to random [95%]" in md
    assert '<img src="figure-dense-shared-linear.png"' in (run / "scorecard.html").read_text()
    assert (run / "figure-dense-shared-linear.png").stat().st_size > 1000

    jobs = sorted((run / "scenarios" / "dense-shared-linear" / "jobs").glob("*.json"))
    stamps = [p.stat().st_mtime_ns for p in jobs]
    before = (run / "scores.csv").read_bytes()
    assert main([*TINY, "--out", str(tmp_path)]) == 0  # resumed: every job read back, the same scores
    assert [p.stat().st_mtime_ns for p in jobs] == stamps and (run / "scores.csv").read_bytes() == before

    capsys.readouterr()
    assert main(["plot", str(run)]) == 0
    assert f"Plot: {run / 'regret.png'}" in capsys.readouterr().out
    assert main(["compare", str(run), "--baseline", "random"]) == 0
    text = capsys.readouterr().out
    assert "dense-shared-linear" in text and "dp_ucb eps=inf beats random" in text


def test_another_bench_in_the_folder_is_refused(tmp_path, capsys):
    assert main([*TINY, "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    assert main([*TINY, "--epsilons", "2", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    one_line_error(err)
    assert "holds a different experiment" in err and "--fresh" in err


def test_a_plugin_agent_is_scored_against_the_shipped_reference(tmp_path):
    """Only the new agents run; random play and the built-in agents come from the shipped quick reference on the
    same seeds. Mine is episodic ridge renamed, so its finals equal the reference's episodic_ridge seed by seed."""
    bc = BenchConfig(size="quick", agents=("tests.experiment.bench_agent:Mine",
                                           "tests.experiment.bench_agent:NoNoiseOff"),
                     scenarios=("dense-shared-linear", "digits"), epsilons=(1.0,), n_jobs=1)
    result = run_bench(bc, out=tmp_path, progress=False)
    f = result.finals
    mine = "tests.experiment.bench_agent:Mine"
    for scenario, eps in [(s, e) for s in bc.scenarios for e in (1.0, math.inf)]:  # shared and disjoint
        g = f[(f["scenario"] == scenario) & (f["epsilon"] == eps)]
        ours = g[g["stem"] == mine].set_index("seed")["cumulative_regret"]
        theirs = g[g["stem"] == "episodic_ridge"].set_index("seed")["cumulative_regret"]
        assert len(ours) == 5 and ours.equals(theirs.loc[ours.index]), (
            f"the shipped reference's episodic_ridge rows of {scenario} are stale (the agent changed): "
            + refs.COMMAND.format(size="quick"))
    assert set(f.loc[f["source"] == "this run", "stem"]) == {mine, "tests.experiment.bench_agent:NoNoiseOff"}
    assert f.loc[f["stem"] == "random", "source"].str.startswith("reference (dpbandit").all()
    jobs = list((result.run_dir / "scenarios" / "dense-shared-linear" / "jobs").glob("*.json"))
    assert len(jobs) == 5 * 3  # Mine at 1 and inf, NoNoiseOff at 1: nothing else was recomputed
    s = result.scores[result.scores["scenario"] == "digits"].set_index(["agent", "epsilon"])
    assert s.loc[(mine, 1.0), "ratio_random"] == pytest.approx(s.loc[("episodic_ridge", 1.0), "ratio_random"])
    assert s.loc[("tests.experiment.bench_agent:NoNoiseOff", 1.0), "verdict_noise_off"] == (
        "n/a: no noise-off version (epsilon must be finite: this agent has no noise-off form)")
    manifest = (result.run_dir / "manifest.json").read_text()
    assert '"agent tests.experiment.bench_agent:Mine eps=1"' in manifest  # plugin versions recorded
    assert "reference" in manifest and result.scorecard.read_text().count("reference (dpbandit") > 0


def test_a_plugin_agent_is_scored_against_the_shipped_full_reference(tmp_path):
    """The full size as the quick one: only the plugin runs (2 seeds of the cheapest scenario here), its finals equal
    the full reference's episodic_ridge rows seed by seed, random play comes from the reference."""
    if refs.load_reference("full") is None:
        pytest.skip("no full reference is shipped")
    mine = "tests.experiment.bench_agent:Mine"
    bc = BenchConfig(size="full", agents=(mine,), scenarios=("han-figure-5.1",), epsilons=(1.0,), seeds=2, n_jobs=1)
    f = run_bench(bc, out=tmp_path, progress=False).finals
    for eps in (1.0, math.inf):
        g = f[f["epsilon"] == eps]
        ours = g[g["stem"] == mine].set_index("seed")["cumulative_regret"]
        theirs = g[g["stem"] == "episodic_ridge"].set_index("seed")["cumulative_regret"]
        assert list(ours.index) == [0, 1] and ours.equals(theirs.loc[ours.index]), refs.COMMAND.format(size="full")
    assert set(f.loc[f["source"] == "this run", "stem"]) == {mine}
    assert f.loc[f["stem"] == "random", "source"].str.startswith("reference (dpbandit").all()


def test_more_seeds_than_the_reference_are_refused(tmp_path):
    bc = BenchConfig(size="quick", agents=("tests.experiment.bench_agent:Mine",), scenarios=("digits",),
                     seeds=99, n_jobs=1)
    with pytest.raises(ValueError, match="reference of scenario 'digits' has 5 seeds"):
        run_bench(bc, out=tmp_path, progress=False)


def test_a_non_private_agent_is_refused():
    with pytest.raises(ValueError, match="agent 'linucb' is not private"):
        run_bench(BenchConfig(size="tiny", agents=("linucb",), use_reference=False), out=False, progress=False)


def test_the_references_command_regenerates_what_the_runner_reads(tmp_path, monkeypatch):
    """make_reference writes the files load_reference reads (here a tiny reference of one scenario)."""
    from dpbandit.experiment.bench import make_references

    monkeypatch.setattr(bench_runner, "scenario_names", lambda: ("dense-shared-linear",))
    monkeypatch.setattr(refs, "scenario_names", lambda: ("dense-shared-linear",))
    path = make_references.make_reference("tiny", out=str(tmp_path / "runs"), n_jobs=1, progress=False,
                                          folder=tmp_path / "refs")
    monkeypatch.setattr(refs, "_files", lambda size: (tmp_path / "refs" / f"{size}.csv",
                                                      tmp_path / "refs" / f"{size}.json"))
    assert path.is_file() and refs.reference_problems("tiny") == []
    ref = refs.load_reference("tiny")
    refused = {key.split(" / ")[1] for key in ref.refused()}
    assert "dp_hdb" in refused and set(ref.finals["stem"]) == {"random", *refs.builtin_agents()} - refused


def test_audit_gives_each_agent_a_verdict():
    """--audit: check_private_agent(..., audit=True) per scenario and agent at its smallest epsilon."""
    result = run_bench(BenchConfig(size="tiny", audit=True, n_jobs=1), out=False, progress=False)
    s = result.scores.dropna(subset=["epsilon"]).set_index(["agent", "epsilon"])  # not the refusals' rows
    for agent in ("dp_ucb", "episodic_ridge", "fliphat"):
        assert s.loc[(agent, 1.0), "audit"] == "audit: pass (100 samples; never a proof)"
        assert s.loc[(agent, math.inf), "audit"] == ""  # noise off is not audited


def test_an_agent_without_epsilon_runs_once_at_its_own_budget():
    """No epsilon hyperparameter: one run with its defaults, epsilon from its privacy report, noise off n/a."""
    fixed = "tests.experiment.bench_agent:FixedBudget"
    result = run_bench(BenchConfig(size="tiny", agents=(fixed,), use_reference=False, n_jobs=1), out=False,
                       progress=False)
    row = result.scores[result.scores["agent"] == fixed].iloc[0]
    assert len(result.scores) == 2 and (row["epsilon"], row["reported_epsilon"], row["guarantee"]) == (2.0, 2.0, "JDP")
    assert row["verdict_noise_off"] == "n/a: no noise-off version (the agent has no epsilon hyperparameter)"
    assert row["verdict_random"].startswith(f"{fixed} ") and np.isfinite(row["ratio_random"])


@pytest.mark.parametrize("size, scenario", [("quick", "dense-shared-linear"), ("quick", "diabetes"),  # shared, disjoint
                                            ("full", "han-figure-5.1")])  # the full size's cheapest (T = 1e4)
def test_the_shipped_reference_reproduces(size, scenario):
    """Every agent of the reference, rerun now on seed 0 at the first epsilon of the grid: the same final regret,
    bit for bit. Fails when an agent's results changed without a version bump: regenerate the reference."""
    from dpbandit.agents import make_agent
    from dpbandit.experiment.runner import simulate

    ref = refs.load_reference(size)
    if ref is None and size == "full":
        pytest.skip("no full reference is shipped")
    sc = bench.load_scenario(scenario)
    eps = sc.sizes[size].epsilons[0]
    f = ref.finals[(ref.finals["scenario"] == scenario) & (ref.finals["seed"] == 0)]
    assert len(f) > 0
    stale = []
    for stem in dict.fromkeys(f["stem"]):
        label, params = ("random", {}) if stem == "random" else (bench.agent_label(stem, eps), {"epsilon": eps})
        env = _env(scenario, size)
        frame = simulate(env, make_agent(stem, env, **sc.agent_params.get(stem, {}), **params), 0)
        expected = f.loc[f["agent"] == label, "cumulative_regret"].iloc[0]
        if frame["cumulative_regret"].iloc[-1] != expected:
            stale.append(f"{label}: {frame['cumulative_regret'].iloc[-1]!r} != {expected!r}")
    assert not stale, f"the shipped {size} reference is stale ({'; '.join(stale)}): " + refs.COMMAND.format(size=size)


def test_the_audit_streams_past_each_agents_first_release(monkeypatch):
    """An episodic agent whose first release comes after 30 users is audited on a stream that reaches it (it was
    "undetermined"); one that publishes only after MAX_AUDIT_ROUNDS users is undetermined, saying why."""
    import dataclasses

    from dpbandit.agents import make_agent
    from dpbandit.experiment.bench import runner
    from dpbandit.experiment.bench.suite import load_scenario

    env_spec = load_scenario("dense-shared-linear").env_spec("quick")
    env = runner.make_env(env_spec.id, **env_spec.kwargs)
    assert make_agent("episodic_ridge", env, epsilon=1.0, first_episode=100).first_release == 100
    assert make_agent("dp_ucb", env, epsilon=1.0).first_release == 1
    env.close()

    base = BenchConfig(size="tiny", audit=True, n_jobs=1, agents=("episodic_ridge",), use_reference=False)
    cell = runner.plan_cells(base, lambda name, n: 2)[0]
    agents = tuple(dataclasses.replace(a, params={**a.params, "first_episode": 31}) for a in cell.config.agents)
    late = [dataclasses.replace(cell, config=dataclasses.replace(cell.config, agents=agents))]
    (verdict,) = runner._audits(base, late).values()
    assert verdict == "audit: pass (100 samples; never a proof)"
    monkeypatch.setattr(runner, "MAX_AUDIT_ROUNDS", 16)  # the stream would need 32 users
    (verdict,) = runner._audits(base, late).values()
    assert verdict.startswith("audit: undetermined (first release after 31 users: the audit would stream 32, beyond "
                              "the 16 it may")
