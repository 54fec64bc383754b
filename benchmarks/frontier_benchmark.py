"""The frontier sweep of issue 15's acceptance, timed: ``dpbandit frontier`` with its default epsilon grid, 10 seeds,
T = 10^5, the private agents DP-HDB, DP-UCB, FLIPHAT and episodic ridge (plus the default references, random and
LinUCB), on 2 cores. Target: <= 30 minutes. Prints JSON; not a test.

It runs exactly what this command runs (the default environment ``dpbandit/HanFigure51-K2-v0``, d = 50, K = 2)::

    dpbandit frontier --agents dp_hdb dp_ucb fliphat episodic_ridge --horizons 1e5 --seeds 10 --n-jobs 2

into a temporary folder, once with ``batch = "auto"`` (the default) unless ``--batch off`` is given.

Reference line: the environment loop alone (``simulate`` with an agent that does nothing, one seed of the same
environment), timed before and after the sweep (median of 3 each); ``env_loop_floor_seconds`` = jobs x env loop /
n_jobs and ``ratio_to_env_loop_floor`` = sweep seconds / floor, the machine-independent figure. Per agent (summed
over epsilons), the seconds its jobs took (a lockstep unit's time shared equally by its seeds). ``"cpu"`` holds the
same figures in CPU seconds (``_bench.py``), summed over this process and its workers: there the floor is jobs x env
loop (no division by the workers), and the ratio is the frontier's total work over the floor's.

    python benchmarks/frontier_benchmark.py [--seeds 10] [--horizon 100000] [--n-jobs 2] [--batch auto|off]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile

import pandas as pd

import dpbandit.envs  # noqa: F401
from _bench import clock, emit, env_loop_clocks, machine
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
    reference = env_loop_clocks(fc.env_id, horizon=args.horizon)
    with tempfile.TemporaryDirectory() as out:
        start = clock(children=True)
        result = run_frontier(fc, out=out, progress=False)
        seconds = clock(children=True) - start
        records = [json.loads(p.read_text())["meta"] for p in (result.run_dir / "sweep" / "jobs").glob("*.json")]
    reference += env_loop_clocks(fc.env_id, horizon=args.horizon)
    jobs = (len(fc.agents) * len(EPSILONS) + len(fc.references)) * args.seeds
    job_seconds = pd.DataFrame({"name": [r["agent"].split(" ")[0] for r in records],
                                "wall": [r["seconds"] for r in records], "cpu": [r.get("cpu_seconds") for r in records]})
    wall, cpu = (figures(getattr(seconds, which), statistics.median(getattr(t, which) for t in reference),
                         jobs / min(args.n_jobs, jobs) if which == "wall" else jobs, args.horizon)
                 for which in ("wall", "cpu"))
    emit({
        "benchmark": "frontier",
        "workload": {"env": fc.env_id, "agents": list(fc.agents), "references": list(fc.references),
                     "epsilons": [str(e) for e in fc.epsilons], "seeds": args.seeds, "horizon": args.horizon,
                     "n_jobs": args.n_jobs, "batch": args.batch, "jobs": jobs},
        **wall,
        "minutes": round(seconds.wall / 60, 2),
        "meets_30_minutes": seconds.wall <= 1800,
        "job_seconds_by_agent": job_seconds.groupby("name")["wall"].sum().round(1).to_dict(),
        "cpu": {**cpu, "job_seconds_by_agent": job_seconds.groupby("name")["cpu"].sum().round(1).to_dict()},
        "machine": machine(load),
    })


def figures(seconds: float, env_loop: float, floor_loops: float, horizon: int) -> dict:
    """The figures of one clock: the frontier's ``seconds``, the environment loop's (one seed) and the floor in env
    loops (wall: jobs / workers; CPU, summed over the processes: jobs)."""
    floor = env_loop * floor_loops
    return {"seconds": round(seconds, 1), "env_loop_us_per_round": round(1e6 * env_loop / horizon, 2),
            "env_loop_floor_seconds": round(floor, 1), "ratio_to_env_loop_floor": round(seconds / floor, 2)}


if __name__ == "__main__":
    main()
