"""Tidy result tables, confidence intervals, atomic files and run directories.

The tidy table has one row per (env_id, agent, seed, t) at the recorded rounds, with columns

``env_id, agent, seed, t, reward, regret, cumulative_reward, cumulative_regret``

where ``reward`` and ``regret`` are those of round ``t`` (pseudo-regret: best expected reward minus the chosen arm's
expected reward) and the cumulative columns sum rounds ``1..t``.

Run directories (shared by the bandit runner and the OCO runner): :func:`prepare_run_dir` creates ``<out>/<name>``
or reuses it when its ``manifest.json`` records the same ``config_hash`` (a different experiment is refused unless
``fresh``); :func:`store_job` writes a finished job atomically (``jobs/<stem>.csv``, then ``jobs/<stem>.json``,
which marks it finished) and :func:`load_job` reads it back. Every JSON file is strict (:func:`write_json_atomic`).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from dpbandit.validation import check_int

__all__ = [
    "COLUMNS",
    "checkpoint_rounds",
    "mean_ci",
    "regret_bands",
    "summary_table",
    "privacy_columns",
    "privacy_legend",
    "PRIVACY_COLUMNS",
    "write_atomic",
    "write_json_atomic",
    "prepare_run_dir",
    "store_job",
    "load_job",
    "package_versions",
]

COLUMNS = ("env_id", "agent", "seed", "t", "reward", "regret", "cumulative_reward", "cumulative_regret")
#: Privacy columns of a summary: guarantee type, epsilon, delta and zCDP rho of the agent's report.
PRIVACY_COLUMNS = ("guarantee", "epsilon", "delta", "rho")


def checkpoint_rounds(horizon: int, n: int | None) -> np.ndarray:
    """Rounds (1-based, increasing, always including 1 and T) at which a run is recorded.

    ``n=None`` records every round; otherwise about ``n`` rounds, half log-spaced (for log axes) and half linearly
    spaced (for linear axes).
    """
    horizon = check_int("horizon", horizon, low=1)
    if n is None or n >= horizon:
        return np.arange(1, horizon + 1)
    n = check_int("checkpoints", n, low=2)
    log_part = np.geomspace(1, horizon, max(n // 2, 2))
    lin_part = np.linspace(1, horizon, max(n - n // 2, 2))
    return np.unique(np.rint(np.concatenate([log_part, lin_part])).astype(np.int64))


def mean_ci(values: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """Mean and half-width of the Student-t confidence interval at ``level`` (half-width 0 for one value)."""
    values = np.asarray(values, dtype=float)
    n = values.size
    mean = float(values.mean())
    if n < 2:
        return mean, 0.0
    sem = float(values.std(ddof=1)) / np.sqrt(n)
    return mean, float(stats.t.ppf(0.5 + level / 2, n - 1) * sem)


def regret_bands(frame: pd.DataFrame, level: float = 0.95, value: str = "cumulative_regret",
                 floor: float | None = None) -> pd.DataFrame:
    """Per (env_id, agent, t): mean of ``value`` across seeds with Student-t ``level`` bounds ``low``/``high``.

    ``floor``: a value the quantity cannot fall below (0 for the pseudo-regret, a sum of non-negative terms); the
    lower bound is clipped there, since no mean below it is possible.
    """
    keys = [k for k in ("env_id", "agent") if k in frame.columns] + ["t"]
    grouped = frame.groupby(keys, sort=True)[value]
    out = grouped.agg(mean="mean", std="std", n="count").reset_index()
    tq = stats.t.ppf(0.5 + level / 2, np.maximum(out["n"] - 1, 1))
    half = np.where(out["n"] > 1, tq * out["std"].fillna(0.0) / np.sqrt(out["n"]), 0.0)
    out["low"] = out["mean"] - half if floor is None else np.maximum(out["mean"] - half, floor)
    out["high"] = out["mean"] + half
    return out


def privacy_columns(report: dict | None) -> dict[str, Any]:
    """``guarantee, epsilon, delta, rho`` of a privacy report dict (``PrivacyReport.to_dict``); a non-private
    agent (``None``) has guarantee "none", epsilon inf, delta 0 and rho inf."""
    if report is None:
        return {"guarantee": "none", "epsilon": float("inf"), "delta": 0.0, "rho": float("inf")}

    def number(value: Any) -> float:
        return float("nan") if value is None else float(value)  # "inf" strings of strict JSON included

    rho = report.get("rho")
    if rho is None and report.get("guarantee") == "none":
        rho = "inf"
    return {"guarantee": report.get("guarantee", "none"), "epsilon": number(report.get("epsilon", "inf")),
            "delta": number(report.get("delta", 0.0)), "rho": number(rho)}


def privacy_legend(agent: str, columns: dict[str, Any]) -> str:
    """A legend entry that says what privacy an agent had, e.g. "DP-UCB [JDP ε=1, δ=1e-05]"."""
    if columns["guarantee"] == "none":
        return f"{agent} [non-private]"
    return f"{agent} [{columns['guarantee']} ε={columns['epsilon']:.3g}, δ={columns['delta']:.2g}]"


def summary_table(frame: pd.DataFrame, timings: pd.DataFrame | None = None, level: float = 0.95,
                  privacy: pd.DataFrame | None = None) -> pd.DataFrame:
    """Final cumulative regret per (environment, agent): mean, 95% CI half-width, std, seeds; time per round.

    ``timings`` has columns ``env_id, agent, seed, seconds, rounds`` (one row per job). ``privacy`` has columns
    ``env_id, agent`` and :data:`PRIVACY_COLUMNS` (one row per pair; :func:`privacy_columns`); they follow
    ``agent`` in the table.
    """
    last = frame.loc[frame.groupby(["env_id", "agent", "seed"])["t"].idxmax()]
    rows = []
    for (env_id, agent), group in last.groupby(["env_id", "agent"], sort=False):
        mean, half = mean_ci(group["cumulative_regret"].to_numpy(), level)
        rows.append(
            {
                "env_id": env_id,
                "agent": agent,
                "horizon": int(group["t"].max()),
                "seeds": int(group["seed"].nunique()),
                "final_regret_mean": mean,
                "final_regret_ci95": half,
                "final_regret_std": float(group["cumulative_regret"].std(ddof=1)) if len(group) > 1 else 0.0,
            }
        )
    table = pd.DataFrame(rows)
    if timings is not None and len(timings):
        per_round = timings.assign(us_per_round=1e6 * timings["seconds"] / timings["rounds"])
        keys = ["env_id", "agent"]
        table = table.merge(per_round.groupby(keys)["us_per_round"].mean().reset_index(), on=keys, how="left")
    if privacy is not None and len(table):
        table = table.merge(privacy[["env_id", "agent", *PRIVACY_COLUMNS]], on=["env_id", "agent"], how="left")
        order = ["env_id", "agent", *PRIVACY_COLUMNS]
        table = table[order + [c for c in table.columns if c not in order]]
    return table.sort_values(["env_id", "final_regret_mean"], kind="stable").reset_index(drop=True)


def write_atomic(path: str | Path, write: Any) -> Path:
    """Write a file atomically: ``write(tmp_path)`` fills a temporary file that is then renamed onto ``path``.

    A reader (or a run killed mid-write) never sees a partial file.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_json_atomic(path: str | Path, data: Any) -> Path:
    """Write strict JSON atomically: infinite and NaN floats, also inside numpy scalars and arrays, become the
    strings "inf", "-inf", "nan"; numpy values become Python numbers and lists, paths strings."""
    text = json.dumps(_strict(data), indent=2, default=_json_default, allow_nan=False)
    return write_atomic(path, lambda p: p.write_text(text + "\n"))


