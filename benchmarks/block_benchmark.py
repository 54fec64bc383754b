"""The block protocol against the ``step`` loop (issue 25), in process CPU time and wall time, in one run.

Prints JSON. Every figure is a ratio to a reference measured in the same run, the cases interleaved (case 1, case 2,
..., case 1, ...) and the median of the repetitions kept, in CPU time (``time.process_time``: what survives a shared,
loaded machine) and wall time, next to the load average at the start and the end:

* ``linucb_single``: LinUCB, K = 10, d = 20, one seed: ``simulate`` (blocks: the environment's block, one kernel
  call per block) against :func:`~dpbandit.experiment.loop.play_steps` (Gymnasium ``step``, ``act``, ``update``
  every round) on the same environment and agent; the two give the same frame (checked).
* ``linucb_lockstep``: the same with 16 seeds: ``simulate_batch`` (the block loop, seed after seed) against the
  round-by-round lockstep of the batched form over the vector environment (the path 0.1.0 took).
* ``dp_hdb``: DP-HDB, K = 10, d = 1000 (its block kernel, ``dpbandit.agents.dp_hdb_blocks``), one seed and 16 in
  lockstep (the block loop, seed after seed), per seed-round (its targets: ``benchmarks/dphdb_benchmark.py``); and
  the two parts issue 25 first made blockwise, each against the 0.1.0 way in the same run: the environment's means (the compiled
  :func:`~dpbandit.envs.blocks.linear_predictors` against the broadcast product and ``sum``) and DP-POFW's proposals
  (drawn for 256 steps at once against two numpy calls per step).

Run: ``python benchmarks/block_benchmark.py`` (about two minutes); ``--horizon``, ``--seeds``, ``--repeats``.
"""

from __future__ import annotations

import argparse
import os
import statistics

import gymnasium
import numpy as np

import dpbandit.envs  # noqa: F401
from _bench import Times, emit, interleaved_clocks, machine, timed
from dpbandit.agents import make_agent
from dpbandit.agents.batched import batched_form
from dpbandit.envs.blocks import linear_predictors
from dpbandit.envs.vector import GLMBanditVectorEnv
from dpbandit.experiment import simulate
from dpbandit.experiment import batch as lockstep
from dpbandit.experiment.batch import simulate_batch
from dpbandit.experiment.config import AgentSpec, EnvSpec
from dpbandit.experiment.loop import play_steps
from dpbandit.experiment.runner import one_blas_thread

GLM = "dpbandit/GLMBandit-v0"


def summary(times: dict[str, list[Times]], work: dict[str, int], reference: str) -> dict:
    """Per case: median microseconds per seed-round and the per-repetition ratios to ``reference``, wall and CPU (``_cpu``)."""
    out = {}
    for name, values in times.items():
        cpu = [t.cpu / work[name] * 1e6 for t in values]
        wall = [t.wall / work[name] * 1e6 for t in values]
        ref_cpu = [t.cpu / work[reference] * 1e6 for t in times[reference]]
        ref_wall = [t.wall / work[reference] * 1e6 for t in times[reference]]
        out[name] = {
            "us_per_seed_round": round(statistics.median(wall), 3),
            "us_per_seed_round_cpu": round(statistics.median(cpu), 3),
            f"speedup_vs_{reference}": round(statistics.median([r / x for r, x in zip(ref_wall, wall)]), 2),
            f"speedup_vs_{reference}_cpu": round(statistics.median([r / x for r, x in zip(ref_cpu, cpu)]), 2),
            "speedup_range": [round(min(r / x for r, x in zip(ref_wall, wall)), 2),
                              round(max(r / x for r, x in zip(ref_wall, wall)), 2)],
            "speedup_range_cpu": [round(min(r / x for r, x in zip(ref_cpu, cpu)), 2),
                                  round(max(r / x for r, x in zip(ref_cpu, cpu)), 2)],
        }
    return out


