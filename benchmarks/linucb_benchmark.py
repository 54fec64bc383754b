"""LinUCB through the full environment loop (issue: foundation, item 8). Prints JSON; not a test.

Workload: LinUCB (disjoint), K = 10, T = 10,000, unit-l2-norm Gaussian contexts, linear rewards, one process,
`gymnasium.make` + `dpbandit.experiment.runner.simulate` (the loop every experiment uses, with checkpoints).
Targets: >= 20,000 rounds/s at d = 20 and >= 6,000 rounds/s at d = 200.

    python benchmarks/linucb_benchmark.py [--repeats 3]
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

TARGETS = {20: 20_000, 200: 6_000}


def rounds_per_second(dim: int, horizon: int, repeats: int) -> float:
    env = gymnasium.make(
        "dpbandit/GLMBandit-v0",
        n_arms=10,
        dim=dim,
        horizon=horizon,
        structure="disjoint",
        theta="dense",
        contexts="gaussian",
        context_norm="l2",
        context_bound=1.0,
        normalize="scale",
    )
    agent = make_agent("linucb", env, alpha=1.0)
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
    for dim, target in TARGETS.items():
        rate = rounds_per_second(dim, args.horizon, args.repeats)
        results[f"d={dim}"] = {"rounds_per_second": round(rate), "target": target, "meets_target": rate >= target}
    print(
        json.dumps(
            {
                "benchmark": "linucb_env_loop",
                "workload": {"agent": "linucb (disjoint)", "n_arms": 10, "horizon": args.horizon, "contexts": "unit l2"},
                "results": results,
                "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__},
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
