"""Shared timing helpers of the benchmark scripts (not part of the package).

Every benchmark reports its measurement *as a ratio to a reference measured in the same run*: the cases are run
round-robin (case 1, case 2, ..., case 1, case 2, ...) ``repeats`` times and the median time of each is kept, so a
load spike from other processes hits every case alike and the ratio survives a busy or slower machine even when
the absolute numbers do not. Absolute rates are printed too, next to the machine's load average at the start and
the end of the run; read them as "on this machine, under this load" only.

Every time is taken on two clocks (:class:`Times`): wall time and CPU time (user + system). The machine is shared:
other processes slow the wall clock of a case but not its CPU time, so a ratio of CPU times survives load where a
ratio of wall times may not; a CPU time far below the wall time says the case waited (for the cores, or for its
workers). A benchmark whose work runs in child processes (joblib workers, a local Dask cluster) counts their CPU
time too (``clock(children=True)``: finished children and running ones, see :func:`cpu_seconds`), summed over
processes, so its CPU ratios compare total work, not elapsed time. Scripts print the wall figures where they always
did and the same figures from CPU time under ``"cpu"``; :func:`machine` adds the whole run's wall and CPU seconds to
the load averages.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import statistics
import time
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

__all__ = ["Times", "clock", "cpu_seconds", "interleaved", "interleaved_times", "interleaved_clocks", "medians",
           "machine", "emit", "timed", "DoNothing", "env_loop_seconds", "env_loop_clocks"]

#: The run's start (this module is imported as a script starts): :func:`machine` reports the seconds since.
_STARTED = (time.perf_counter(), time.process_time())


class Times(NamedTuple):
    """Seconds on both clocks: ``wall`` (``time.perf_counter``) and ``cpu`` (:func:`cpu_seconds`). Differences,
    sums and divisions by a number apply to both: ``(clock() - start) / n_seeds``."""

    wall: float
    cpu: float

    def __add__(self, other: "Times") -> "Times":  # type: ignore[override]  (not tuple concatenation)
        return Times(self.wall + other.wall, self.cpu + other.cpu)

    def __sub__(self, other: "Times") -> "Times":
        return Times(self.wall - other.wall, self.cpu - other.cpu)

    def __truediv__(self, k: float) -> "Times":
        return Times(self.wall / k, self.cpu / k)


def cpu_seconds(children: bool = False) -> float:
    """CPU seconds (user + system) of this process so far (``time.process_time``); with ``children``, plus those of
    its descendants: the finished ones it waited for (``resource.getrusage(RUSAGE_CHILDREN)``) and, when psutil is
    installed, the running ones with what they waited for (joblib keeps its workers between runs, a Dask nanny
    its worker). Listing the running ones costs milliseconds: ask only where the work runs in children."""
    seconds = time.process_time()
    if not children:
        return seconds
    finished = resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds += finished.ru_utime + finished.ru_stime
    try:
        import psutil
    except ImportError:  # pragma: no cover - psutil comes with dask.distributed
        return seconds
    for child in psutil.Process().children(recursive=True):
        try:
            t = child.cpu_times()
        except psutil.Error:  # ended meanwhile: counted once its parent waits for it
            continue
        seconds += t.user + t.system + t.children_user + t.children_system
    return seconds


def clock(children: bool = False) -> Times:
    """Both clocks now (``children``: the CPU time of child processes too, :func:`cpu_seconds`)."""
    return Times(time.perf_counter(), cpu_seconds(children))


def timed(fn: Callable[[], object], children: bool = False) -> Callable[[], Times]:
    """A case timing the whole call of ``fn`` on both clocks (a :class:`Times`, seconds)."""

    def case() -> Times:
        start = clock(children)
        fn()
        return clock(children) - start

    return case


def interleaved_clocks(cases: dict[str, Callable[[], Times | float]], repeats: int) -> dict[str, list[Times]]:
    """The :class:`Times` of each case in each of ``repeats`` round-robin repetitions (repetition i of every case
    ran in one pass, so ratios within a repetition share its load). Each case is a callable doing its own set-up and
    returning the :class:`Times` of the part it times (a case returning a float gives its wall seconds only: its
    CPU time is nan)."""
    times: dict[str, list[Times]] = {name: [] for name in cases}
    for _ in range(repeats):
        for name, case in cases.items():
            result = case()
            times[name].append(result if isinstance(result, Times) else Times(float(result), float("nan")))
    return times


def medians(times: dict[str, list[Times]]) -> dict[str, dict[str, float]]:
    """``{"wall": {case: median}, "cpu": {case: median}}`` of :func:`interleaved_clocks`'s lists: one dictionary per
    clock, so a script computes its figures from either the same way."""
    return {which: {name: statistics.median(getattr(t, which) for t in values) for name, values in times.items()}
            for which in Times._fields}


def interleaved(cases: dict[str, Callable[[], Times | float]], repeats: int) -> dict[str, float]:
    """Median wall seconds of each case over ``repeats`` round-robin repetitions (both clocks:
    ``medians(interleaved_clocks(cases, repeats))``)."""
    return medians(interleaved_clocks(cases, repeats))["wall"]


def interleaved_times(cases: dict[str, Callable[[], Times | float]], repeats: int) -> dict[str, list[float]]:
    """The wall seconds of each case in each of ``repeats`` round-robin repetitions (both clocks:
    :func:`interleaved_clocks`)."""
    return {name: [t.wall for t in values] for name, values in interleaved_clocks(cases, repeats).items()}


def machine(load_at_start: tuple[float, float, float]) -> dict:
    """Machine description with the 1/5/15-minute load averages at the start and at the end of the run, and the
    run's wall and CPU seconds so far (this process and its children, from the import of this module)."""
    now = clock(children=True)
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "load_average_start": [round(x, 2) for x in load_at_start],
        "load_average_end": [round(x, 2) for x in os.getloadavg()],
        "run_wall_seconds": round(now.wall - _STARTED[0], 2),
        "run_cpu_seconds": round(now.cpu - _STARTED[1], 2),
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
    """Wall seconds of ``simulate`` with :class:`DoNothing` (one seed, 100 checkpoints) in ``gymnasium.make(env_id,
    **env_kwargs)``, ``repeats`` times: the environment loop alone, the floor a sweep's jobs cannot go below (both
    clocks: :func:`env_loop_clocks`)."""
    return [t.wall for t in env_loop_clocks(env_id, repeats, **env_kwargs)]


def env_loop_clocks(env_id: str, repeats: int = 3, **env_kwargs) -> list[Times]:
    """:func:`env_loop_seconds` on both clocks."""
    import gymnasium

    import dpbandit.envs  # noqa: F401
    from dpbandit.experiment import simulate

    env = gymnasium.make(env_id, **env_kwargs)
    return [timed(lambda: simulate(env, DoNothing(), 0, checkpoints=100))() for _ in range(repeats)]
