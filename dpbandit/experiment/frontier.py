"""The privacy–regret frontier: final cumulative regret of private agents against epsilon, per horizon.

The sweep is one :class:`~dpbandit.experiment.config.ExperimentConfig` (one environment per horizon T) run by
:func:`~dpbandit.experiment.runner.run_experiment` (the same jobs, seeding, resumption and files as every run):
each private agent once per epsilon (``inf`` = noise off), plus the non-private references (uniform random play
and, by default, LinUCB) once per horizon. Every agent of a horizon sees the same environment instances and users
(common random numbers). The run directory holds::

    <out>/<name>/
        results.csv     the tidy table (dpbandit.experiment.results.COLUMNS) plus epsilon, horizon, role
        frontier.csv    final regret per (agent, epsilon, horizon): mean, 95% CI, std, seeds, guarantee,
                        accounted epsilon and delta of the agent's privacy report
        frontier.png    final regret against epsilon (log axis, inf = noise off at the right), 95% CI bands, the
                        references as horizontal bands, one panel per horizon
        manifest.json   configuration, versions, privacy reports, the runs, the first epsilon beating random by 2x
                        (the lower bound of the paired-bootstrap 95% interval of the ratio random/agent >= 2)
        sweep/          the runner's run directory (jobs/, results.csv, summary.csv, regret.png, manifest.json)

Epsilon is the axis of one guarantee type: private agents whose reports name different guarantees (e.g. JDP and
window-JDP) are refused, and so is the published-code comparison mode (``spec/README.md`` rule 2,
``spec/han-frank-wolfe.md`` §9.5).

The tables and the figure are built by :mod:`dpbandit.experiment.frontier_report` (re-exported here).
Python: ``run_frontier(FrontierConfig(agents=("dp_ucb",), horizons=(10_000,)))``. Command line:
``dpbandit frontier [--quick] [--env ID] [--agents ...] [--epsilons ...] [--horizons ...]`` (:func:`main`).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

import dpbandit.envs  # noqa: F401  (registers the environments)
from dpbandit.agents import AGENTS, hyperparameters, make_agent
from dpbandit.experiment.config import BATCH_MODES, AgentSpec, EnvSpec, ExperimentConfig, make_env, parse_seeds
from dpbandit.experiment.frontier_report import (
    RESULT_COLUMNS,
    beating_lines,
    epsilon_text,
    first_epsilon_beating,
    frontier_table,
    plot_frontier,
)
from dpbandit.files import read_manifest
from dpbandit.experiment.results import package_versions, write_atomic, write_json_atomic
from dpbandit.experiment.rundir import LOCK_FILE
from dpbandit.experiment.runner import run_experiment
from dpbandit.privacy.report import CORRECT
from dpbandit.validation import check_choice, check_delta, check_epsilon, check_int, check_n_jobs, check_run_name

__all__ = ["EPSILONS", "HORIZONS", "QUICK", "RESULT_COLUMNS", "FrontierConfig", "FrontierResult", "run_frontier",
           "frontier_table", "first_epsilon_beating", "beating_lines", "plot_frontier", "main"]

EPSILONS: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, math.inf)
HORIZONS: tuple[int, ...] = (10_000, 100_000)
#: The ``--quick`` grid: a few seconds per private agent.
QUICK: dict[str, Any] = dict(epsilons=(1.0, 16.0, math.inf), horizons=(500, 2000), seeds=2, checkpoints=10)


def private_agents() -> tuple[str, ...]:
    """Registry names of the private agents with an ``epsilon`` hyperparameter (the ones a sweep can run), except
    those whose guarantee type follows a learner (``oco``: LDP by default, which cannot share the JDP axis; sweep it
    in a frontier of its own with ``agents=("oco",)``)."""
    return tuple(name for name, cls in AGENTS.items() if cls.private and "epsilon" in hyperparameters(name)
                 and not getattr(cls, "guarantee_from_learner", False))


def _agent_names(key: str, names: Any, *, private: bool) -> tuple[str, ...]:
    """Registry names, each private (with an ``epsilon`` to sweep) or each non-private."""
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise TypeError(f"{key} must be a sequence of agent registry names, got {names!r}")
    for n in names:
        if n not in AGENTS:
            raise ValueError(f"unknown agent {n!r} in {key}; known agents: {', '.join(sorted(AGENTS))}")
        if private and not AGENTS[n].private:
            raise ValueError(f"agent {n!r} is not private; list non-private agents under references")
        if private and "epsilon" not in hyperparameters(n):
            raise ValueError(f"private agent {n!r} has no 'epsilon' hyperparameter to sweep")
        if not private and AGENTS[n].private:
            raise ValueError(f"reference {n!r} is a private agent; list it under agents")
    if len(set(names)) != len(names):
        raise ValueError(f"{key} must not repeat names, got {list(names)}")
    if private and not names:
        raise ValueError(f"agents must name at least one private agent; registered: {private_agents()}")
    return tuple(names)


def _unique_sorted(key: str, values: Any, check) -> tuple:
    values = tuple(check(v) for v in values)
    if not values:
        raise ValueError(f"{key} must list at least one value")
    if len(set(values)) != len(values):
        raise ValueError(f"{key} must not repeat, got {list(values)}")
    return tuple(sorted(values))


@dataclass(frozen=True)
class FrontierConfig:
    """A frontier sweep (validated on construction; agents are built once per horizon before any job runs).

    ``agents``: private registry names, each run at every epsilon (default None: every registered private agent with
    an ``epsilon`` hyperparameter that runs on the environment; the others are listed in ``refused``, name -> their
    one-line reason, in the manifest and the command's output);
    ``references``: non-private registry names run once per horizon (the plot's horizontal bands);
    ``delta``: passed to every private agent (None: each agent's default, 1/T for DP-UCB);
    ``agent_params``: extra hyperparameters per registry name; ``env_kwargs``: environment keywords (the horizon
    is set per sweep point).
    """

    env_id: str = "dpbandit/HanFigure51-K2-v0"
    agents: tuple[str, ...] | None = None
    epsilons: tuple[float, ...] = EPSILONS
    horizons: tuple[int, ...] = HORIZONS
    seeds: Any = 5
    delta: float | None = None
    references: tuple[str, ...] = ("random", "linucb")
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    agent_params: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    n_jobs: int = 2
    batch: str = "auto"
    checkpoints: int = 20
    name: str = "frontier"
    out: str = "runs"
    refused: Mapping[str, str] = field(init=False, default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        set_ = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731
        if self.agents is not None:
            set_("agents", _agent_names("agents", self.agents, private=True))
        set_("references", _agent_names("references", self.references, private=False))
        set_("epsilons", _unique_sorted("epsilons", self.epsilons, lambda e: check_epsilon(e, "epsilons entry",
                                                                                          allow_inf=True)))
        set_("horizons", _unique_sorted("horizons", self.horizons, lambda h: check_int("horizons entry", h, low=2)))
        set_("seeds", parse_seeds(self.seeds))
        if self.delta is not None:
            set_("delta", check_delta(self.delta, allow_zero=False))
        set_("env_kwargs", dict(self.env_kwargs))
        if "horizon" in self.env_kwargs:
            raise ValueError("env_kwargs must not set 'horizon': the sweep sets it from horizons")
        set_("agent_params", {k: dict(v) for k, v in self.agent_params.items()})
        if self.agents is None:
            self._default_agents()
        for n, params in self.agent_params.items():
            if n not in (*self.agents, *self.references):
                raise ValueError(f"agent_params names {n!r}, which is neither in agents nor in references")
            if {"epsilon", "delta"} & set(params):
                raise ValueError(f"agent_params[{n!r}] must not set epsilon or delta (set by the sweep)")
        check_n_jobs(self.n_jobs)
        check_choice("batch", self.batch, BATCH_MODES)
        check_int("checkpoints", self.checkpoints, low=2)
        check_run_name(self.name)

    def _default_agents(self) -> None:
        """Every private agent (:func:`private_agents`) built once on the environment at the smallest horizon and
        the first epsilon: the ones that build are the sweep's agents, the others' refusals go to ``refused``."""
        env = make_env(self.env_id, **self.env_kwargs, horizon=self.horizons[0])
        accepted, refused = [], {}
        try:
            for name in private_agents():
                params = {**self.agent_params.get(name, {}), "epsilon": self.epsilons[0]}
                if self.delta is not None:
                    params["delta"] = self.delta
                try:
                    make_agent(name, env, **params)
                    accepted.append(name)
                except (ValueError, TypeError) as exc:
                    refused[name] = " ".join(str(exc).split())
        finally:
            env.close()
        if not accepted:
            raise ValueError(f"no registered private agent runs on {self.env_id}: "
                             + "; ".join(f"{n}: {why}" for n, why in refused.items()))
        object.__setattr__(self, "agents", tuple(accepted))
        object.__setattr__(self, "refused", refused)

    def env_label(self, horizon: int) -> str:
        return f"T={horizon}"

    def experiment(self) -> tuple[ExperimentConfig, dict[str, tuple[str, float, str]]]:
        """The whole sweep as one experiment (one environment per horizon, one agent per (agent, epsilon), the
        references) and its label map ``agent label -> (agent, epsilon, role)``."""
        specs, labels = [], {}
        for name in self.agents:
            for eps in self.epsilons:
                params = {**self.agent_params.get(name, {}), "epsilon": eps}
                if self.delta is not None:
                    params["delta"] = self.delta
                label = f"{name} eps={epsilon_text(eps)}"
                specs.append(AgentSpec(name, label, params))
                labels[label] = (name, eps, "private")
        for name in self.references:
            specs.append(AgentSpec(name, name, self.agent_params.get(name, {})))
            labels[name] = (name, math.inf, "reference")
        envs = tuple(EnvSpec(self.env_id, {**self.env_kwargs, "horizon": T}, self.env_label(T)) for T in self.horizons)
        config = ExperimentConfig(envs=envs, agents=tuple(specs), seeds=self.seeds, n_jobs=self.n_jobs,
                                  batch=self.batch, checkpoints=self.checkpoints, name="sweep")
        return config, labels

    def to_dict(self) -> dict:
        return {
            "env_id": self.env_id, "env_kwargs": dict(self.env_kwargs), "agents": list(self.agents),
            "epsilons": [epsilon_text(e) for e in self.epsilons], "horizons": list(self.horizons),
            "seeds": list(self.seeds), "delta": self.delta, "references": list(self.references),
            "agent_params": dict(self.agent_params), "n_jobs": self.n_jobs, "batch": self.batch,
            "checkpoints": self.checkpoints,
            "name": self.name, "refused": dict(self.refused),
        }


@dataclass(frozen=True)
class FrontierResult:
    """What :func:`run_frontier` produced (paths None for an in-memory run)."""

    results: pd.DataFrame
    frontier: pd.DataFrame
    beats_random: pd.DataFrame
    run_dir: Path | None
    plot_path: Path | None


def _privacy_reports(fc: FrontierConfig) -> dict[tuple[str, float, int], Any]:
    """Each private agent's report per (agent, epsilon, horizon); refuses mixed guarantees and published modes."""
    config, labels = fc.experiment()
    reports, kinds = {}, set()
    for T, env_spec in zip(fc.horizons, config.envs):
        env = make_env(env_spec.id, **env_spec.kwargs)
        try:
            for spec in config.agents:
                name, eps, role = labels[spec.label]
                if role != "private":
                    continue
                report = make_agent(spec.type, env, **spec.params).privacy_report()
                if report is None or report.calibration_mode != CORRECT:
                    raise ValueError(f"agent {name!r} at epsilon={epsilon_text(eps)} is not a correctly calibrated "
                                     "private run; the frontier only aggregates private results")
                if math.isfinite(eps):
                    if report.guarantee == "none":
                        raise ValueError(f"agent {name!r} reports no guarantee at epsilon={eps:g}")
                    kinds.add((report.guarantee, report.window))
                reports[(name, eps, T)] = report
        finally:
            env.close()
    if len(kinds) > 1:
        raise ValueError(f"the private agents report different guarantee types {sorted(map(str, kinds))}: they "
                         "cannot share one epsilon axis; run them in separate frontiers")
    return reports


def _check_outer(run_dir: Path, name: str) -> None:
    """Refuse (before writing anything) a folder that is neither empty, nor holds only the sweep of an unfinished
    run, nor a finished frontier of this name: its files are never overwritten."""
    if not run_dir.exists():
        return
    if not run_dir.is_dir():
        raise ValueError(f"{str(run_dir)!r} exists and is not a folder: choose another name or out folder")
    others = [p.name for p in run_dir.iterdir() if p.name not in ("sweep", LOCK_FILE)]
    if not others:
        return
    try:
        manifest = read_manifest(run_dir)
        ours = manifest.get("config", {}).get("name") == name and "frontier" in manifest.get("files", {})
    except (OSError, ValueError):
        ours = False
    if not ours:
        raise ValueError(f"run directory {str(run_dir)!r} exists but is not a dpbandit frontier named {name!r}; it "
                         "is left untouched: choose another name or out folder")


def run_frontier(fc: FrontierConfig, out: str | Path | bool | None = None, progress: bool = True, *,
                 fresh: bool = False, allow_long: bool = False) -> FrontierResult:
    """Run the sweep ``fc`` into ``<out>/<fc.name>`` (default ``out``: ``fc.out``; False: in memory).

    The jobs run through :func:`~dpbandit.experiment.runner.run_experiment` in ``<run dir>/sweep``: re-running the
    same sweep resumes it (finished jobs are read back); a different sweep there is refused unless ``fresh``. A
    sweep planned at more than a week is refused before any work unless ``allow_long``.
    """
    if not isinstance(fc, FrontierConfig):
        raise TypeError(f"fc must be a FrontierConfig, got {type(fc).__name__}")
    start = time.perf_counter()
    reports = _privacy_reports(fc)  # builds every private agent once per horizon: bad input fails before any job
    config, labels = fc.experiment()
    run_dir = None if out is False else Path(fc.out if out in (None, True) else out) / fc.name
    if run_dir is not None:
        _check_outer(run_dir, fc.name)
    result = run_experiment(config, out=False if run_dir is None else run_dir, progress=progress, fresh=fresh,
                            allow_long=allow_long)
    results = result.results.copy()
    horizon_of = {fc.env_label(T): T for T in fc.horizons}
    mapped = results["agent"].map(labels)
    results["horizon"] = results["env_id"].map(horizon_of).astype(int)
    results["env_id"] = fc.env_id
    results["agent"] = [m[0] for m in mapped]
    results["epsilon"] = [float(m[1]) for m in mapped]
    results["role"] = [m[2] for m in mapped]
    results = results[list(RESULT_COLUMNS)]
    table = frontier_table(results, reports)
    beats = first_epsilon_beating(results) if "random" in fc.references else pd.DataFrame()
    plot_path = None
    if run_dir is not None:
        write_atomic(run_dir / "results.csv", lambda p: results.to_csv(p, index=False))
        write_atomic(run_dir / "frontier.csv", lambda p: table.to_csv(p, index=False))
        plot_path = plot_frontier(table, run_dir / "frontier.png", title=f"{fc.name}: {fc.env_id}")
        manifest = {
            "status": "complete", "config": fc.to_dict(), "versions": package_versions(config),
            "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "seconds": time.perf_counter() - start, "resumed_jobs": result.resumed_jobs,
            "privacy": {f"{a} eps={epsilon_text(e)} T={T}": r.to_dict() for (a, e, T), r in reports.items()},
            "beats_random_2x": beats.to_dict("records"),
            "files": {"results": "results.csv", "frontier": "frontier.csv", "plot": "frontier.png",
                      "sweep": "sweep/ (the runner's run directory: jobs, per-horizon regret curves)"},
        }
        write_json_atomic(run_dir / "manifest.json", manifest)
    return FrontierResult(results, table, beats, run_dir, plot_path)


# -- command line ---------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """``python -m dpbandit.experiment.frontier [options]`` (the same as ``dpbandit frontier``;
    :mod:`dpbandit.experiment.frontier_cli`)."""
    from dpbandit.experiment.frontier_cli import main as cli_main

    return cli_main(argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
