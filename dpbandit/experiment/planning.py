"""The cost of a run, stated and checked before any work (issue 24, item 4).

:func:`plan_run` counts the planned work of an experiment (jobs x rounds), checks that its results table fits in
memory (:func:`~dpbandit.validation.check_memory`) and, for runs of at least :data:`CALIBRATE_ROUNDS` rounds, times a
few hundred rounds of one job of every (environment, agent) pair (:func:`calibrate`) to estimate the wall time.
:meth:`Plan.check` refuses a run whose estimate exceeds :data:`MAX_SECONDS` unless ``allow_long`` (CLI
``--allow-long``), in one line that states the estimate. The runner plans before it opens the run directory, so a
refused run writes nothing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from dpbandit.validation import check_memory

__all__ = ["Plan", "plan_run", "calibrate", "check_duration", "duration", "seconds_per_round", "CALIBRATE_ROUNDS",
           "MAX_SECONDS"]

#: Runs of at least this many rounds (all jobs together) get a calibrated estimate of their wall time.
CALIBRATE_ROUNDS = 100_000
#: A run estimated to take longer than this (seconds: one week) is refused unless ``allow_long``.
MAX_SECONDS = 7 * 86400.0
#: Calibration: at most this many rounds of one job per (environment, agent) pair, within this many seconds in all
#: (timed rounds; each pair's rounds are first played once untimed, :func:`seconds_per_round`).
CALIBRATION_ROUNDS, CALIBRATION_SECONDS = 400, 2.0
#: The untimed first pass of a calibration plays at least this many rounds (however long its kernels take to compile).
WARM_UP_ROUNDS = 16
#: Bytes per recorded row of the results (the job frames and the gathered table, both held at the end of a run).
ROW_BYTES = 160


def duration(seconds: float) -> str:
    """``seconds`` in words: "40 s", "12 min", "3.5 h", "2.1 days", "31.7 years"."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    if seconds < 365.25 * 86400:
        return f"{seconds / 86400:.1f} days"
    return f"{seconds / (365.25 * 86400):,.1f} years"


@dataclass(frozen=True)
class Plan:
    """The planned work of a run: ``jobs`` (environment, agent, seed) jobs of ``rounds`` rounds in all, run by
    ``workers`` parallel jobs; ``seconds``: the calibrated wall-time estimate (None below
    :data:`CALIBRATE_ROUNDS`)."""

    name: str
    shape: tuple[int, int, int]  # environments, agents, seeds
    horizons: tuple[int, ...]
    workers: int
    seconds: float | None = None

    @property
    def jobs(self) -> int:
        return self.shape[0] * self.shape[1] * self.shape[2]

    @property
    def rounds(self) -> int:
        return self.shape[1] * self.shape[2] * sum(self.horizons)

    def line(self) -> str:
        """One line: ``"quick: 20 jobs (1 env x 4 agents x 5 seeds) x 2,000 rounds = 40,000 rounds"`` and, when
        calibrated, ``"; about 12 min with 2 parallel jobs"``."""
        e, a, s = self.shape
        each = (f"{self.horizons[0]:,}" if len(set(self.horizons)) == 1
                else f"{min(self.horizons):,}-{max(self.horizons):,}")
        text = (f"{self.name}: {self.jobs:,} jobs ({e} env{'s' * (e > 1)} x {a} agent{'s' * (a > 1)} x {s} "
                f"seed{'s' * (s > 1)}) x {each} rounds = {self.rounds:,} rounds")
        if self.seconds is not None:
            text += f"; about {duration(self.seconds)} with {self.workers} parallel job{'s' * (self.workers > 1)}"
        return text

    def check(self, allow_long: bool = False) -> None:
        """``ValueError`` stating the estimate when it exceeds :data:`MAX_SECONDS` and ``allow_long`` is False."""
        if self.seconds is not None and self.seconds > MAX_SECONDS and not allow_long:
            raise ValueError(
                f"{self.line()}: more than the {duration(MAX_SECONDS)} a run may take; lower the horizon or the "
                "seeds, or pass --allow-long (run_experiment(..., allow_long=True)) to run it anyway"
            )


