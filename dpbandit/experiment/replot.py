"""``dpbandit plot RUN_DIR``: redraw the figure of any run directory dpbandit writes, or refuse in one line.

The kind of a run directory is read from its files (:func:`run_kind`):

* ``"bandit"`` — ``dpbandit run`` and ``dpbandit reproduce figure-5.1`` (the runner's tidy ``results.csv``): regret
  curves, one panel per environment; private and non-private series told apart by the privacy reports in the
  manifest (a report with guarantee "none" is not private), random play and non-private references drawn neutral;
* ``"frontier"`` — ``dpbandit frontier`` (``results.csv`` with ``epsilon``, ``horizon`` and ``role``): regret curves
  faceted by (horizon, epsilon), each panel with the private agents at that epsilon and the references of that
  horizon (never pooling epsilons into one curve), and the frontier figure redrawn from ``frontier.csv``;
* ``"oco"`` — ``dpbandit oco`` (manifest kind "oco"): OCO regret curves, one panel per stream;
* ``"bench"`` — ``dpbandit bench`` (manifest kind "bench"): regret curves, one panel per scenario, of the agents
  that ran in the bench (the shipped reference holds final regrets only, no curves), and each scenario's
  privacy-regret figure redrawn from ``scores.csv``;
* ``"table-5.1"`` — refused: that reproduction is a table (``table.md``), it has no figure.

Anything else is refused with a :class:`ValueError` naming the directory (the CLI prints it as one line).
"""

from __future__ import annotations

import contextlib
import math
from pathlib import Path

import pandas as pd

from dpbandit.files import read_manifest, read_table, run_file
from dpbandit.experiment.results import COLUMNS

__all__ = ["KINDS", "run_kind", "replot"]

#: Run kinds :func:`replot` draws (``"table-5.1"`` is recognised and refused).
KINDS: tuple[str, ...] = ("bandit", "frontier", "oco", "bench")


def _manifest(run_dir: Path) -> dict:
    return read_manifest(run_dir, required=False) or {}


def _results_path(run_dir: Path, manifest: dict) -> Path:
    """The run's results table: the manifest's ``files["results"]`` (csv or parquet), else ``results.csv``."""
    return run_file(run_dir, manifest, "results", "results.csv")


def _columns(run_dir: Path, manifest: dict) -> set[str]:
    table = _results_path(run_dir, manifest)
    if not table.is_file():
        return set()
    return set(read_table(table).columns)


def run_kind(run_dir: str | Path) -> str:
    """The kind of run directory ``run_dir``: one of :data:`KINDS` or ``"table-5.1"``; ``ValueError`` otherwise."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ValueError(f"run_dir {str(run_dir)!r} has no results.csv (it is not a folder); pass a folder printed "
                         "by a dpbandit command")
    manifest = _manifest(run_dir)
    kind = manifest.get("kind")
    if kind == "reproduce table-5.1":
        return "table-5.1"
    if kind == "bench":
        return "bench"
    columns = _columns(run_dir, manifest)
    if kind == "oco" or {"stream", "learner", "cumulative_regret"} <= columns:
        return "oco"
    if {"epsilon", "horizon", "role"} <= columns and set(COLUMNS) <= columns:
        return "frontier"
    if set(COLUMNS) <= columns:
        return "bandit"
    if not columns:
        raise ValueError(f"run_dir {str(run_dir)!r} has no results.csv; pass a folder printed by a dpbandit command")
    raise ValueError(f"{str(_results_path(run_dir, manifest))!r} holds no regret curves: this kind of run has no regret plot; "
                     "its manifest.json lists the files it wrote")


def _private_from_manifest(manifest: dict, labels) -> dict[str, bool]:
    """label -> private, from the manifest's privacy reports ("env / label" -> report or None)."""
    private = dict.fromkeys(labels, False)
    for key, report in (manifest.get("privacy") or {}).items():
        label = key.split(" / ", 1)[-1]
        if label in private and isinstance(report, dict):
            private[label] = private[label] or report.get("guarantee", "none") != "none"
    return private


