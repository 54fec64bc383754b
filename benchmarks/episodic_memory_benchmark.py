"""Episodic agents in bounded memory, and episodic ridge's per-round CPU against DP-HDB's (issue 25, item 3). JSON.

Workload: ``dpbandit/SparseLinear-v0`` (identity link) and ``dpbandit/SparseLogistic-v0`` (logistic) with K = 2,
d = 1000 (``--arms``, ``--dim``), epsilon = 1, delta = 1/T, default parameters otherwise; ``simulate`` with 100
checkpoints, one BLAS thread. Every (case, T) runs in its own child process (``--child``), which reports:

* ``peak_rss_mib``: the child's peak resident set size (``resource.getrusage(RUSAGE_SELF).ru_maxrss``): the
  interpreter, numpy, the environment and the agent at their largest;
* ``agent_mib``: ``peak_rss_mib`` minus that of the environment loop alone (an agent that does nothing, same T, same
  run): what the agent adds;
* ``memory_estimate_mib``: the agent's up-front estimate (``Agent.memory_estimate``, checked before it allocates);
  ``rows_buffer_mib``: what buffering the longest episode's rows (the design before issue 25: about T/2 x d floats)
  would hold at this T, for comparison;
* ``cpu_us_per_round``: ``time.process_time`` of the child's ``simulate`` per round (``us_per_round``: its wall time,
  which other processes on the machine inflate and CPU time does not); for episodic ridge also
  ``release_cpu_us_per_round``, the share spent in its per-episode releases (``_publish`` and the initial release:
  noise, combination, eigendecomposition and V^{-1}), timed by wrapping those methods in the child (the computation
  is unchanged).

The CPU ratio ``episodic_ridge / dp_hdb`` is the median over ``--repeats`` pairs of children run back to back (the
first pair in the pass over every case), with each pair's ratio printed: a pair shares its load, a single run of each
case minutes apart does not (the machine is shared).

Cases: ``fliphat`` (identity), ``fliphat_logistic`` (M = 1), ``fliphat_logistic_m2`` (M = 2 iterations: the
episode's rows on disk, ``disk_estimate_mib``), ``episodic_ridge`` (identity), ``dp_hdb`` (the reference:
DP-POFW's K x d state), ``env_loop`` (the floor). Printed per T: the memory figures, and the ratios
``episodic_ridge / dp_hdb`` of CPU per round (the issue's target: <= 1), with and without the releases. "Does not
grow with T": ``agent_mib`` at the largest T against the smallest (``growth_mib``).

**Memory targets** (``targets``; the issue's: peak RSS <= 2 GB at T = 1e7, d = 1000, or a one-line refusal with the
estimate before any work; < 400 MB at T = 2e5), per episodic case:

* ``T=<t>``: the measured peak RSS (MB = 10^6 bytes) at every T run, and the verdict at T = 2e5 when it is run;
* ``at_target_horizon``: a child builds the environment and the agent at ``--target-horizon`` (1e7) and plays no
  round: the agent's up-front ``memory_estimate`` and ``disk_estimate``, the peak RSS after construction, the seconds
  it took (or the one-line refusal); a run at T = 1e7 is too long for this script;
* ``projected_peak_rss_mb``: the peak RSS at the largest T plus the growth per round measured between the smallest
  and the largest T times the rounds still to go (a growth up to :data:`RSS_RESOLUTION_MB` counts as none); the
  verdict ``<= 2 GB`` compares that projection.

    python benchmarks/episodic_memory_benchmark.py [--horizons 20000,100000,200000] [--dim 1000] [--arms 2]
        [--target-horizon 10000000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

from _bench import emit, machine

CASES = {
    "env_loop": ("dpbandit/SparseLinear-v0", None, {}),
    "fliphat": ("dpbandit/SparseLinear-v0", "fliphat", {}),
    "fliphat_logistic": ("dpbandit/SparseLogistic-v0", "fliphat", {}),
    "fliphat_logistic_m2": ("dpbandit/SparseLogistic-v0", "fliphat", {"iterations": 2}),
    "episodic_ridge": ("dpbandit/SparseLinear-v0", "episodic_ridge", {}),
    "dp_hdb": ("dpbandit/SparseLinear-v0", "dp_hdb", {}),
}
EPISODIC = ("fliphat", "fliphat_logistic", "fliphat_logistic_m2", "episodic_ridge")
MIB, MB = 2**20, 1e6
TARGET_LARGE_MB, TARGET_SMALL_MB, SMALL_T = 2000.0, 400.0, 200_000
#: Peak-RSS differences up to this are read as "no growth" (page-granular allocator noise between two processes).
RSS_RESOLUTION_MB = 2.0


def child(case: str, horizon: int, dim: int, arms: int) -> dict:
    """Run one case in this process and return its figures (module docstring)."""
    import gymnasium
    from threadpoolctl import threadpool_limits

    import dpbandit.envs  # noqa: F401
    from _bench import DoNothing, clock
    from dpbandit.agents import make_agent
    from dpbandit.agents.episodic_ridge import EpisodicRidgeCurator
    from dpbandit.experiment import simulate

    env_id, name, params = CASES[case]
    env = gymnasium.make(env_id, n_arms=arms, dim=dim, horizon=horizon)
    agent = DoNothing() if name is None else make_agent(name, env, epsilon=1.0, **params)
    release_cpu = [0.0]
    for method in ("_publish", "_initial_release"):  # timed, not changed
        inner = getattr(EpisodicRidgeCurator, method)

        def timed(self, *args, _inner=inner):
            start = time.process_time()
            try:
                return _inner(self, *args)
            finally:
                release_cpu[0] += time.process_time() - start

        setattr(EpisodicRidgeCurator, method, timed)
    with threadpool_limits(limits=1, user_api="blas"):
        start = clock()
        simulate(env, agent, 0, checkpoints=100)
        spent = clock() - start
    out = {"peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
           "us_per_round": 1e6 * spent.wall / horizon, "cpu_us_per_round": 1e6 * spent.cpu / horizon}
    if name is not None:
        out["memory_estimate_mib"] = agent.memory_estimate() / MIB
        if hasattr(agent, "disk_estimate"):
            out["disk_estimate_mib"] = agent.disk_estimate() / MIB
        schedule = getattr(agent, "schedule", None)
        if schedule is not None:
            out["rows_buffer_mib"] = 8 * schedule.max_length * (dim + 2) / MIB
    if name == "episodic_ridge":
        out["release_cpu_us_per_round"] = 1e6 * release_cpu[0] / horizon
    return out


def estimate_child(case: str, horizon: int, dim: int, arms: int) -> dict:
    """Build the environment and the agent of ``case`` at ``horizon`` and play nothing: the up-front estimates, the
    peak RSS after construction and its seconds, or the one-line refusal."""
    import gymnasium

    import dpbandit.envs  # noqa: F401
    from dpbandit.agents import make_agent

    env_id, name, params = CASES[case]
    start = time.perf_counter()
    try:
        agent = make_agent(name, gymnasium.make(env_id, n_arms=arms, dim=dim, horizon=horizon), epsilon=1.0, **params)
    except ValueError as refusal:
        return {"refused": str(refusal), "seconds": round(time.perf_counter() - start, 2)}
    out = {"memory_estimate_mib": round(agent.memory_estimate() / MIB, 1),
           "peak_rss_after_construction_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
           "seconds": round(time.perf_counter() - start, 2)}
    if hasattr(agent, "disk_estimate"):
        out["disk_estimate_gb"] = round(agent.disk_estimate() / 1e9, 2)
    return out


def run_child(case: str, horizon: int, dim: int, arms: int, flag: str = "--child") -> dict:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, __file__, flag, case, "--horizons", str(horizon), "--dim", str(dim),
                           "--arms", str(arms)], capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def memory_targets(results: dict, horizons: list[int], at_target: dict, target_horizon: int) -> dict:
    """The issue's memory verdicts per episodic case (module docstring)."""
    first, last = horizons[0], horizons[-1]
    targets = {}
    for case in EPISODIC:
        peaks = {T: results[case][f"T={T}"]["peak_rss_mib"] * MIB / MB for T in horizons}
        growth = peaks[last] - peaks[first]
        slope = growth / (last - first) if growth > RSS_RESOLUTION_MB else 0.0  # below it: no growth detected
        projected = peaks[last] + slope * max(target_horizon - last, 0)
        entry = {f"T={T}": {"peak_rss_mb": round(peaks[T], 1)} for T in horizons}
        if SMALL_T in peaks:
            entry[f"T={SMALL_T}"][f"meets_under_{TARGET_SMALL_MB:g}_mb"] = peaks[SMALL_T] < TARGET_SMALL_MB
        entry[f"growth_mb_from_T={first}_to_T={last}"] = round(growth, 1)
        entry["at_target_horizon"] = {"T": target_horizon, **at_target[case]}
        entry["projected_peak_rss_mb"] = round(projected, 1)
        entry[f"meets_{TARGET_LARGE_MB / 1000:g}_gb_at_target_horizon"] = (
            "refused up front" if "refused" in at_target[case] else projected <= TARGET_LARGE_MB)
        targets[case] = entry
    return targets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizons", default="20000,100000,200000")
    parser.add_argument("--dim", type=int, default=1000)
    parser.add_argument("--arms", type=int, default=2)
    parser.add_argument("--target-horizon", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=3, help="back-to-back (episodic_ridge, dp_hdb) pairs per T")
    parser.add_argument("--child", choices=sorted(CASES))
    parser.add_argument("--estimate-child", choices=EPISODIC)
    args = parser.parse_args()
    horizons = [int(h) for h in args.horizons.split(",")]
    if args.child:
        print(json.dumps(child(args.child, horizons[0], args.dim, args.arms)))
        return
    if args.estimate_child:
        print(json.dumps(estimate_child(args.estimate_child, horizons[0], args.dim, args.arms)))
        return
    load, start = os.getloadavg(), time.perf_counter()
    results = {}
    for T in horizons:
        runs = {case: run_child(case, T, args.dim, args.arms) for case in CASES}
        floor = runs["env_loop"]["peak_rss_mib"]
        for case, r in runs.items():
            if case != "env_loop":
                r["agent_mib"] = r["peak_rss_mib"] - floor
            results.setdefault(case, {})[f"T={T}"] = {k: round(v, 1) for k, v in r.items()}
        pairs = [(runs["episodic_ridge"], runs["dp_hdb"])]  # then back-to-back pairs: each ratio shares its load
        pairs += [tuple(run_child(case, T, args.dim, args.arms) for case in ("episodic_ridge", "dp_hdb"))
                  for _ in range(args.repeats - 1)]
        cpu = [r["cpu_us_per_round"] / h["cpu_us_per_round"] for r, h in pairs]
        without = [(r["cpu_us_per_round"] - r["release_cpu_us_per_round"]) / h["cpu_us_per_round"] for r, h in pairs]
        results.setdefault("ratios", {})[f"T={T}"] = {
            "episodic_ridge_over_dp_hdb": round(statistics.median(r["us_per_round"] / h["us_per_round"]
                                                                  for r, h in pairs), 2),
            "episodic_ridge_over_dp_hdb_cpu": round(statistics.median(cpu), 2),
            "episodic_ridge_over_dp_hdb_cpu_each_pair": [round(x, 2) for x in cpu],
            "episodic_ridge_without_releases_over_dp_hdb_cpu": round(statistics.median(without), 2),
            "release_cpu_us_per_round_each_pair": [round(r["release_cpu_us_per_round"], 1) for r, _ in pairs],
            "meets_1x": statistics.median(cpu) <= 1.0,
        }
    first, last = f"T={horizons[0]}", f"T={horizons[-1]}"
    for case in (*EPISODIC, "dp_hdb"):
        results[case]["growth_mib"] = round(results[case][last]["agent_mib"] - results[case][first]["agent_mib"], 1)
    at_target = {case: run_child(case, args.target_horizon, args.dim, args.arms, "--estimate-child")
                 for case in EPISODIC}
    results["targets"] = memory_targets(results, horizons, at_target, args.target_horizon)
    emit({
        "benchmark": "episodic_memory",
        "workload": {"envs": "SparseLinear-v0 / SparseLogistic-v0", "n_arms": args.arms, "dim": args.dim,
                     "horizons": horizons, "target_horizon": args.target_horizon, "epsilon": 1.0,
                     "one process per (case, T)": True},
        "results": results,
        "seconds_total": round(time.perf_counter() - start, 1),
        "machine": machine(load),
    })


if __name__ == "__main__":
    main()
