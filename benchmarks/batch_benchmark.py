"""Seed-batched simulation against single-seed runs, measured in the same run (issue 15, item 2). Prints JSON.

Workload: LinUCB (alpha = 1) and greedy, disjoint (``--structure shared``: shared), K = 10, d = 20 (and 200), dense
theta, unit-l2 Gaussian contexts, T = 5,000 by default. Cases, interleaved (``_bench.py``: round-robin repetitions,
medians): ``single`` = ``simulate`` of one seed (``gymnasium.make`` env, 100 checkpoints); ``batched`` =
``simulate_batch`` of S = 16 seeds (identical frames per seed, ``tests/agents/test_batched.py``). ``speedup`` =
batched seed-rounds/s / single seed-rounds/s; the issue asks >= 3 for LinUCB at d = 20 and >= 2 for DP-UCB and
DP-HDB, with 16 seeds. For DP-UCB a third case, ``bare`` (``dpucb_benchmark.py``'s bare line: a seed's node-noise
draws, factorisations and index solves, which lockstep cannot share), gives ``speedup_bound`` = single / bare, what
lockstep would reach if a seed-round cost that alone, with a free environment. ``--agents`` / ``--env`` measure
other agents (default parameters) or a preset environment (``--env dpbandit/HanFigure51-K2-v0``: the preset's K and
d, ``--dims`` ignored), e.g. the frontier's episodic agents:

    python benchmarks/batch_benchmark.py [--repeats 3] [--horizon 5000] [--seeds 16] [--dims 20,200]
    python benchmarks/batch_benchmark.py --agents dp_ucb --dims 20 --structure shared
    python benchmarks/batch_benchmark.py --horizon 100000 --agents fliphat,episodic_ridge --env ENV_ID
"""

from __future__ import annotations

import argparse
import os

import gymnasium

import dpbandit.envs  # noqa: F401
from _bench import emit, interleaved, machine, timed
from dpucb_benchmark import bare_work
from dpbandit.agents import make_agent
from dpbandit.experiment import simulate
from dpbandit.experiment.batch import simulate_batch
from dpbandit.experiment.config import AgentSpec, EnvSpec


GLM = "dpbandit/GLMBandit-v0"


def measure(agent_type: str, dim: int | None, horizon: int, n_seeds: int, repeats: int, env_id: str = GLM,
            structure: str = "disjoint") -> dict:
    kwargs = {} if dim is None else {"n_arms": 10, "dim": dim, "theta": "dense", "structure": structure}
    env_spec = EnvSpec(env_id, {**kwargs, "horizon": horizon})
    agent_spec = AgentSpec(agent_type)
    env = gymnasium.make(env_spec.id, **env_spec.kwargs)
    agent = make_agent(agent_type, env)
    seeds = list(range(n_seeds))
    cases = {"single": timed(lambda: simulate(env, agent, 0, checkpoints=100)),
             "batched": timed(lambda: simulate_batch(env_spec, agent_spec, seeds, checkpoints=100))}
    c = env.unwrapped.constants
    if agent_type == "dp_ucb":  # the per-seed work no lockstep removes: dpucb_benchmark.py's bare line
        cases["bare"] = bare_work(c.n_arms if c.structure == "disjoint" else 1, c.dim, horizon, n_arms=c.n_arms)
    s = interleaved(cases, repeats)
    single, batched = horizon / s["single"], n_seeds * horizon / s["batched"]
    out = {"single_seed_rounds_per_second": round(single), "batched_seed_rounds_per_second": round(batched),
           "speedup": round(batched / single, 2)}
    if "bare" in s:  # the speedup lockstep would reach if a seed-round cost the bare work alone, environment free
        out["bare_us_per_round"] = round(1e6 * s["bare"] / horizon, 1)
        out["speedup_bound"] = round(s["single"] / s["bare"], 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--horizon", type=int, default=5000)
    parser.add_argument("--seeds", type=int, default=16)
    parser.add_argument("--dims", default="20,200")
    parser.add_argument("--agents", default="linucb,greedy")
    parser.add_argument("--env", default=GLM)
    parser.add_argument("--structure", default="disjoint", choices=["disjoint", "shared"],
                        help="the GLM bandit's structure (ignored with a preset --env)")
    args = parser.parse_args()
    load = os.getloadavg()
    agents = args.agents.split(",")
    cases = ({f"{a}, d={d}": (a, int(d)) for d in args.dims.split(",") for a in agents} if args.env == GLM
             else {a: (a, None) for a in agents})  # a preset keeps its own K and d
    results = {name: measure(a, d, args.horizon, args.seeds, args.repeats, args.env, args.structure)
               for name, (a, d) in cases.items()}
    workload = {"n_arms": 10, "structure": args.structure} if args.env == GLM else {"env": args.env}
    emit({"benchmark": "seed_batch", "workload": {**workload, "horizon": args.horizon, "seeds": args.seeds,
                                                  "statistic": "median, interleaved"},
          "results": results, "machine": machine(load)})


if __name__ == "__main__":
    main()
