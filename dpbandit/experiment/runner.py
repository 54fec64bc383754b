"""The evaluation loop and the multi-seed runner.

:func:`simulate` plays one episode of one agent and returns its recorded rounds. :func:`run_experiment` expands an
:class:`~dpbandit.experiment.config.ExperimentConfig` into (agent, seed) jobs, runs them (in parallel joblib
processes when ``n_jobs > 1``), and writes a run directory::

    <out>/<name>-<timestamp>/
        manifest.json      config, seeds, package versions, wall time per agent, privacy reports, status
        jobs/              one CSV + one JSON per finished (agent, seed), written atomically as soon as it ends
        results.csv        the tidy table of every job (see dpbandit.experiment.results.COLUMNS)
        summary.csv        final regret per agent (mean, 95% CI, std) and microseconds per round
        regret.png         mean cumulative regret with 95% confidence bands

An interrupted run keeps every job that finished (its files in ``jobs/``).

Seeding: a job with seed ``s`` resets the environment with ``s`` and the agent with ``s``; the environment draws the
instance, contexts and reward noise from streams ``"instance"``, ``"contexts"``, ``"reward_noise"`` of ``s`` and the
agent its exploration and privacy noise from ``"exploration"`` and ``"privacy"`` (:mod:`dpbandit.seeding`), so every
agent sees the same users and the same seed gives identical results.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import pandas as pd

import dpbandit.envs  # noqa: F401  (registers the environments, also inside worker processes)
from dpbandit.agents import make_agent
from dpbandit.agents.base import Agent
from dpbandit.experiment.config import AgentSpec, ExperimentConfig
from dpbandit.experiment.plots import plot_regret
from dpbandit.experiment.results import (
    COLUMNS,
    checkpoint_rounds,
    package_versions,
    summary_table,
    write_atomic,
    write_json_atomic,
)

__all__ = ["simulate", "run_experiment", "RunResult"]


def simulate(env: gymnasium.Env, agent: Agent, seed: int, checkpoints: int | None = None) -> pd.DataFrame:
    """Play one episode (one horizon) of ``agent`` in ``env`` with job seed ``seed``.

    Returns a frame with columns ``t, reward, regret, cumulative_reward, cumulative_regret`` at the rounds given
    by :func:`~dpbandit.experiment.results.checkpoint_rounds` (every round when ``checkpoints`` is None).
    """
    horizon = env.unwrapped.constants.horizon
    rounds = checkpoint_rounds(horizon, checkpoints)
    n = rounds.size
    rec = np.empty((n, 4))
    obs, _ = env.reset(seed=seed)
    agent.reset(seed)
    act, update, step = agent.act, agent.update, env.step
    cum_regret = cum_reward = 0.0
    k, next_t = 0, int(rounds[0])
    for t in range(1, horizon + 1):
        arm = act(obs)
        next_obs, reward, _, _, info = step(arm)
        update(obs, arm, reward, info)
        regret = info["regret"]
        cum_regret += regret
        cum_reward += reward
        if t == next_t:
            rec[k] = (reward, regret, cum_reward, cum_regret)
            k += 1
            next_t = int(rounds[k]) if k < n else -1
        obs = next_obs
    frame = pd.DataFrame(rec, columns=["reward", "regret", "cumulative_reward", "cumulative_regret"])
    frame.insert(0, "t", rounds)
    return frame


def _job_stem(index: int, label: str, seed: int) -> str:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", label).strip("_") or "agent"
    return f"{index:02d}-{slug}__seed{seed}"


def _run_job(config: ExperimentConfig, index: int, seed: int, run_dir: Path | None) -> tuple[pd.DataFrame, dict]:
    """Run agent ``index`` of ``config`` with ``seed``; write its files under ``run_dir/jobs`` when given."""
    spec: AgentSpec = config.agents[index]
    env = gymnasium.make(config.env_id, **config.env_kwargs)
    try:
        agent = make_agent(spec.type, env, **spec.params)
        start = time.perf_counter()
        frame = simulate(env, agent, seed, config.checkpoints)
        seconds = time.perf_counter() - start
    finally:
        env.close()
    frame.insert(0, "seed", seed)
    frame.insert(0, "agent", spec.label)
    frame.insert(0, "env_id", config.env_id)
    report = agent.privacy_report()
    meta = {
        "agent": spec.label,
        "type": spec.type,
        "params": dict(spec.params),
        "seed": seed,
        "rounds": int(env.unwrapped.constants.horizon),
        "seconds": seconds,
        "private": bool(agent.private),
        "privacy_report": None if report is None else report.to_dict(),
    }
    if run_dir is not None:
        stem = _job_stem(index, spec.label, seed)
        write_atomic(run_dir / "jobs" / f"{stem}.csv", lambda p: frame.to_csv(p, index=False))
        write_json_atomic(run_dir / "jobs" / f"{stem}.json", meta)
    return frame, meta


@dataclass(frozen=True)
class RunResult:
    """What :func:`run_experiment` produced. Paths are ``None`` for an in-memory run (``out=False``)."""

    results: pd.DataFrame
    summary: pd.DataFrame
    run_dir: Path | None
    table_path: Path | None
    plot_path: Path | None


def _new_run_dir(parent: str | Path, name: str) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    base = Path(parent) / f"{name}-{stamp}"
    path, i = base, 1
    while path.exists():
        path, i = Path(f"{base}-{i}"), i + 1
    path.mkdir(parents=True)
    return path


def run_experiment(config: ExperimentConfig, out: str | Path | bool | None = None, progress: bool = True) -> RunResult:
    """Run every (agent, seed) job of ``config`` and gather the results.

    ``out``: parent folder of the run directory (default ``config.out``); ``False`` keeps everything in memory.
    Invalid configurations raise before any job starts.
    """
    if not isinstance(config, ExperimentConfig):
        raise TypeError(f"config must be an ExperimentConfig, got {type(config).__name__}")
    config.validate()
    run_dir = None if out is False else _new_run_dir(config.out if out in (None, True) else out, config.name)
    manifest: dict[str, Any] = {
        "status": "running",
        "config": config.to_dict(),
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "versions": package_versions(),
    }
    if run_dir is not None:
        write_json_atomic(run_dir / "manifest.json", manifest)

    jobs = [(i, seed) for i in range(len(config.agents)) for seed in config.seeds]
    outputs = _execute(config, jobs, run_dir, progress)

    order = {spec.label: i for i, spec in enumerate(config.agents)}
    outputs.sort(key=lambda fm: (order[fm[1]["agent"]], fm[1]["seed"]))
    frames = [f for f, _ in outputs]
    metas = [m for _, m in outputs]
    results = pd.concat(frames, ignore_index=True)[list(COLUMNS)]
    timings = pd.DataFrame([{k: m[k] for k in ("agent", "seed", "seconds", "rounds")} for m in metas])
    summary = summary_table(results, timings)

    table_path = plot_path = None
    if run_dir is not None:
        table_path = write_atomic(run_dir / "results.csv", lambda p: results.to_csv(p, index=False))
        write_atomic(run_dir / "summary.csv", lambda p: summary.to_csv(p, index=False))
        plot_path = plot_regret(results, run_dir / "regret.png", title=f"{config.name}: {config.env_id}")
        manifest.update(
            status="complete",
            finished=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            seconds_per_agent=timings.groupby("agent", sort=False)["seconds"].sum().to_dict(),
            privacy={m["agent"]: m["privacy_report"] for m in metas if m["seed"] == config.seeds[0]},
            files={"results": "results.csv", "summary": "summary.csv", "plot": "regret.png", "jobs": "jobs/"},
        )
        write_json_atomic(run_dir / "manifest.json", manifest)
    return RunResult(results, summary, run_dir, table_path, plot_path)


def _execute(config: ExperimentConfig, jobs: list, run_dir: Path | None, progress: bool) -> list:
    from tqdm.auto import tqdm

    bar = tqdm(total=len(jobs), desc=f"{config.name} jobs", unit="job", disable=not progress)
    outputs = []
    try:
        if config.n_jobs == 1 or len(jobs) == 1:
            for index, seed in jobs:
                outputs.append(_run_job(config, index, seed, run_dir))
                bar.update()
        else:
            from joblib import Parallel, delayed

            parallel = Parallel(n_jobs=min(config.n_jobs, len(jobs)), return_as="generator_unordered")
            for output in parallel(delayed(_run_job)(config, index, seed, run_dir) for index, seed in jobs):
                outputs.append(output)
                bar.update()
    finally:
        bar.close()
    return outputs
