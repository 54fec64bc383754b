"""The evaluation loop and the multi-seed runner.

:func:`simulate` plays one episode of one agent and returns its recorded rounds. :func:`run_experiment` expands an
:class:`~dpbandit.experiment.config.ExperimentConfig` into (environment, agent, seed) jobs, runs them with
:func:`~dpbandit.experiment.execution.execute_jobs` (in this process, in joblib processes when ``n_jobs > 1``, or on
a Dask cluster; the OCO runner uses it too), and writes a run directory
(:func:`~dpbandit.experiment.results.prepare_run_dir`)::

    <out>/<name>/
        manifest.json      config and its hash, seeds, package versions, wall time per agent, privacy reports, status
        jobs/              one CSV + one JSON per finished job, written atomically as soon as the job's result arrives
        results.csv        the tidy table of every job (see dpbandit.experiment.results.COLUMNS)
        summary.csv        final regret per (environment, agent) (mean, 95% CI, std) and microseconds per round
        regret.png         mean cumulative regret with 95% confidence bands

Before the run directory is opened, the planned work (jobs x rounds, and for long runs a calibrated estimate of the
wall time) is printed and an absurd estimate refused (:mod:`dpbandit.experiment.planning`); the progress bar counts
rounds, which the round loop reports while a job runs (:func:`~dpbandit.experiment.execution.round_ticker`).

A run killed at any point keeps every job that finished; running the same experiment again resumes it (finished
jobs are read back, never recomputed or duplicated), and a *different* experiment in the same folder is refused
unless ``fresh=True``.

Seeding: a job with seed ``s`` resets the environment with ``s`` and the agent with ``s``; the environment draws the
instance, contexts and reward noise from streams ``"instance"``, ``"contexts"``, ``"reward_noise"`` of ``s`` and the
agent its exploration and privacy noise from ``"exploration"`` and ``"privacy"`` (:mod:`dpbandit.seeding`), so every
agent sees the same users and the same seed gives identical results.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any

import gymnasium
import pandas as pd
from threadpoolctl import ThreadpoolController

import dpbandit.envs  # noqa: F401  (registers the environments, also inside worker processes)
from dpbandit.agents import make_agent
from dpbandit.agents.base import Agent
from dpbandit.experiment.config import AgentSpec, EnvSpec, ExperimentConfig, make_env
from dpbandit.experiment.errors import RunInterrupted
from dpbandit.experiment.execution import BACKENDS, execute_jobs
from dpbandit.experiment.loop import blocks_apply, play_blocks, play_steps
from dpbandit.experiment.planning import plan_run
from dpbandit.experiment.rundir import open_run_dir
from dpbandit.experiment.results import (
    COLUMNS,
    load_job,
    package_versions,
    privacy_columns,
    privacy_legend,
    store_job,
    summary_table,
    write_atomic,
    write_json_atomic,
)
from dpbandit.privacy.report import is_private
from dpbandit.seeding import STREAM_LAYOUT
from dpbandit.validation import check_choice

__all__ = ["simulate", "run_experiment", "execute_jobs", "RunResult", "BACKENDS", "FORMATS"]

#: Most seeds of one (environment, agent) pair run in lockstep by ``batch = "auto"`` (benchmarks/batch_benchmark.py:
#: the gain flattens out by 16 seeds, while a unit's results are stored only when all its seeds finish).
BATCH_SEEDS = 16
#: Most bytes of agent state (the agents' memory estimates) one lockstep unit may hold.
BATCH_MEMORY = 2**30
#: File formats of a run's results and summary tables (parquet needs pyarrow: ``pip install 'dpbandit[parquet]'``).
FORMATS: tuple[str, ...] = ("csv", "parquet")


def simulate(env: gymnasium.Env, agent: Agent, seed: int, checkpoints: int | None = None) -> pd.DataFrame:
    """Play one episode (one horizon) of ``agent`` in ``env`` with job seed ``seed``.

    Returns a frame with columns ``t, reward, regret, cumulative_reward, cumulative_regret`` at the rounds given
    by :func:`~dpbandit.experiment.results.checkpoint_rounds` (every round when ``checkpoints`` is None).

    The loop runs with BLAS limited to one thread: a round's linear algebra is small (at most a few (d+1)^2
    matrices), so BLAS threads cost more in hand-offs than they save, and on a machine whose cores are busy with
    other work (parallel jobs, other users) their spin-waiting made LinUCB at d = 200 ten times slower
    (``benchmarks/linucb_benchmark.py``). Parallelism belongs to the seeds (``n_jobs``).

    Environments that hand out blocks of rounds and agents that play them run block by block through compiled
    kernels, anything else through Gymnasium's ``step``, with the same numbers (:mod:`dpbandit.experiment.loop`).
    """
    with one_blas_thread():
        if blocks_apply([env], [agent]):
            return play_blocks([env], [agent], [seed], checkpoints)[0]
        return play_steps(env, agent, seed, checkpoints)


_BLAS_CONTROLLER: tuple[int, ThreadpoolController] | None = None  # (len(sys.modules) at the scan, the controller)


def one_blas_thread():
    """A context manager limiting BLAS to one thread (threadpoolctl's ``limit``), for :func:`simulate` and the
    batched runs. ``threadpool_limits`` scans the process's loaded libraries on every call (milliseconds with dpbandit
    imported: CHANGELOG); the scan is kept here and redone only when modules have been imported since, as a new
    module may have loaded another BLAS."""
    global _BLAS_CONTROLLER
    if _BLAS_CONTROLLER is None or _BLAS_CONTROLLER[0] != len(sys.modules):
        _BLAS_CONTROLLER = (len(sys.modules), ThreadpoolController())
    return _BLAS_CONTROLLER[1].limit(limits=1, user_api="blas")


def _job_stem(config: ExperimentConfig, job: tuple[int, int, int]) -> str:
    env_index, agent_index, seed = job
    label = config.agents[agent_index].label
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", label).strip("_") or "agent"
    prefix = f"{env_index:02d}-" if len(config.envs) > 1 else ""
    return f"{prefix}{agent_index:02d}-{slug}__seed{seed}"


def _run_job(config: ExperimentConfig, job: tuple[int, int, int]) -> tuple[pd.DataFrame, dict]:
    """Run (environment, agent, seed) ``job`` of ``config``; a pure function of its arguments (any process)."""
    env_index, agent_index, seed = job
    env_spec: EnvSpec = config.envs[env_index]
    spec: AgentSpec = config.agents[agent_index]
    env = make_env(env_spec.id, **env_spec.kwargs)
    try:
        agent = make_agent(spec.type, env, **spec.params)
        start, cpu = time.perf_counter(), time.process_time()
        frame = simulate(env, agent, seed, config.checkpoints)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        rounds = int(env.unwrapped.constants.horizon)
    finally:
        env.close()
    return _job_output(config, job, frame, agent, (seconds, cpu), rounds, 1)


def _run_unit(config: ExperimentConfig, unit: tuple[int, int, tuple[int, ...]]) -> list[tuple[tuple, tuple]]:
    """Run the seeds of execution unit (environment, agent, seeds): alone, or in lockstep through the agent's
    batched form (:func:`~dpbandit.experiment.batch.simulate_batch`, the same frames); ``[(job, (frame, meta))]``."""
    env_index, agent_index, seeds = unit
    if len(seeds) == 1:
        job = (env_index, agent_index, seeds[0])
        return [(job, _run_job(config, job))]
    from dpbandit.experiment.batch import simulate_batch_agents  # batch imports this module

    env_spec, spec = config.envs[env_index], config.agents[agent_index]
    start, cpu = time.perf_counter(), time.process_time()
    frames, agents = simulate_batch_agents(env_spec, AgentSpec(spec.type, spec.label, spec.params), seeds,
                                           config.checkpoints)
    # a lockstep run's wall and CPU time, shared equally
    seconds = ((time.perf_counter() - start) / len(seeds), (time.process_time() - cpu) / len(seeds))
    rounds = int(agents[0].constants.horizon)
    return [((env_index, agent_index, seed), _job_output(config, (env_index, agent_index, seed), frame, agent,
                                                         seconds, rounds, len(seeds)))
            for seed, frame, agent in zip(seeds, frames, agents)]


def _job_output(config, job, frame, agent, times, rounds, batch) -> tuple[pd.DataFrame, dict]:
    """The job's frame and its metadata; ``times`` = (wall seconds, CPU seconds of the process: ``process_time``)."""
    env_index, agent_index, seed = job
    env_spec, spec = config.envs[env_index], config.agents[agent_index]
    frame.insert(0, "seed", seed)
    frame.insert(0, "agent", spec.label)
    frame.insert(0, "env_id", env_spec.label)
    report = agent.privacy_report()
    meta = {
        "env": env_spec.label,
        "agent": spec.label,
        "type": spec.type_name,
        "params": dict(spec.params),
        "seed": seed,
        "rounds": rounds,
        "seconds": times[0],
        "cpu_seconds": times[1],
        "batch": batch,  # seeds run in lockstep with this one (1: alone)
        "private": is_private(report),  # from the guarantee, not the class: epsilon = inf runs are not private
        "privacy_report": None if report is None else report.to_dict(),
    }
    return frame, meta