def _frontier_panels(results: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, bool]]:
    """The sweep's curves, one panel per (horizon, epsilon) with the references of that horizon in every panel."""
    frames, private = [], {}
    for T in sorted(results["horizon"].unique()):
        at_T = results[results["horizon"] == T]
        refs = at_T[at_T["role"] == "reference"]
        for eps in sorted(at_T.loc[at_T["role"] == "private", "epsilon"].unique()):
            name = f"T = {T:,}, ε = " + ("inf (noise off)" if math.isinf(eps) else f"{eps:g}")
            agents = at_T[(at_T["role"] == "private") & (at_T["epsilon"] == eps)]
            frames.append(pd.concat([agents, refs]).assign(panel=name))
            for agent in agents["agent"].unique():  # the sweep's agents (their noise-off panel says so)
                private[agent] = True
    for agent in results.loc[results["role"] == "reference", "agent"].unique():
        private[agent] = False
    return pd.concat(frames, ignore_index=True), private


def replot(run_dir: str | Path, output: str | Path | None = None, *, title: str | None = None,
           overwrite: bool = False) -> list[Path]:
    """Redraw the figure(s) of ``run_dir`` (see the module docstring); returns the written paths. ``output``
    replaces the default path of the regret figure (``RUN_DIR/regret.png``): a file of the user's, written through
    the output layer as a single-file output (an existing file is replaced only with ``overwrite``; never one of the
    run's files). Figures inside the run folder are written under the run's lock."""
    from dpbandit.experiment.frontier_report import plot_frontier
    from dpbandit.experiment.plots import plot_regret
    from dpbandit.experiment.rundir import run_lock

    run_dir = Path(run_dir)
    kind = run_kind(run_dir)
    if kind == "table-5.1":
        raise ValueError(f"run_dir {str(run_dir)!r} is a table-5.1 reproduction: it is a table "
                         f"({run_dir / 'table.md'}), there is no figure to draw")
    manifest = _manifest(run_dir)
    results_path = _results_path(run_dir, manifest)
    results = read_table(results_path)
    if output is None:
        target, options = run_dir / "regret.png", {}
    else:
        inputs = [p for p in run_dir.iterdir() if p.is_file()]  # never over a file of the run it reads
        target, options = Path(output), {"kind": "single", "overwrite": overwrite, "inputs": inputs}
    frontier = None
    if kind == "frontier" and (run_dir / "frontier.csv").is_file():
        frontier = read_table(run_dir / "frontier.csv")
    writes_in_run = output is None or frontier is not None or kind == "bench"
    with run_lock(run_dir) if writes_in_run else contextlib.nullcontext():
        if kind == "oco":
            from dpbandit.experiment.oco import OCO_REGRET

            frame = results.rename(columns={"stream": "env_id", "learner": "agent"})
            return [plot_regret(frame, target, ylabel=OCO_REGRET, title=title or f"{run_dir.name}: OCO regret",
                                **options)]
        if kind == "bandit":
            private = _private_from_manifest(manifest, results["agent"].unique())
            return [plot_regret(results, target, title=title or run_dir.name, private=private, **options)]
        if kind == "bench":
            return _replot_bench(run_dir, manifest, results, target, title, options)
        frame, private = _frontier_panels(results)
        paths = [plot_regret(frame, target, title=title or f"{run_dir.name}: regret curves per (T, ε)",
                             private=private, facet="panel", **options)]
        if frontier is not None:
            paths.append(plot_frontier(frontier, run_dir / "frontier.png", title=title or run_dir.name))
        return paths


def _replot_bench(run_dir: Path, manifest: dict, results: pd.DataFrame, target: Path, title: str | None,
                  options: dict) -> list[Path]:
    """A bench run's regret curves (agents with more than one recorded round: the reference's rows are final values
    only) and its privacy-regret figures, one per scenario, from the verified ``scores.csv``."""
    from dpbandit.experiment.bench.scorecard import scenario_figure
    from dpbandit.experiment.plots import plot_regret
    from dpbandit.files import save_figure

    rounds = results.groupby(["env_id", "agent"])["t"].transform("nunique")
    curves = results[rounds > 1]
    private = _private_from_manifest(manifest, curves["agent"].unique())
    paths = [plot_regret(curves, target, title=title or f"{run_dir.name}: regret curves per scenario", private=private,
                         **options)]
    scores = read_table(run_file(run_dir, manifest, "scores", "scores.csv"))
    for scenario in dict.fromkeys(scores["scenario"]):
        name = manifest.get("files", {}).get(f"figure {scenario}")
        if name:
            paths.append(save_figure(scenario_figure(scores, scenario), run_file(run_dir, manifest,
                                                                                 f"figure {scenario}", name)))
    return paths