def linucb(horizon: int, n_seeds: int, repeats: int) -> dict:
    kwargs = {"n_arms": 10, "dim": 20, "horizon": horizon}
    env = gymnasium.make(GLM, **kwargs)
    agent = make_agent("linucb", env)
    assert simulate(env, agent, 0).equals(play_steps(env, agent, 0, None))

    def steps():
        with one_blas_thread():
            play_steps(env, agent, 0, None)

    def old_lockstep():  # 0.1.0's path: the batched form round by round over the vector environment
        envs = [gymnasium.make(GLM, **kwargs) for _ in range(n_seeds)]
        agents = [make_agent("linucb", e) for e in envs]
        with one_blas_thread():
            for a, s in zip(agents, range(n_seeds)):
                a.reset(s)
            world = lockstep._Vector(GLMBanditVectorEnv.from_envs([e.unwrapped for e in envs]), list(range(n_seeds)))
            lockstep._play(world, batched_form(agents), horizon, None)

    spec, seeds = EnvSpec(GLM, kwargs), list(range(n_seeds))
    cases = {"single_blocks": timed(lambda: simulate(env, agent, 0)),
             "single_steps": timed(steps),
             "lockstep_blocks": timed(lambda: simulate_batch(spec, AgentSpec("linucb"), seeds)),
             "lockstep_round_by_round": timed(old_lockstep)}
    work = {"single_blocks": horizon, "single_steps": horizon,
            "lockstep_blocks": horizon * n_seeds, "lockstep_round_by_round": horizon * n_seeds}
    times = interleaved_clocks(cases, repeats)
    single = summary({k: times[k] for k in ("single_blocks", "single_steps")}, work, "single_steps")
    locked = summary({k: times[k] for k in ("lockstep_blocks", "lockstep_round_by_round")}, work,
                     "lockstep_round_by_round")
    return {"env": {"id": GLM, **kwargs}, "seeds": n_seeds, "single": single, "lockstep": locked}


def dp_hdb(horizon: int, n_seeds: int, repeats: int) -> dict:
    kwargs = {"n_arms": 10, "dim": 1000, "horizon": horizon}
    env = gymnasium.make(GLM, **kwargs)
    agent = make_agent("dp_hdb", env)
    spec, seeds = EnvSpec(GLM, kwargs), list(range(n_seeds))
    K, d, n = 10, 1000, 104  # an environment block at K = 10, d = 1000: 2^20 // d rounds, at most 1024
    g = np.random.default_rng(0)
    x, theta, out = g.normal(size=(n, d)), g.normal(size=(K, d)), np.empty((n, K))
    obs = np.broadcast_to(x[:, None, :], (n, K, d))
    rng, B, R = np.random.default_rng(1), 32, 256

    def means_kernel():
        for _ in range(20):
            linear_predictors(obs, theta, out)

    def means_broadcast():
        for _ in range(20):
            (obs * theta).sum(axis=-1)

    def draws_blocked():
        for _ in range(4):
            rng.integers(0, 2 * d, size=(R, K, B))
            rng.random((R, K, B))

    def draws_per_step():
        for _ in range(4 * R):
            rng.integers(0, 2 * d, size=(K, B))
            rng.random((K, B))

    cases = {"single": timed(lambda: simulate(env, agent, 0)),
             "lockstep": timed(lambda: simulate_batch(spec, AgentSpec("dp_hdb"), seeds)),
             "means_kernel": timed(means_kernel), "means_broadcast": timed(means_broadcast),
             "proposals_blocked": timed(draws_blocked), "proposals_per_step": timed(draws_per_step)}
    work = {"single": horizon, "lockstep": horizon * n_seeds, "means_kernel": 20 * n, "means_broadcast": 20 * n,
            "proposals_blocked": 4 * R, "proposals_per_step": 4 * R}
    times = interleaved_clocks(cases, repeats)
    return {"env": {"id": GLM, **kwargs}, "seeds": n_seeds,
            "agent": summary({k: times[k] for k in ("single", "lockstep")}, work, "single"),
            "environment_means": summary({k: times[k] for k in ("means_kernel", "means_broadcast")}, work,
                                         "means_broadcast"),
            "proposals": summary({k: times[k] for k in ("proposals_blocked", "proposals_per_step")}, work,
                                 "proposals_per_step")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizon", type=int, default=20_000, help="LinUCB's rounds per seed")
    parser.add_argument("--hdb-horizon", type=int, default=1_000, help="DP-HDB's rounds per seed")
    parser.add_argument("--seeds", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    load = os.getloadavg()
    simulate(gymnasium.make(GLM, n_arms=2, dim=3, horizon=5), make_agent("linucb", gymnasium.make(GLM, horizon=5,
                                                                                            n_arms=2, dim=3)), 0)
    result = {"benchmark": "block_benchmark",
              "linucb": linucb(args.horizon, args.seeds, args.repeats),
              "dp_hdb": dp_hdb(args.hdb_horizon, args.seeds, args.repeats),
              "repeats": args.repeats, "machine": machine(load)}
    emit(result)


if __name__ == "__main__":
    main()
