"""DP-TOFW speed and memory (issue #4, item 8; issue 15: ratio to an in-run reference). Prints JSON; not a test.

* Speed: DP-TOFW (epsilon = 1, delta = 1/T, tight calibration, p = 1.5, GG noise in l_3) on the §8.1 regression
  stream with T = 10^4, d = 20: seconds per run (the update loop over pre-drawn samples), interleaved with the
  reference ``bare_ofw``: a plain numpy online Frank-Wolfe step on the same samples (two dot products, the
  gradient leaf, a running prefix sum plus one Gaussian draw of d normals per step as the tree's amortised noise,
  the l_1.5-ball LMO and the iterate update; no validation, no GG sampler, no accounting). Medians of round-robin
  repetitions (``_bench.py``); ``ratio_to_bare_ofw`` is the machine-independent figure. The old target <= 0.2 s per
  run (stated 0.19 s; a rerun on a slower day printed 0.59 s) is an absolute number for an idle machine and is kept
  for reference only; the paper reports about 1 s for its code (spec/han-frank-wolfe.md §8.1 Table 5.1).
  ``"cpu"`` holds the same figures from CPU time (``_bench.py``), which other processes do not inflate.
* Memory: T = 10^6, d = 1,000. The learner holds the tree's path nodes (O(d log T)), a block of pre-drawn node
  noise (at most 2^14 floats) and a few d-vectors; samples are generated in chunks and streamed, so nothing of size
  T is stored. Reported: the learner's state bytes, the tracemalloc peak while streaming ``--memory-rounds`` samples
  (all 10^6 with ``--full``, about 1-2 minutes), and the process's peak RSS.

    python benchmarks/dptofw_benchmark.py [--repeats 5] [--memory-rounds 20000] [--full]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import tracemalloc

import numpy as np
from threadpoolctl import threadpool_limits

from _bench import clock, emit, interleaved_clocks, machine, medians
from dpbandit.envs.streams import RegressionStream
from dpbandit.optim.frank_wolfe import DPTOFW
from dpbandit.seeding import stream

TARGET_SECONDS = 0.2
SPEED_T, SPEED_D = 10_000, 20
MEMORY_T, MEMORY_D = 1_000_000, 1000


def speed(repeats: int) -> dict:
    data = RegressionStream(SPEED_D, SPEED_T, p=1.5, theta="code").draw(0)
    risks = []

    def dptofw():
        learner = DPTOFW(SPEED_D, SPEED_T, p=1.5, epsilon=1.0, rng=stream(0, "privacy"))
        with threadpool_limits(limits=1, user_api="blas"):
            start = clock()
            for x, y in zip(data.x, data.y):
                learner.update(x, y)
            seconds = clock() - start
        risks.append(data.risk(learner.predict()))
        return seconds

    def bare_ofw():
        rng = np.random.default_rng(0)
        theta, theta_prev, total = np.zeros(SPEED_D), np.zeros(SPEED_D), np.zeros(SPEED_D)
        with threadpool_limits(limits=1, user_api="blas"):
            start = clock()
            for t, (x, y) in enumerate(zip(data.x, data.y)):
                c = (t + 1) * (x @ theta - y) - t * (x @ theta_prev - y)
                total += c * x
                g = (total + rng.standard_normal(SPEED_D)) / (t + 1)
                a = np.abs(g)
                w = a * a
                v = np.copysign(w, g) * (-1.0 / float((a * w).sum()) ** (1 / 1.5))
                theta_prev, theta = theta, theta + (v - theta) / (t + 1)
            return clock() - start

    clocks = medians(interleaved_clocks({"dptofw": dptofw, "bare_ofw": bare_ofw}, repeats))
    return {"T": SPEED_T, "d": SPEED_D, "p": 1.5, **figures(clocks["wall"]),
            "old_absolute_target_seconds_idle_machine": TARGET_SECONDS, "final_risk": risks[-1],
            "cpu": figures(clocks["cpu"])}


def figures(s: dict[str, float]) -> dict:
    """The figures of one clock's median seconds per case."""
    return {"seconds_per_run_median": round(s["dptofw"], 4), "bare_ofw_seconds_median": round(s["bare_ofw"], 4),
            "ratio_to_bare_ofw": round(s["dptofw"] / s["bare_ofw"], 3),
            "us_per_update": round(1e6 * s["dptofw"] / SPEED_T, 2)}


def state_bytes(learner: DPTOFW) -> int:
    arrays = [learner._theta, learner._theta_prev, learner._estimate, learner._noise._buffer]
    return int(learner.tree.nbytes + sum(a.nbytes for a in arrays))


def memory(rounds: int) -> dict:
    """Stream ``rounds`` samples of a T = 10^6, d = 1000 problem through DP-TOFW (chunks of 100 rows)."""
    gen = np.random.default_rng(0)
    theta = np.zeros(MEMORY_D)
    theta[:5] = 5 ** (-1 / 1.5)  # ||theta||_1.5 = 1
    tracemalloc.start()
    learner = DPTOFW(MEMORY_D, MEMORY_T, p=1.5, epsilon=1.0, rng=stream(0, "privacy"))
    start, done = clock(), 0
    while done < rounds:
        n = min(100, rounds - done)
        x = gen.standard_normal((n, MEMORY_D))
        x /= (np.abs(x) ** 3).sum(axis=1, keepdims=True) ** (1 / 3)  # ||x||_3 = 1
        y = x @ theta + 0.05 * gen.standard_normal(n)
        for i in range(n):
            learner.update(x[i], y[i])
        done += n
    seconds = clock() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"T": MEMORY_T, "d": MEMORY_D, "rounds_streamed": done, "seconds": seconds.wall,
            "cpu_seconds": seconds.cpu, "us_per_update": 1e6 * seconds.wall / done,
            "cpu_us_per_update": 1e6 * seconds.cpu / done, "tree_levels": learner.tree.depth,
            "learner_state_bytes": state_bytes(learner), "tracemalloc_peak_bytes": peak,
            "o_d_log_t_bytes": 8 * MEMORY_D * (2 * learner.tree.depth + 1),
            "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--memory-rounds", dest="memory_rounds", type=int, default=20_000)
    parser.add_argument("--full", action="store_true", help=f"stream all {MEMORY_T} samples in the memory run")
    args = parser.parse_args(argv)
    load = os.getloadavg()
    out = {"benchmark": "dptofw", "python": platform.python_version(), "speed": speed(args.repeats)}
    if args.memory_rounds or args.full:
        out["memory"] = memory(MEMORY_T if args.full else args.memory_rounds)
    out["machine"] = machine(load)
    emit(out)


if __name__ == "__main__":
    main()
