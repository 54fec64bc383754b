"""Shared timing helpers of the benchmark scripts (not part of the package).

Every benchmark reports its measurement *as a ratio to a reference measured in the same run*: the cases are run
round-robin (case 1, case 2, ..., case 1, case 2, ...) ``repeats`` times and the median time of each is kept, so a
load spike from other processes hits every case alike and the ratio survives a busy or slower machine even when
the absolute numbers do not. Absolute rates are printed too, next to the machine's load average at the start and
the end of the run; read them as "on this machine, under this load" only.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from collections.abc import Callable

import numpy as np

__all__ = ["interleaved", "interleaved_times", "machine", "emit", "timed", "DoNothing", "env_loop_seconds"]


def timed(fn: Callable[[], object]) -> Callable[[], float]:
    """A case timing the whole call of ``fn`` (wall clock, seconds)."""

    def case() -> float:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start

    return case


def interleaved(cases: dict[str, Callable[[], float]], repeats: int) -> dict[str, float]:
    """Median seconds of each case over ``repeats`` round-robin repetitions.

    Each case is a callable doing its own set-up and returning the seconds of the part it times.
    """
    return {name: statistics.median(values) for name, values in interleaved_times(cases, repeats).items()}


def interleaved_times(cases: dict[str, Callable[[], float]], repeats: int) -> dict[str, list[float]]:
    """The seconds of each case in each of ``repeats`` round-robin repetitions (repetition i of every case ran in
    one pass, so ratios within a repetition share its load)."""
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeats):
        for name, case in cases.items():
            times[name].append(case())
    return times


def machine(load_at_start: tuple[float, float, float]) -> dict:
    """Machine description with the 1/5/15-minute load averages at the start and at the end of the run."""
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "load_average_start": [round(x, 2) for x in load_at_start],
        "load_average_end": [round(x, 2) for x in os.getloadavg()],
    }


def emit(result: dict) -> None:
    print(json.dumps(result, indent=2))


class DoNothing:
    """An agent that always plays arm 0 and learns nothing: ``simulate`` with it times the environment loop alone.

    Duck-types :class:`dpbandit.agents.base.Agent` (``reset``, ``act``, ``update``, ``privacy_report``).
    """

    private = False

    def reset(self, seed=None) -> None:
        pass

    def act(self, observation) -> int:
        return 0

    def update(self, observation, arm, reward, info) -> None:
        pass

    def privacy_report(self):
        return None


def env_loop_seconds(env_id: str, repeats: int = 3, **env_kwargs) -> list[float]:
    """Seconds of ``simulate`` with :class:`DoNothing` (one seed, 100 checkpoints) in ``gymnasium.make(env_id,
    **env_kwargs)``, ``repeats`` times: the environment loop alone, the floor a sweep's jobs cannot go below."""
    import gymnasium

    import dpbandit.envs  # noqa: F401
    from dpbandit.experiment import simulate

    env = gymnasium.make(env_id, **env_kwargs)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        simulate(env, DoNothing(), 0, checkpoints=100)
        times.append(time.perf_counter() - start)
    return times
