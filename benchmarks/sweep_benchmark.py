"""A sweep at scale (issue: sweeps at scale, item 3). Prints JSON; not a test.

Workload: 7 agents x 20 seeds x T = 100,000 on a d = 100, K = 10 sparse linear environment, through
`run_experiment` with the local joblib backend on all cores (2 here). Target: <= 10 minutes.

The default 7 agents are random, oracle, greedy, egreedy, linucb, lasso and dp_hdb. DP-UCB (disjoint form) and the
`oco` agent are not in the default set: per round they cost K noisy (d+1)x(d+1) Gram-matrix nodes plus K Cholesky
factorisations (DP-UCB, ~2 ms at d = 100, K = 10) or K learner updates (oco). Alone, 20 seeds x T = 1e5 of DP-UCB
take about half an hour on two cores; pass ``--agents`` to include them.

    python benchmarks/sweep_benchmark.py [--seeds 20] [--horizon 100000] [--n-jobs 2] [--agents a,b,...]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

from dpbandit.experiment.config import AgentSpec, ExperimentConfig
from dpbandit.experiment.runner import run_experiment

AGENTS = ("random", "oracle", "greedy", "egreedy", "linucb", "lasso", "dp_hdb")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--horizon", type=int, default=100_000)
    parser.add_argument("--n-jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--agents", default=",".join(AGENTS))
    args = parser.parse_args()
    agents = tuple(AgentSpec(name) for name in args.agents.split(","))
    config = ExperimentConfig(
        env_id="dpbandit/SparseLinear-v0",
        env_kwargs={"horizon": args.horizon, "dim": 100, "n_arms": 10},
        agents=agents,
        seeds=args.seeds,
        n_jobs=args.n_jobs,
        checkpoints=100,
        name="sweep-benchmark",
    )
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        result = run_experiment(config, out=out, progress=False)
        seconds = time.perf_counter() - start
    per_agent = result.summary.set_index("agent")["us_per_round"].round(1).to_dict()
    print(
        json.dumps(
            {
                "benchmark": "sweep",
                "workload": {"agents": [a.type for a in agents], "seeds": args.seeds, "horizon": args.horizon,
                             "dim": 100, "n_arms": 10, "n_jobs": args.n_jobs},
                "seconds": round(seconds, 1),
                "target_seconds": 600,
                "meets_target": seconds <= 600,
                "us_per_round_by_agent": per_agent,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