def plan_run(config, horizons: dict[int, int], *, calibrated: bool = True) -> Plan:
    """The :class:`Plan` of ``config`` (an :class:`~dpbandit.experiment.config.ExperimentConfig`) whose environments
    have ``horizons`` (environment index -> T). Refuses (``ValueError``) a results table that cannot fit in memory;
    calibrates (``calibrated``) runs of at least :data:`CALIBRATE_ROUNDS` rounds."""
    from dpbandit.experiment.results import checkpoint_rounds

    shape = (len(config.envs), len(config.agents), len(config.seeds))
    horizon = tuple(int(horizons[e]) for e in range(shape[0]))
    rows = shape[1] * shape[2] * sum(
        T if config.checkpoints is None or config.checkpoints >= T else checkpoint_rounds(T, config.checkpoints).size
        for T in horizon)
    check_memory(f"the results of {config.name!r} ({rows:,} recorded rows: jobs x checkpoints)", rows * ROW_BYTES,
                 "record fewer rounds (checkpoints = 100) or run fewer seeds")
    plan = Plan(config.name, shape, horizon, max(1, min(config.n_jobs, shape[0] * shape[1] * shape[2])))
    if not calibrated or plan.rounds < CALIBRATE_ROUNDS:
        return plan
    budget = CALIBRATION_SECONDS / (shape[0] * shape[1])
    seconds = sum(calibrate(config, e, a, budget) * horizon[e] * shape[2]
                  for e in range(shape[0]) for a in range(shape[1]))
    return Plan(config.name, shape, horizon, plan.workers, seconds / plan.workers)


def calibrate(config, env_index: int, agent_index: int, budget: float = 0.5) -> float:
    """Seconds per round of (environment, agent) of ``config`` (:func:`seconds_per_round` on its first seed, a fresh
    environment and agent: the jobs are not touched)."""
    from dpbandit.agents import make_agent
    from dpbandit.experiment.config import make_env

    env_spec, spec = config.envs[env_index], config.agents[agent_index]
    env = make_env(env_spec.id, **env_spec.kwargs)
    try:
        return seconds_per_round(env, make_agent(spec.type, env, **spec.params), config.seeds[0], budget)
    finally:
        env.close()


def seconds_per_round(env, agent, seed: int, budget: float = 0.5) -> float:
    """Seconds per round of ``agent`` on ``env`` (the ``step`` path: an upper estimate where the agent also plays
    blocks): the rounds of ``seed`` are played twice. The first pass plays up to :data:`CALIBRATION_ROUNDS` rounds
    within ``budget`` seconds (at least :data:`WARM_UP_ROUNDS`) and pays every one-off cost of those rounds:
    compiling the kernels they call (seconds each on a fresh installation, whose cache is empty), loading caches. The
    second pass replays the same rounds (the same seed: the same releases and the same kernels) up to ``budget`` and
    is timed over its second half. Resets both; the caller resets them again before real work."""
    from dpbandit.experiment.runner import one_blas_thread

    rounds = min(CALIBRATION_ROUNDS, int(env.unwrapped.constants.horizon))
    with one_blas_thread():
        warm = len(_play(env, agent, seed, rounds, budget, WARM_UP_ROUNDS))
        start = time.perf_counter()
        stamps = _play(env, agent, seed, warm, budget, 2)
    if len(stamps) < 2:
        return stamps[0] - start
    half = len(stamps) // 2
    return (stamps[-1] - stamps[half - 1]) / (len(stamps) - half)


def _play(env, agent, seed: int, rounds: int, budget: float, least: int) -> list[float]:
    """Play up to ``rounds`` rounds of ``seed`` through ``step``, stopping once ``budget`` seconds have passed and
    at least ``least`` rounds were played; the ``perf_counter`` after each round."""
    obs, _ = env.reset(seed=seed)
    agent.reset(seed)
    start = time.perf_counter()
    stamps = []
    for _ in range(rounds):
        arm = agent.act(obs)
        obs_next, reward, _, _, info = env.step(arm)
        agent.update(obs, arm, reward, info)
        obs = obs_next
        stamps.append(time.perf_counter())
        if stamps[-1] - start > budget and len(stamps) >= least:
            break
    return stamps


def check_duration(what: str, rounds: int, seconds: float, allow_long: bool = False, unit: str = "rounds") -> None:
    """``ValueError`` stating the estimate when ``rounds`` rounds (or other ``unit`` of work) estimated at
    ``seconds`` exceed :data:`MAX_SECONDS` and ``allow_long`` is False (the commands that run their own loops:
    ``reproduce fliphat``, ``reproduce table-5.1``)."""
    if seconds > MAX_SECONDS and not allow_long:
        raise ValueError(f"{what}: {rounds:,} {unit}, about {duration(seconds)}: more than the {duration(MAX_SECONDS)} "
                         "a run may take; lower the horizon or the seeds, or pass --allow-long to run it anyway")