def _strict(obj: Any) -> Any:
    if isinstance(obj, float) and not np.isfinite(obj):
        return "nan" if np.isnan(obj) else ("inf" if obj > 0 else "-inf")
    if isinstance(obj, dict):
        return {k: _strict(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_strict(v) for v in obj]
    if isinstance(obj, (np.generic, np.ndarray)):
        return _strict(obj.tolist() if isinstance(obj, np.ndarray) else obj.item())
    return obj


def _json_default(obj: Any) -> Any:  # numpy values were converted by _strict
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


def prepare_run_dir(parent: str | Path, name: str, config_hash: str, fresh: bool = False) -> Path:
    """``<parent>/<name>``: created, or reused when its ``manifest.json`` holds the same ``config_hash``.

    ``fresh=True`` discards an existing directory first. A directory holding a different experiment (another
    hash) or something that is not a run (files but no manifest) raises ``ValueError`` before anything is written.
    """
    run_dir = Path(parent) / name
    manifest_path = run_dir / "manifest.json"
    if run_dir.exists() and fresh:
        shutil.rmtree(run_dir)
    elif manifest_path.is_file():
        old = json.loads(manifest_path.read_text()).get("config_hash")
        if old != config_hash:
            raise ValueError(
                f"run directory {str(run_dir)!r} holds a different experiment (config hash {str(old)[:12]} != "
                f"{config_hash[:12]}): pass fresh=True (CLI: --fresh) to discard it, or change the "
                "experiment's name or out folder"
            )
    elif run_dir.exists() and any(run_dir.iterdir()):
        raise ValueError(
            f"run directory {str(run_dir)!r} exists but is not a dpbandit run (no manifest.json): choose another "
            "name or out folder, or pass fresh=True (CLI: --fresh) to replace it"
        )
    run_dir.mkdir(parents=True, exist_ok=True)
    return run_dir


def store_job(run_dir: Path, stem: str, frame: pd.DataFrame, meta: Any) -> None:
    """Write a finished job atomically: ``jobs/<stem>.csv`` first, then ``jobs/<stem>.json`` (strict JSON), whose
    presence marks the job finished."""
    write_atomic(run_dir / "jobs" / f"{stem}.csv", lambda p: frame.to_csv(p, index=False))
    write_json_atomic(run_dir / "jobs" / f"{stem}.json", meta)


#: pandas >= 3 parses floats round-trip by default (and deprecates the option); older pandas needs it.
_EXACT_CSV = {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}


def load_job(run_dir: Path, stem: str) -> tuple[pd.DataFrame, Any] | None:
    """The ``(frame, meta)`` of a job finished by an earlier (possibly killed) run, or None; floats read back
    exactly (round-trip parsing), so a resumed run equals an uninterrupted one."""
    meta_path, csv_path = run_dir / "jobs" / f"{stem}.json", run_dir / "jobs" / f"{stem}.csv"
    if not (meta_path.is_file() and csv_path.is_file()):
        return None
    return pd.read_csv(csv_path, **_EXACT_CSV), json.loads(meta_path.read_text())


def package_versions() -> dict[str, str]:
    """Versions of Python and of the packages that determine a run's numbers."""
    versions = {"python": platform.python_version()}
    for name in ("dpbandit", "numpy", "scipy", "gymnasium", "pandas", "scikit-learn", "dp-accounting"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions
