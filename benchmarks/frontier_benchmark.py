"""The frontier sweep of issue 15's acceptance, timed: ``dpbandit frontier`` with its default epsilon grid, 10 seeds,
T = 10^5, the private agents DP-HDB, DP-UCB, FLIPHAT and episodic ridge (plus the default references, random and
LinUCB), on 2 cores. Target: <= 30 minutes. Prints JSON; not a test.

It runs exactly what this command runs (the default environment ``dpbandit/HanFigure51-K2-v0``, d = 50, K = 2)::

    dpbandit frontier --agents dp_hdb dp_ucb fliphat episodic_ridge --horizons 1e5 --seeds 10 --n-jobs 2

into a temporary folder, once with ``batch = "auto"`` (the default) unless ``--batch off`` is given.

Reference line: the environment loop alone (``simulate`` with an agent that does nothing, one seed of the same
environment), timed before and after the sweep (median of 3 each); ``env_loop_floor_seconds`` = jobs x env loop /
n_jobs and ``ratio_to_env_loop_floor`` = sweep seconds / floor, the machine-independent figure. Per agent (summed
over epsilons), the seconds its jobs took (a lockstep unit's time shared equally by its seeds).

    python benchmarks/frontier_benchmark.py [--seeds 10] [--horizon 100000] [--n-jobs 2] [--batch auto|off]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import pandas as pd

import dpbandit.envs  # noqa: F401
from _bench import emit, env_loop_seconds, machine
from dpbandit.experiment.frontier import EPSILONS, FrontierConfig, run_frontier

AGENTS = ("dp_hdb", "dp_ucb", "fliphat", "episodic_ridge")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--horizon", type=int, default=100_000)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--batch", choices=("auto", "off"), default="auto")
    parser.add_argument("--agents", default=",".join(AGENTS))
    args = parser.parse_args()
    load = os.getloadavg()
    fc = FrontierConfig(agents=tuple(args.agents.split(",")), horizons=(args.horizon,), seeds=args.seeds,
                        n_jobs=args.n_jobs, batch=args.batch, name="frontier-benchmark")
    reference = env_loop_seconds(fc.env_id, horizon=args.horizon)
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        result = run_frontier(fc, out=out, progress=False)
        seconds = time.perf_counter() - start
        sweep = result.run_dir / "sweep"
        summary = pd.read_csv(sweep / "summary.csv")
    reference += env_loop_seconds(fc.env_id, horizon=args.horizon)
    env_loop = statistics.median(reference)
    jobs = (len(fc.agents) * len(EPSILONS) + len(fc.references)) * args.seeds
    floor = env_loop * jobs / min(args.n_jobs, jobs)
    summary["name"] = summary["agent"].str.split(" ").str[0]
    summary["seconds"] = summary["us_per_round"] * 1e-6 * args.horizon * args.seeds
    emit({
        "benchmark": "frontier",
        "workload": {"env": fc.env_id, "agents": list(fc.agents), "references": list(fc.references),
                     "epsilons": [str(e) for e in fc.epsilons], "seeds": args.seeds, "horizon": args.horizon,
                     "n_jobs": args.n_jobs, "batch": args.batch, "jobs": jobs},
        "seconds": round(seconds, 1),
        "minutes": round(seconds / 60, 2),
        "meets_30_minutes": seconds <= 1800,
        "env_loop_us_per_round": round(1e6 * env_loop / args.horizon, 2),
        "env_loop_floor_seconds": round(floor, 1),
        "ratio_to_env_loop_floor": round(seconds / floor, 2),
        "job_seconds_by_agent": summary.groupby("name")["seconds"].sum().round(1).to_dict(),
        "machine": machine(load),
    })


if __name__ == "__main__":
    main()
