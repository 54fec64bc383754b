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
loop (no division by the workers), and the ratio is the frontier's total work over the floor's; the process clock
counts the workers only once they have exited, so ``jobs_ratio_to_env_loop_floor`` (on both clocks) gives the ratio
from every job's own time (resumed jobs included): the figure to read after a sweep run with ``--out`` or resumed.

Issue 25's target for T = 10^6: every private agent other than DP-UCB at most half of its share of the job-seconds
at the issue's filing (commit 239094a, T = 10^5). ``share_of_job_seconds`` gives each agent's share (references
included) on both clocks; ``issue_25`` compares the private agents' shares with those of ``--baseline`` (default
``frontier_baseline_239094a.json`` beside this script, made by this script run with ``--horizon 100000`` on that
commit with the runner's per-job CPU time backported, see its ``"note"``: DP-UCB 66 % of the CPU job-seconds,
DP-HDB 21.6 %, episodic ridge 5.9 %, FLIPHAT 4.9 %), read *after the sweep*: wall time at its top level, CPU time
and the verdict under its ``"cpu"``. A share also rises when the other agents get cheaper, so
``issue_25.cost_over_baseline`` gives what it cannot: each agent's own CPU per round, in units of the in-run
environment loop's, over the same figure of the baseline.

    python benchmarks/frontier_benchmark.py [--seeds 10] [--horizon 100000] [--n-jobs 2] [--batch auto|off]
                                            [--baseline PATH] [--out DIR]

With ``--out`` a long sweep (T = 10^6) can be stopped and resumed: the shares and ``issue_25`` come from the jobs'
own CPU times and cover every job; the top-level seconds and floor ratios cover only this process's part
(``workload.resumed_jobs`` says how many jobs were read back, 0 for a sweep timed whole).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

import dpbandit.envs  # noqa: F401
from _bench import clock, emit, env_loop_clocks, machine
from dpbandit.experiment.frontier import EPSILONS, FrontierConfig, run_frontier

AGENTS = ("dp_hdb", "dp_ucb", "fliphat", "episodic_ridge")
BASELINE = Path(__file__).with_name("frontier_baseline_239094a.json")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--horizon", type=int, default=100_000)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--batch", choices=("auto", "off"), default="auto")
    parser.add_argument("--agents", default=",".join(AGENTS))
    parser.add_argument("--baseline", type=Path, default=BASELINE,
                        help="an earlier output of this script: the shares issue 25's target halves")
    parser.add_argument("--out", type=Path, default=None,
                        help="run the sweep in <OUT>/frontier-benchmark and resume it there (finished jobs are read "
                             "back; the shares come from every job's own CPU time); default: a temporary folder")
    args = parser.parse_args()
    load = os.getloadavg()
    fc = FrontierConfig(agents=tuple(args.agents.split(",")), horizons=(args.horizon,), seeds=args.seeds,
                        n_jobs=args.n_jobs, batch=args.batch, name="frontier-benchmark")
    reference = env_loop_clocks(fc.env_id, horizon=args.horizon)
    with tempfile.TemporaryDirectory() as scratch:
        out = args.out or scratch
        jobs_dir = Path(out) / fc.name / "sweep" / "jobs"
        resumed = len(list(jobs_dir.glob("*.json"))) if jobs_dir.is_dir() else 0
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
    by_agent = {which: job_seconds.groupby("name")[which].sum() for which in ("wall", "cpu")}
    shares = {which: (s / s.sum()).round(4).to_dict() for which, s in by_agent.items()}
    emit({
        "benchmark": "frontier",
        "commit": commit(),
        "command": "python benchmarks/frontier_benchmark.py " + " ".join(sys.argv[1:]),
        "workload": {"env": fc.env_id, "agents": list(fc.agents), "references": list(fc.references),
                     "epsilons": [str(e) for e in fc.epsilons], "seeds": args.seeds, "horizon": args.horizon,
                     "n_jobs": args.n_jobs, "batch": args.batch, "jobs": jobs, "resumed_jobs": resumed},
        **wall,
        "minutes": round(seconds.wall / 60, 2),
        "meets_30_minutes": seconds.wall <= 1800,
        "job_seconds_by_agent": by_agent["wall"].round(1).to_dict(),
        "share_of_job_seconds": shares["wall"],
        "jobs_ratio_to_env_loop_floor": jobs_ratio(by_agent["wall"], wall, jobs, args.horizon),
        "cpu": {**cpu, "job_seconds_by_agent": by_agent["cpu"].round(1).to_dict(),
                "share_of_job_seconds": shares["cpu"],
                "jobs_ratio_to_env_loop_floor": jobs_ratio(by_agent["cpu"], cpu, jobs, args.horizon)},
        "issue_25": {**half_shares(shares, fc.agents, args.baseline),
                     "cost_over_baseline": cost_over_baseline(by_agent["cpu"], cpu["env_loop_us_per_round"],
                                                              args.horizon, args.baseline)},
        "machine": machine(load),
    })


