"""Paired contrasts of a saved run against a baseline agent (``dpbandit compare RUN --baseline random``).

Agents of a run share seeds (common random numbers: the same instance, users and reward noise per seed), so the
difference between an agent and the baseline is taken seed by seed and its interval comes from the spread of those
paired differences (:func:`dpbandit.experiment.stats.paired_difference`), much tighter than two independent
intervals. A difference is a "beats" only when its interval excludes zero (:func:`~dpbandit.experiment.stats.verdict`).

Every cell of a run is compared: one row per (environment, agent). A frontier run (``dpbandit frontier``) pools its
(epsilon, horizon) cells under one agent name in its top-level ``results.csv``; it is compared from its ``sweep/``
run, where every horizon is an environment (``T=...``) and every epsilon an agent (``dp_ucb eps=...``), each with
its own privacy report. A run whose table holds several jobs for one (environment, agent, seed) that cannot be
told apart is refused in one line naming the columns that differ; an environment without the baseline is named in
the output, never dropped silently.
"""

from __future__ import annotations

import math

import pandas as pd

from dpbandit.experiment.results import privacy_columns
from dpbandit.experiment.run_data import LoadedRun, final_values, load_run
from dpbandit.experiment.stats import paired_difference, verdict

__all__ = ["compare_run", "format_comparison", "resolve_agent"]


def resolve_agent(run: LoadedRun, name: str) -> str:
    """The agent label of ``run`` named ``name``: a label, or an agent type used by exactly one agent."""
    labels = list(dict.fromkeys(run.results.rename(columns={"learner": "agent"})["agent"]))
    if name in labels:
        return name
    by_type = [label for label, kind in run.agent_types().items() if kind == name and label in labels]
    if len(by_type) == 1:
        return by_type[0]
    hint = f"; type {name!r} is used by {by_type}: name one label" if by_type else ""
    raise ValueError(f"baseline {name!r} is not an agent of this run{hint}; agents: {labels}")


def compare_run(run: LoadedRun, baseline: str, *, level: float = 0.95,
                value: str = "cumulative_regret") -> pd.DataFrame:
    """One row per (environment, agent other than the baseline): the agent's privacy (guarantee, ε, δ), mean
    final ``value`` of agent and baseline, the paired difference ``agent - baseline`` with its ``level`` interval
    over common seeds, and the verdict line (lower ``value`` is better)."""
    run, source = _cell_run(run)
    base = resolve_agent(run, baseline)
    results = run.results.rename(columns={"stream": "env_id", "learner": "agent"})  # OCO runs name them so
    _check_one_job_per_key(results, run.run_dir)
    finals = final_values(results, value)
    order = {label: i for i, label in enumerate(dict.fromkeys(results["agent"]))}  # configuration order
    finals = finals.sort_values("agent", key=lambda s: s.map(order), kind="stable")
    rows, skipped = [], []
    for env_id, group in finals.groupby("env_id", sort=False):
        per_agent = {agent: g.set_index("seed")[value] for agent, g in group.groupby("agent", sort=False)}
        if base not in per_agent:
            skipped.append(env_id)
            continue
        for agent, values in per_agent.items():
            if agent == base:
                continue
            diff = paired_difference(values, per_agent[base], level=level)
            try:
                report = run.report(env_id, agent)
                privacy = privacy_columns(None if report is None else report.to_dict())
            except KeyError:  # never claim "non-private" for an agent whose report is missing
                privacy = {"guarantee": "unknown", "epsilon": math.nan, "delta": math.nan, "rho": math.nan,
                           "epsilon_from": ""}
            rows.append({
                "env_id": env_id, "agent": agent, **privacy,
                "seeds": diff.n, f"{value}": float(values.mean()), f"baseline_{value}": float(per_agent[base].mean()),
                "difference": diff.estimate, "low": diff.low, "high": diff.high,
                "verdict": verdict(agent, base, values, per_agent[base], level=level,
                                   quantity=value.replace("_", " ")) if diff.n else "",
            })
    if not rows:
        raise ValueError(f"no agent shares seeds with baseline {base!r}")
    table = pd.DataFrame(rows)
    table.attrs.update(baseline=base, level=level, value=value, skipped=skipped, source=source)
    return table


#: Columns of a frontier run's top-level results (``dpbandit frontier``): its cells are (epsilon, horizon).
FRONTIER_COLUMNS = frozenset({"epsilon", "horizon", "role"})


def _cell_run(run: LoadedRun) -> tuple[LoadedRun, str]:
    """The run whose (environment, agent) pairs are the cells to compare, and a line saying where it came from: a
    frontier run's ``sweep/`` run (one environment per horizon, one agent label per epsilon), else ``run``."""
    if not FRONTIER_COLUMNS <= set(run.results.columns):
        return run, ""
    sweep = run.run_dir / "sweep"
    if not (sweep / "manifest.json").is_file():
        raise ValueError(f"{str(run.run_dir)!r} is a frontier run whose results pool every (epsilon, horizon) cell "
                         f"under one agent name, and its sweep/ run, which labels each cell, is missing: compare "
                         f"needs {str(sweep)!r} (rerun 'dpbandit frontier' with the same options to restore it)")
    return load_run(sweep), (f"frontier run: every (epsilon, horizon) cell compared, from {str(sweep)!r} "
                             "(environment T=<horizon>, agent '<name> eps=<epsilon>')")


def _check_one_job_per_key(results: pd.DataFrame, run_dir) -> None:
    """Refuse (one line) a table holding several jobs for one (environment, agent, seed): their final values would
    be mixed up. The message names the columns that tell those jobs apart."""
    keys = [k for k in ("env_id", "agent", "seed", "t") if k in results.columns]
    repeated = results.duplicated(keys, keep=False)
    if not repeated.any():
        return
    rows = results[repeated]
    varying = [c for c in rows.columns if c not in keys and rows.groupby(keys)[c].nunique(dropna=False).gt(1).any()]
    first = rows.iloc[0]
    raise ValueError(f"{str(run_dir)!r} holds several jobs per (environment, agent, seed), e.g. {first['env_id']!r} / "
                     f"{first['agent']!r} / seed {first['seed']}, told apart only by {varying}: compare pairs jobs by "
                     "environment, agent and seed; give each cell its own agent or environment label")


def format_comparison(table: pd.DataFrame) -> str:
    """The console text of :func:`compare_run`: a table and one verdict line per agent."""
    value, base, level = table.attrs["value"], table.attrs["baseline"], table.attrs["level"]
    shown = table.drop(columns=["verdict", "rho"]).rename(columns={
        value: "final", f"baseline_{value}": "baseline", "difference": f"{value.split('_')[-1]} - baseline"})
    lines = [f"Paired differences against {base!r} over common seeds ({level:.0%} paired-t intervals; lower "
             f"{value.replace('_', ' ')} is better)"]
    if table.attrs.get("source"):
        lines.append(table.attrs["source"])
    lines += [f"not compared: {base!r} did not run in environment {env!r}" for env in table.attrs.get("skipped", ())]
    lines.append("")
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        lines.append(shown.to_string(index=False, float_format=lambda x: f"{x:.4g}" if math.isfinite(x) else str(x)))
    several = table["env_id"].nunique() > 1  # then every verdict names its environment (cell)
    lines += ["", *(f"{env}: {v}" if several and v else v for env, v in zip(table["env_id"], table["verdict"]))]
    return "\n".join(lines)
