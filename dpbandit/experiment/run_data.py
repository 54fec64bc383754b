"""Reading a saved run back: :func:`load_run` returns its tables, configuration and privacy reports.

A run directory (written by :func:`~dpbandit.experiment.runner.run_experiment`, ``dpbandit run`` and the commands
built on it) holds ``manifest.json``, ``results`` and ``summary`` tables (``.csv`` or ``.parquet``, named in the
manifest's ``files``) and ``jobs/``. A run that was interrupted before it finished has no results table yet: its
finished jobs (``jobs/*.csv`` with their ``.json`` integrity records; a damaged job is skipped with a warning) are
read instead and ``complete`` is False.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from dpbandit.files import read_manifest, read_table, run_file
from dpbandit.experiment.results import load_job
from dpbandit.privacy.report import PrivacyReport

__all__ = ["LoadedRun", "load_run", "final_values"]


@dataclass(frozen=True)
class LoadedRun:
    """A saved run: ``results`` (tidy, one row per env_id/agent/seed/t), ``summary`` (None for an unfinished
    run), ``config`` (the manifest's configuration, TOML layout), ``manifest``, ``privacy`` ("env / agent" ->
    :class:`~dpbandit.privacy.report.PrivacyReport`, None for non-private agents), ``complete``."""

    run_dir: Path
    results: pd.DataFrame
    summary: pd.DataFrame | None
    config: dict
    manifest: dict
    privacy: dict[str, PrivacyReport | None] = field(default_factory=dict)
    complete: bool = True

    def report(self, env_id: str, agent: str) -> PrivacyReport | None:
        """The privacy report of ``agent`` in ``env_id`` (None: non-private); ``KeyError`` when the run has none
        recorded for it."""
        for key in (f"{env_id} / {agent}", f"{env_id}/{agent}"):  # bandit and OCO manifests
            if key in self.privacy:
                return self.privacy[key]
        raise KeyError(f"no privacy report recorded for {agent!r} in {env_id!r}")

    def agent_types(self) -> dict[str, str]:
        """Agent label -> agent type (registry name or ``module:Class``) from the configuration."""
        return {a.get("label", a.get("type")): a.get("type") for a in self.config.get("agents", [])}


def load_run(path: str | Path) -> LoadedRun:
    """Load the run directory ``path`` (or its ``manifest.json``) through the verified input layer
    (:mod:`dpbandit.files`): ``ValueError`` naming the file when it is not a dpbandit run or a file is
    damaged (changed or truncated since dpbandit wrote it). Tables may be CSV or parquet (the manifest names them)."""
    path = Path(path)
    run_dir = path.parent if path.name == "manifest.json" else path
    manifest = read_manifest(run_dir)
    results_path = run_file(run_dir, manifest, "results", "results.csv")
    complete = manifest.get("status") == "complete" and results_path.is_file()
    summary = None
    if complete:
        results = read_table(results_path)
        summary_path = run_file(run_dir, manifest, "summary", "summary.csv")
        summary = read_table(summary_path) if summary_path.is_file() else None
    else:
        jobs = [load_job(run_dir, p.stem) for p in sorted((run_dir / "jobs").glob("*.json"))]
        jobs = [job for job in jobs if job is not None]  # damaged jobs are skipped with a warning naming the file
        if not jobs:
            raise ValueError(f"run {str(run_dir)!r} has no results yet (no finished job)")
        results = pd.concat([frame for frame, _ in jobs], ignore_index=True)
    reports = dict(manifest.get("privacy", {}))
    if not complete:  # the manifest gets the reports at the end: read them from the finished jobs
        for _, meta in jobs:
            if isinstance(meta, dict) and "env" in meta and "agent" in meta:
                reports.setdefault(f"{meta['env']} / {meta['agent']}", meta.get("privacy_report"))
    try:
        privacy = {name: None if report is None else PrivacyReport.from_dict(report)
                   for name, report in reports.items()}
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"{str(run_dir / 'manifest.json')!r} holds a privacy report that cannot be read ({exc!r})") \
            from None
    return LoadedRun(run_dir, results, summary, manifest.get("config", {}), manifest, privacy, complete)


def final_values(results: pd.DataFrame, value: str = "cumulative_regret") -> pd.DataFrame:
    """``value`` at each job's last recorded round: one row per (env_id, agent, seed)."""
    keys = [k for k in ("env_id", "agent", "seed") if k in results.columns]
    last = results.loc[results.groupby(keys)["t"].idxmax()]
    return last[keys + [value]].reset_index(drop=True)