def commit() -> str:
    """The checkout's commit (with "+changes" when files under version control differ from it)."""
    here = Path(__file__).parent

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=here, capture_output=True, text=True).stdout.strip()

    return git("rev-parse", "HEAD") + ("+changes" if git("status", "--porcelain", "--untracked-files=no") else "")


def half_shares(shares: dict[str, dict[str, float]], agents: tuple[str, ...], baseline: Path) -> dict:
    """Issue 25's target on each clock: every private agent but DP-UCB at most half of its share in ``baseline``
    (an earlier output of this script; a clock it lacks, or no file, gives no verdict)."""
    if not baseline.is_file():
        return {"baseline": str(baseline), "verdict": "no baseline file"}
    before = json.loads(baseline.read_text())
    out = {"baseline": str(baseline), "baseline_commit": before.get("commit"),
           "baseline_horizon": before["workload"]["horizon"]}
    verdicts = {}
    for which, now in shares.items():
        then = (before["share_of_job_seconds"] if which == "wall" else
                before.get("cpu", {}).get("share_of_job_seconds")) or {}
        rows = {a: {"share": now.get(a), "baseline_share": then.get(a),
                    "share_over_baseline": round(now[a] / then[a], 3) if a in now and then.get(a) else None}
                for a in agents if a != "dp_ucb"}
        met = bool(then) and all(r["share_over_baseline"] is not None and r["share_over_baseline"] <= 0.5
                                 for r in rows.values())
        verdicts[which] = {"agents": rows, "dp_ucb_share": now.get("dp_ucb"),
                           "dp_ucb_baseline_share": then.get("dp_ucb"), "every_other_agent_at_most_half": met}
    out.update(verdicts.get("wall", {}))  # the wall clock's verdict here, the CPU clock's (the verdict) under "cpu"
    out["cpu"] = verdicts.get("cpu", {})
    return out


def cost_over_baseline(cpu_by_agent: pd.Series, env_loop_us: float, horizon: int, baseline: Path) -> dict:
    """Each agent's own work against ``baseline``'s, a figure the other agents' costs do not move (a share does): its
    CPU job-seconds per round in units of the in-run environment loop's CPU per round, divided by the same figure of
    the baseline (same workload per round; the horizons may differ)."""
    if not baseline.is_file():
        return {}
    before = json.loads(baseline.read_text())
    then = before.get("cpu", {}).get("job_seconds_by_agent", {})
    then_loop, then_horizon = before.get("cpu", {}).get("env_loop_us_per_round"), before["workload"]["horizon"]
    if not then or not then_loop:
        return {}

    def in_loops(seconds: float, loop_us: float, rounds: int) -> float:
        return 1e6 * seconds / rounds / loop_us

    return {a: round(in_loops(s, env_loop_us, horizon) / in_loops(then[a], then_loop, then_horizon), 3)
            for a, s in cpu_by_agent.items() if then.get(a)}


def jobs_ratio(job_seconds: pd.Series, clock: dict, jobs: int, horizon: int) -> float:
    """Every job's own seconds summed (resumed jobs included) over the floor of as many environment loops."""
    return round(float(job_seconds.sum()) / (jobs * clock["env_loop_us_per_round"] * 1e-6 * horizon), 2)


def figures(seconds: float, env_loop: float, floor_loops: float, horizon: int) -> dict:
    """The figures of one clock: the frontier's ``seconds``, the environment loop's (one seed) and the floor in env
    loops (wall: jobs / workers; CPU, summed over the processes: jobs)."""
    floor = env_loop * floor_loops
    return {"seconds": round(seconds, 1), "env_loop_us_per_round": round(1e6 * env_loop / horizon, 2),
            "env_loop_floor_seconds": round(floor, 1), "ratio_to_env_loop_floor": round(seconds / floor, 2)}


if __name__ == "__main__":
    main()
