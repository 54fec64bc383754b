"""Tidy result tables, confidence intervals, atomic files and run directories.

The tidy table has one row per (env_id, agent, seed, t) at the recorded rounds, with columns

``env_id, agent, seed, t, reward, regret, cumulative_reward, cumulative_regret``

where ``reward`` and ``regret`` are those of round ``t`` (pseudo-regret: best expected reward minus the chosen arm's
expected reward) and the cumulative columns sum rounds ``1..t``.

Run directories, atomic files and stored jobs live in :mod:`dpbandit.experiment.rundir`; :func:`prepare_run_dir`,
:func:`store_job`, :func:`load_job`, :func:`write_atomic` and :func:`write_json_atomic` are re-exported here.
"""

from __future__ import annotations

import platform
from importlib import metadata
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from dpbandit.experiment.rundir import load_job, prepare_run_dir, store_job, write_atomic, write_json_atomic
from dpbandit.validation import check_int

__all__ = [
    "COLUMNS",
    "checkpoint_rounds",
    "mean_ci",
    "regret_bands",
    "summary_table",
    "privacy_columns",
    "epsilon_source",
    "privacy_legend",
    "PRIVACY_COLUMNS",
    "write_atomic",
    "write_json_atomic",
    "prepare_run_dir",
    "store_job",
    "load_job",
    "package_versions",
    "plugin_versions",
]

COLUMNS = ("env_id", "agent", "seed", "t", "reward", "regret", "cumulative_reward", "cumulative_regret")
#: Privacy columns of a summary: guarantee type, epsilon, delta, zCDP rho of the agent's report, and which accounting
#: produced epsilon (``epsilon_from``: rho reproduces epsilon only when it says "zCDP rho").
PRIVACY_COLUMNS = ("guarantee", "epsilon", "delta", "rho", "epsilon_from")

#: Short names of the ledger's conversions (``PrivacyReport.conversion`` starts with the key).
_EPSILON_SOURCES = (
    ("analytic Gaussian", "analytic Gaussian curve (not rho)"),
    ("CKS20", "zCDP rho (CKS20)"),
    ("PLD", "PLD accountant"),
    ("RDP", "RDP accountant"),
    ("per-release epsilon", "basic composition"),
    ("none: pure", "pure-DP sum"),
)


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


def epsilon_source(conversion: str) -> str:
    """The short name of the accounting that produced a report's epsilon, from its ``conversion`` text; an epsilon
    rounded to the request within the calibration's tolerance (``PrivacyLedger.report``) says so."""
    name = next((short for key, short in _EPSILON_SOURCES if conversion.startswith(key)), conversion.split(";")[0])
    return name + ("; = the request within 1e-6" if "reported as the request" in conversion else "")


def privacy_columns(report: dict | None) -> dict[str, Any]:
    """``guarantee, epsilon, delta, rho, epsilon_from`` of a privacy report dict (``PrivacyReport.to_dict``). A
    run without a guarantee (a non-private agent, ``None``, or a report with guarantee "none", e.g. noise off) has
    epsilon inf, delta 0, rho inf and no epsilon source: the delta it was configured with is no guarantee."""
    none = {"guarantee": "none", "epsilon": float("inf"), "delta": 0.0, "rho": float("inf"), "epsilon_from": ""}
    if report is None or report.get("guarantee", "none") == "none":
        return none

    def number(value: Any) -> float:
        return float("nan") if value is None else float(value)  # "inf" strings of strict JSON included

    return {"guarantee": report["guarantee"], "epsilon": number(report.get("epsilon", "inf")),
            "delta": number(report.get("delta", 0.0)), "rho": number(report.get("rho")),
            "epsilon_from": epsilon_source(str(report.get("conversion", "")))}


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


def package_versions(config: Any = None) -> dict[str, Any]:
    """Versions of Python and of the packages that determine a run's numbers; with an experiment ``config``
    (anything with ``agents`` of :class:`~dpbandit.experiment.config.AgentSpec` and ``envs`` of ``EnvSpec``), also
    ``"plugins"``: :func:`plugin_versions` of its agents and environments."""
    versions: dict[str, Any] = {"python": platform.python_version()}
    for name in ("dpbandit", "numpy", "scipy", "gymnasium", "pandas", "scikit-learn", "dp-accounting"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    if config is not None:
        versions["plugins"] = plugin_versions(config)
    return versions


def plugin_versions(config: Any) -> dict[str, dict[str, Any]]:
    """The code outside dpbandit (and Gymnasium) that produced a run's results: ``"agent <label>"`` /
    ``"env <id>"`` -> ``{"module", "distribution", "version"}`` for every agent class and environment entry point
    defined in another package. The distribution is the entry point's (``dpbandit.agents`` / ``dpbandit.envs``
    groups) or the one installing the module's top-level package (``importlib.metadata.packages_distributions``);
    ``None`` with a module that no installed distribution provides (a file on the path, a notebook's ``__main__``)."""
    import gymnasium

    from dpbandit.agents import ENTRY_POINT_GROUP as AGENT_GROUP
    from dpbandit.agents import agent_class
    from dpbandit.envs import ENTRY_POINT_GROUP as ENV_GROUP

    found: dict[str, tuple[str, str]] = {}  # "module:qualname" or entry-point name -> (distribution, version)
    for group in (AGENT_GROUP, ENV_GROUP):
        for ep in metadata.entry_points(group=group):
            if getattr(ep, "dist", None) is not None:
                found.setdefault(ep.value, (ep.dist.name, ep.dist.version))
                found.setdefault(ep.name, (ep.dist.name, ep.dist.version))
    by_package = metadata.packages_distributions()
    out: dict[str, dict[str, Any]] = {}

    def record(key: str, module: str, path: str, name: str) -> None:
        top = module.split(".")[0]
        if top in ("dpbandit", "gymnasium"):
            return
        dist, version = found.get(path) or found.get(name) or (None, None)
        if dist is None and by_package.get(top):
            dist = by_package[top][0]
            version = metadata.version(dist)
        out[key] = {"module": module, "distribution": dist, "version": version}

    for spec in getattr(config, "agents", ()):
        cls = agent_class(spec.type)
        record(f"agent {spec.label}", cls.__module__, f"{cls.__module__}:{cls.__qualname__}",
               spec.type if isinstance(spec.type, str) else "")
    for env in getattr(config, "envs", ()):
        try:
            entry = gymnasium.spec(env.id).entry_point
        except gymnasium.error.Error:
            entry = env.id
        path = entry if isinstance(entry, str) else f"{entry.__module__}:{entry.__qualname__}"
        record(f"env {env.id}", path.split(":")[0], path, env.id)
    return out
