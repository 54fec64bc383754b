"""DP-UCB through the full environment loop (issue #5, item 7). Prints JSON; not a test.

Workload: DP-UCB (epsilon = 1, delta = 1/T, tight node noise of spec/errata.md E6), d = 50, K = 10, T = 10,000,
unit-l2-norm Gaussian contexts, linear rewards, one process, ``gymnasium.make`` + ``simulate``; both forms:

* shared (one model over per-arm features): one (d+1)x(d+1) Gram tree, one Cholesky per round;
* disjoint (one model per arm): K trees on one clock, so K symmetric (d+1)x(d+1) node-noise draws and K Cholesky
  factorisations per round. The noise draws dominate (``K (d+1)^2`` normals per round); they are the mechanism.

No throughput target is set by the issue for DP-UCB; the numbers are recorded for comparison (LinUCB, DP-HDB).

    python benchmarks/dpucb_benchmark.py [--repeats 3] [--horizon 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import gymnasium
import numpy as np

import dpbandit.envs  # noqa: F401
from dpbandit.agents import make_agent
from dpbandit.experiment.runner import simulate

DIM, ARMS = 50, 10


def rounds_per_second(structure: str, horizon: int, repeats: int, epsilon: float) -> float:
    env = gymnasium.make(
        "dpbandit/GLMBandit-v0", n_arms=ARMS, dim=DIM, horizon=horizon, structure=structure, theta="dense",
        contexts="gaussian", context_norm="l2", context_bound=1.0, normalize="scale",
    )
    agent = make_agent("dp_ucb", env, epsilon=epsilon)
    best = np.inf
    for seed in range(repeats):
        start = time.perf_counter()
        simulate(env, agent, seed=seed, checkpoints=100)
        best = min(best, time.perf_counter() - start)
    return horizon / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--horizon", type=int, default=10_000)
    args = parser.parse_args()
    results = {}
    for structure in ("shared", "disjoint"):
        for epsilon in (1.0, float("inf")):
            rate = rounds_per_second(structure, args.horizon, args.repeats, epsilon)
            key = f"{structure}, epsilon={'inf (noise off)' if epsilon == float('inf') else f'{epsilon:g}'}"
            results[key] = {"rounds_per_second": round(rate), "us_per_round": round(1e6 / rate, 1)}
    print(
        json.dumps(
            {
                "benchmark": "dpucb_env_loop",
                "workload": {"agent": "dp_ucb (tight sigma_n)", "dim": DIM, "n_arms": ARMS, "horizon": args.horizon,
                             "contexts": "unit l2", "delta": "1/T"},
                "results": results,
                "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__,
                            "load_average_1min": round(os.getloadavg()[0], 2)},
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
