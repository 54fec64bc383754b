"""Reading a saved run back: :func:`load_run` returns its tables, configuration and privacy reports.

A run directory (written by :func:`~dpbandit.experiment.runner.run_experiment`, ``dpbandit run`` and the commands
built on it) holds ``manifest.json``, ``results`` and ``summary`` tables (``.csv`` or ``.parquet``, named in the
manifest's ``files``) and ``jobs/``. A run that was interrupted before it finished has no results table yet: its
finished jobs (``jobs/*.csv`` with their ``.json`` integrity records; a damaged job is skipped with a warning) are
read instead and ``complete`` is False.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
import pandas as pd

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


def _read_table(path: Path) -> pd.DataFrame:
    if path.suffix == ".parquet":
        try:
            return pd.read_parquet(path)
        except ImportError:
            raise ValueError("reading parquet needs pyarrow: pip install 'dpbandit[parquet]'") from None
    return pd.read_csv(path)


def load_run(path: str | Path) -> LoadedRun:
    """Load the run directory ``path`` (or its ``manifest.json``); ``ValueError`` when it is not a dpbandit run."""
    path = Path(path)
    run_dir = path.parent if path.name == "manifest.json" else path
    manifest_path = run_dir / "manifest.json"
    if not manifest_path.is_file():
        raise ValueError(f"{str(run_dir)!r} is not a dpbandit run directory (no manifest.json); pass the folder "
                         "printed by 'dpbandit run'")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{str(manifest_path)!r} is not valid JSON: {exc}") from None
    files = manifest.get("files", {})
    results_path = run_dir / files.get("results", "results.csv")
    complete = manifest.get("status") == "complete" and results_path.is_file()
    summary = None
    if complete:
        results = _read_table(results_path)
        summary_path = run_dir / files.get("summary", "summary.csv")
        summary = _read_table(summary_path) if summary_path.is_file() else None
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
    privacy = {name: None if report is None else PrivacyReport.from_dict(report) for name, report in reports.items()}
    return LoadedRun(run_dir, results, summary, manifest.get("config", {}), manifest, privacy, complete)


def final_values(results: pd.DataFrame, value: str = "cumulative_regret") -> pd.DataFrame:
    """``value`` at each job's last recorded round: one row per (env_id, agent, seed)."""
    keys = [k for k in ("env_id", "agent", "seed") if k in results.columns]
    last = results.loc[results.groupby(keys)["t"].idxmax()]
    return last[keys + [value]].reset_index(drop=True)

