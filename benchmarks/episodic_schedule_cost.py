"""CPU per round of the episodic agents (episodic ridge under the noise-scaled schedule, ``docs/episodic-agents.md``
§6.5, and FLIPHAT) at a large dimension, against greedy ridge in the same process. Prints JSON; not a test.

Workload: ``dpbandit/SparseLinear-v0`` with K = 2 (disjoint), d = 1000, T = 10^4 (``--dim``, ``--horizon``), seed 0,
one BLAS thread. Agents: greedy ridge; episodic ridge at epsilon = 16 and 1000 (the schedule's shortest episodes are
the first one, K d users: no O(d^3) decomposition per round however large epsilon) and with the noise off (a release
after every user, kept by Sherman-Morrison); FLIPHAT at epsilon = 1 and with the noise off (every user kept, a refit
after every user: ``agents/fliphat_noise_off.py``). ``--env`` another environment id (then only its horizon is set,
e.g. ``dpbandit/HanFigure51-K2-v0``, the frontier's: d = 50, K = 2). Reported: CPU microseconds per round of the whole ``simulate`` loop
(``time.process_time``, which other processes on the machine do not inflate), the ratio to greedy's, and each
schedule's releases and n*. Every agent first plays a short warm-up run (compiled kernels loaded). With ``--steps``,
also each agent's CPU per round through the Gymnasium ``step`` loop (:func:`~dpbandit.experiment.loop.play_steps`,
``act`` / ``update`` every round) in the same process, and ``block_over_step``: the block path's share of it (issue
25: the episodic agents' ``play_block``; the two give the same frame).

    python benchmarks/episodic_schedule_cost.py [--dim 1000] [--horizon 10000] [--steps] [--env ID]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time

import gymnasium

import dpbandit  # noqa: F401  (registers the environments)
from dpbandit.agents import make_agent
from dpbandit.experiment.loop import play_steps
from dpbandit.experiment.runner import simulate

AGENTS = (("greedy", "greedy", {}), ("episodic_ridge@1", "episodic_ridge", {"epsilon": 1.0}),
          ("episodic_ridge@16", "episodic_ridge", {"epsilon": 16.0}),
          ("episodic_ridge@1000", "episodic_ridge", {"epsilon": 1000.0}),
          ("episodic_ridge_noise_off", "episodic_ridge", {"epsilon": math.inf}),
          ("fliphat@1", "fliphat", {"epsilon": 1.0}), ("fliphat_noise_off", "fliphat", {"epsilon": math.inf}))
DEFAULT_ENV = "dpbandit/SparseLinear-v0"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dim", type=int, default=1000)
    parser.add_argument("--horizon", type=int, default=10_000)
    parser.add_argument("--steps", action="store_true", help="also time the step loop (play_steps)")
    parser.add_argument("--env", default=DEFAULT_ENV, help="environment id (others than the default: horizon only)")
    args = parser.parse_args()
    shape = {"n_arms": 2, "dim": args.dim} if args.env == DEFAULT_ENV else {}
    env = gymnasium.make(args.env, horizon=args.horizon, **shape)
    warm = gymnasium.make(args.env, horizon=min(args.horizon, 300), **shape)
    constants = env.unwrapped.constants
    out = {"load": os.getloadavg(), "env": args.env, "dim": constants.dim, "n_arms": constants.n_arms,
           "horizon": args.horizon, "agents": {}}
    for label, name, params in AGENTS:
        simulate(warm, make_agent(name, warm, **params), 1, checkpoints=2)
        agent = make_agent(name, env, **params)
        schedule = getattr(agent, "schedule", None)
        start = time.process_time()
        simulate(env, agent, 0, checkpoints=2)
        row = {"cpu_us_per_round": round((time.process_time() - start) / args.horizon * 1e6, 2)}
        if args.steps:
            start = time.process_time()
            play_steps(env, agent, 0, checkpoints=2)
            row["step_cpu_us_per_round"] = round((time.process_time() - start) / args.horizon * 1e6, 2)
            row["block_over_step"] = round(row["cpu_us_per_round"] / row["step_cpu_us_per_round"], 3)
        if schedule is not None:
            row.update(releases=schedule.n_episodes, first_episode=schedule.first,
                       n_star=schedule.scale if math.isfinite(schedule.scale) else None)  # (strict JSON)
        out["agents"][label] = row
    greedy = out["agents"]["greedy"]["cpu_us_per_round"]
    for row in out["agents"].values():
        row["cpu_ratio_to_greedy"] = round(row["cpu_us_per_round"] / greedy, 3)
    out["load_after"] = os.getloadavg()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
