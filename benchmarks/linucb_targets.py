"""Issue 25's three LinUCB targets, each a CPU-time ratio to a plain numpy LinUCB in the same run. Prints JSON.

The problem is ``linucb_benchmark.py``'s: LinUCB (disjoint, alpha = 1, lam = 1), K = 10, unit-l2 Gaussian contexts,
dense theta, linear rewards. The reference is :func:`reference_linucb.linucb_reference`, a straightforward per-round
numpy Sherman-Morrison loop over the contexts and every arm's rewards that the environment serves with seed 0
(pre-drawn; its arms are compared with the agent's, ``arms_agree_with_reference``). The targets:

* ``single_d20``: ``simulate`` (one seed, d = 20) >= 7x the reference (per round);
* ``lockstep_d20``: ``simulate_batch`` over 16 seeds (d = 20) >= 12x the reference, per seed-round. A lockstep unit
  on the block path plays its seeds one after the other (``experiment/loop.py``), so this is at best the single
  seed's ratio;
* ``single_d200``: ``simulate`` (one seed, d = 200) >= 2x the reference at d = 200.

Cases are interleaved (``_bench.interleaved_clocks``: round-robin repetitions); each ratio is the median over the
repetitions of (reference seconds per round) / (case seconds per seed-round) within one repetition, with its range,
in CPU time (the verdict: the machine is shared) and wall time, next to the load average.

    python benchmarks/linucb_targets.py [--horizon 20000] [--seeds 16] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

import gymnasium
import numpy as np

import dpbandit.envs  # noqa: F401
from _bench import emit, interleaved_clocks, machine, timed
from dpbandit.agents import make_agent
from dpbandit.experiment import simulate
from dpbandit.experiment.batch import simulate_batch
from dpbandit.experiment.config import AgentSpec, EnvSpec
from dpbandit.experiment.runner import one_blas_thread
from dpbandit.seeding import stream
from linucb_benchmark import ENV_ID, agent_arms, env_kwargs, predraw
from reference_linucb import linucb_reference

#: target name -> (d, seeds in the case or None for one, the ratio it must reach)
TARGETS = {"single_d20": (20, None, 7.0), "lockstep_d20": (20, "lockstep", 12.0), "single_d200": (200, None, 2.0)}


def cases(horizon: int, n_seeds: int) -> tuple[dict, dict, dict]:
    """The timed cases, the seed-rounds each does, and the arms' agreement with the reference per d."""
    run, work, agree = {}, {}, {}
    for dim in sorted({d for d, _, _ in TARGETS.values()}):
        kwargs = env_kwargs(dim, horizon)
        env = gymnasium.make(ENV_ID, **kwargs)
        agent = make_agent("linucb", env, alpha=1.0)
        contexts, rewards = predraw(dim, horizon, 0)
        with one_blas_thread():
            agree[dim] = round(float(np.mean(agent_arms(agent, contexts, rewards, 0) == linucb_reference(
                contexts, rewards, stream(0, "exploration"), alpha=1.0))), 4)

        def reference(contexts=contexts, rewards=rewards):
            with one_blas_thread():  # as simulate runs (and the reference's fastest here)
                linucb_reference(contexts, rewards, stream(0, "exploration"), alpha=1.0)

        run[f"reference_d{dim}"], work[f"reference_d{dim}"] = timed(reference), horizon
        run[f"single_d{dim}"] = timed(lambda env=env, agent=agent: simulate(env, agent, 0, checkpoints=100))
        work[f"single_d{dim}"] = horizon
    spec, seeds = EnvSpec(ENV_ID, env_kwargs(20, horizon)), list(range(n_seeds))
    run["lockstep_d20"] = timed(lambda: simulate_batch(spec, AgentSpec("linucb", params={"alpha": 1.0}), seeds, 100))
    work["lockstep_d20"] = horizon * n_seeds
    return run, work, agree


def verdicts(times: dict, work: dict) -> dict:
    out = {}
    for name, (dim, _, target) in TARGETS.items():
        ref = f"reference_d{dim}"
        row = {"target": target}
        for which in ("cpu", "wall"):
            per = {k: [getattr(t, which) / work[k] for t in times[k]] for k in (name, ref)}
            ratios = [r / c for r, c in zip(per[ref], per[name])]
            suffix = "" if which == "cpu" else "_wall"
            row[f"ratio{suffix}"] = round(statistics.median(ratios), 2)
            row[f"range{suffix}"] = [round(min(ratios), 2), round(max(ratios), 2)]
            row[f"us_per_seed_round{suffix}"] = round(1e6 * statistics.median(per[name]), 3)
            row[f"reference_us_per_round{suffix}"] = round(1e6 * statistics.median(per[ref]), 3)
        row["met"] = bool(row["ratio"] >= target)  # on CPU time
        out[name] = row
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizon", type=int, default=20_000)
    parser.add_argument("--seeds", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    load = os.getloadavg()
    run, work, agree = cases(args.horizon, args.seeds)
    targets = verdicts(interleaved_clocks(run, args.repeats), work)
    emit({
        "benchmark": "linucb_targets",
        "command": "python benchmarks/linucb_targets.py " + " ".join(sys.argv[1:]),
        "workload": {"env": ENV_ID, "agent": "linucb (disjoint, alpha=1, lam=1)", "n_arms": 10,
                     "horizon": args.horizon, "lockstep_seeds": args.seeds, "repeats": args.repeats,
                     "statistic": "median over interleaved repetitions of the per-repetition ratio; verdict on CPU"},
        "targets": targets,
        "all_met": all(t["met"] for t in targets.values()),
        "arms_agree_with_reference": {f"d={d}": a for d, a in agree.items()},
        "machine": machine(load),
    })


if __name__ == "__main__":
    main()