def _units(config: ExperimentConfig, todo: Sequence[tuple[int, int, int]],
           built: dict[tuple[int, int], tuple[type, int]]) -> list[tuple[int, int, tuple[int, ...]]]:
    """The jobs still to run as execution units ``(env, agent, seeds)``, in configuration order. With
    ``config.batch == "auto"`` the seeds of an agent with a batched form share units of at most
    :data:`BATCH_SEEDS` seeds and :data:`BATCH_MEMORY` bytes of agent state, split further when there would be fewer
    units than ``n_jobs`` (every worker gets one); every other job is a unit of one seed."""
    from dpbandit.agents.batched import has_batched_form

    pending: dict[tuple[int, int], list[int]] = {}
    for e, a, seed in todo:
        pending.setdefault((e, a), []).append(seed)
    spread = -(-config.n_jobs // max(1, len(pending)))  # units per pair so that every worker has one
    units = []
    for (e, a), seeds in pending.items():
        cls, memory = built[e, a]
        if config.batch == "off" or not has_batched_form(cls):
            units.extend((e, a, (seed,)) for seed in seeds)
            continue
        size = max(1, min(BATCH_SEEDS, BATCH_MEMORY // max(memory, 1), -(-len(seeds) // spread)))
        units.extend((e, a, tuple(seeds[i: i + size])) for i in range(0, len(seeds), size))
    return units


@dataclass(frozen=True)
class RunResult:
    """What :func:`run_experiment` produced. Paths are ``None`` for an in-memory run (no ``out``). ``jobs``: every
    job's metadata in configuration order (environment, agent, seed): labels, seconds, ``cpu_seconds``, rounds,
    privacy report."""

    results: pd.DataFrame
    summary: pd.DataFrame
    run_dir: Path | None
    table_path: Path | None
    plot_path: Path | None
    resumed_jobs: int = 0
    jobs: tuple[dict, ...] = ()


def run_experiment(
    config: ExperimentConfig,
    out: str | Path | bool | None = None,
    progress: bool = True,
    *,
    fresh: bool = False,
    backend: str = "local",
    dask_address: str | None = None,
    format: str = "csv",
    allow_long: bool = False,
) -> RunResult:
    """Run every (environment, agent, seed) job of ``config`` and gather the results.

    ``out``: parent folder of the run directory ``<out>/<name>``; ``True`` means ``config.out``; ``None`` (the
    default) or ``False`` keeps everything in memory (nothing is written). ``format``: ``"csv"`` or ``"parquet"``
    for ``results``/``summary`` (jobs stay CSV). The summary carries each agent's ``guarantee, epsilon, delta,
    rho``. Re-running the same experiment into the same folder resumes it: finished jobs are read
    back, not recomputed, and never duplicated; a different experiment there is refused unless ``fresh=True``.
    ``backend``: ``"local"`` (this process for ``n_jobs=1``, else joblib processes) or ``"dask"`` (a
    ``dask.distributed`` cluster at ``dask_address``, or a local cluster of ``n_jobs`` workers when None).
    Invalid configurations raise before any job starts, and so does a run whose calibrated wall-time estimate
    exceeds :data:`~dpbandit.experiment.planning.MAX_SECONDS` unless ``allow_long`` (the planned work, jobs x
    rounds and the estimate, is printed when ``progress``: :mod:`dpbandit.experiment.planning`). Interrupted
    (Ctrl-C), it raises :class:`~dpbandit.experiment.errors.RunInterrupted` once the workers are stopped; the
    finished jobs stay in the run directory, and running the same experiment again resumes it.
    """
    if not isinstance(config, ExperimentConfig):
        raise TypeError(f"config must be an ExperimentConfig, got {type(config).__name__}")
    check_choice("backend", backend, BACKENDS)
    check_choice("format", format, FORMATS)
    if dask_address is not None and backend != "dask":
        raise ValueError("dask_address is only used with backend='dask'")
    if format == "parquet" and out not in (None, False):
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise ValueError("format='parquet' needs pyarrow: pip install 'dpbandit[parquet]'") from None
    built = config.validate()
    if config.n_jobs > 1 or backend == "dask":
        _check_reachable_from_workers(config)
    plan = plan_run(config, built.horizons)
    plan.check(allow_long)
    if progress:
        print(plan.line(), flush=True)
    if out in (None, False):
        return _run(config, built, None, progress, backend, dask_address, format)
    with open_run_dir(config.out if out is True else out, config.name, config.config_hash(), fresh) as run_dir:
        return _run(config, built, run_dir, progress, backend, dask_address, format)


def _run(config: ExperimentConfig, built: dict, run_dir: Path | None, progress: bool, backend: str,
         dask_address: str | None, format: str) -> RunResult:
    manifest: dict[str, Any] = {
        "status": "running",
        "config": config.to_dict(),
        "config_hash": config.config_hash(),
        "stream_layout": STREAM_LAYOUT,
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "versions": package_versions(config),
        "backend": backend,
    }
    jobs = [(e, a, seed) for e in range(len(config.envs)) for a in range(len(config.agents)) for seed in config.seeds]
    finished: dict[tuple, tuple[pd.DataFrame, dict]] = {}
    if run_dir is not None:
        write_json_atomic(run_dir / "manifest.json", manifest)
        for job in jobs:
            loaded = load_job(run_dir, _job_stem(config, job))
            if loaded is not None:
                finished[job] = loaded
    resumed = len(finished)
    todo = [job for job in jobs if job not in finished]

    def store(unit, outputs):
        for job, output in outputs:
            if run_dir is not None:
                store_job(run_dir, _job_stem(config, job), *output)
            finished[job] = output

    try:
        execute_jobs(partial(_run_unit, config), _units(config, todo, built), store, n_jobs=config.n_jobs,
                     desc=config.name, progress=progress, backend=backend, dask_address=dask_address,
                     size=lambda unit: len(unit[2]) * built.horizons[unit[0]], unit="round")
    except KeyboardInterrupt:
        raise RunInterrupted(len(finished) if run_dir is not None else 0) from None

    outputs = [finished[job] for job in jobs]  # configuration order: env, agent, seed
    results = pd.concat([f for f, _ in outputs], ignore_index=True)[list(COLUMNS)]
    metas = [m for _, m in outputs]
    timings = pd.DataFrame(
        [{"env_id": m["env"], **{k: m[k] for k in ("agent", "seed", "seconds", "rounds")}} for m in metas]
    )
    privacy = pd.DataFrame([{"env_id": m["env"], "agent": m["agent"], **privacy_columns(m["privacy_report"])}
                            for m in metas if m["seed"] == config.seeds[0]])
    summary = summary_table(results, timings, privacy=privacy)
    legends = {row.agent: privacy_legend(row.agent, row._asdict()) for row in privacy.itertuples()}

    table_path = plot_path = None
    if run_dir is not None:
        files = {name: f"{name}.{format}" for name in ("results", "summary")}
        for name, frame in (("results", results), ("summary", summary)):
            path = write_atomic(run_dir / files[name], partial(_write_table, frame, format))
            table_path = path if name == "results" else table_path
        title = f"{config.name}: {', '.join(e.label for e in config.envs)}"
        from dpbandit.experiment.plots import plot_regret  # matplotlib: only where a figure is drawn

        plot_path = plot_regret(results, run_dir / "regret.png", title=title,
                                private={m["agent"]: m["private"] for m in metas}, labels=legends)
        manifest.update(
            status="complete",
            finished=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            resumed_jobs=resumed,
            seconds_per_agent=timings.groupby("agent", sort=False)["seconds"].sum().to_dict(),
            privacy={
                f"{m['env']} / {m['agent']}": m["privacy_report"] for m in metas if m["seed"] == config.seeds[0]
            },
            files={**files, "plot": "regret.png", "jobs": "jobs/"},
        )
        write_json_atomic(run_dir / "manifest.json", manifest)
    return RunResult(results, summary, run_dir, table_path, plot_path, resumed, tuple(metas))


def _check_reachable_from_workers(config: ExperimentConfig) -> None:
    """Refuse names registered at runtime in this process: worker processes import dpbandit afresh."""
    from dpbandit.agents import runtime_registered
    from dpbandit.envs import runtime_registered_envs

    agents = sorted({a.type for a in config.agents if isinstance(a.type, str)} & set(runtime_registered()))
    if agents:
        raise ValueError(
            f"agent(s) {agents} were registered at runtime (AGENTS[name] = ...), which worker processes cannot see: "
            "pass the class itself (AgentSpec(MyAgent), sent to workers pickled), or 'package.module:ClassName', "
            "or publish it as a 'dpbandit.agents' entry point of an installed package; or run with n_jobs=1"
        )
    envs = runtime_registered_envs([e.id for e in config.envs])
    if envs:
        raise ValueError(
            f"environment id(s) {envs} were registered at runtime (gymnasium.register), which worker processes "
            "cannot see: use the id 'package.module:Name-v0' (Gymnasium imports package.module in each worker, "
            "which must register the id), or publish it as a 'dpbandit.envs' entry point of an installed package; "
            "or run with n_jobs=1"
        )


def _write_table(frame: pd.DataFrame, format: str, path: Path) -> None:
    frame.to_csv(path, index=False) if format == "csv" else frame.to_parquet(path, index=False)
