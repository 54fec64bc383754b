"""FLIPHAT acceptance (issue #11): regret ratios with paired 95% intervals, and per-round cost. Prints JSON; not a test.

Environment ``dpbandit/HanFigure51-K2-v0`` (K = 2, d = 50, Figure 5.1 of Han et al.), delta = 1/T, the same seeds
for every agent (common random numbers: seed s gives every agent the same instance, users and reward noise).
Final cumulative regrets per seed; ratios ``mean(a)/mean(b)`` with a paired bootstrap interval and the paired
difference with a Student-t interval (``dpbandit.experiment.stats``). Targets:

* epsilon = 1, T = 1e5: fliphat (Laplace) random/agent >= 2.0 and agent/DP-HDB <= 0.6; fliphat (Gumbel)
  random/agent >= 5;
* epsilon = 4, T = 1e4: fliphat (Laplace) agent/random <= 0.80;
* noise off, T = 1e4: agent/random <= 0.03;
* cost: microseconds per round of ``act`` + ``update`` (the environment excluded), fliphat vs DP-HDB measured in the
  same epsilon = 1, T = 1e5 runs: DP-HDB/fliphat >= 3.

The agent's own time is wall time (a CPU clock per call would cost more than a round); the whole loop (environment
included) is timed on both clocks, and ``"cpu"`` gives its CPU time per round and the DP-HDB / fliphat ratio
(``_bench.py``: CPU time, which other processes do not inflate), next to the same figures in wall time.

    python benchmarks/fliphat_acceptance.py [--seeds 5] [--long-horizon 100000] [--short-horizon 10000]
"""

from __future__ import annotations

import argparse
import math
import os
import time

import gymnasium
import numpy as np

import dpbandit.envs  # noqa: F401
from _bench import Times, clock, emit, machine
from dpbandit.agents import make_agent
from dpbandit.experiment.stats import paired_difference, ratio_interval

ENV_ID = "dpbandit/HanFigure51-K2-v0"


def run(agent_name: str, params: dict, horizon: int, seed: int) -> tuple[float, float, Times]:
    """(final cumulative regret, microseconds per round in act + update, microseconds per round of the whole loop
    on both clocks) of one seeded run."""
    env = gymnasium.make(ENV_ID, horizon=horizon)
    agent = make_agent(agent_name, env, **params)
    loop = clock()
    obs, _ = env.reset(seed=seed)
    agent.reset(seed)
    regret, spent = 0.0, 0.0
    wall = time.perf_counter
    for _ in range(horizon):
        start = wall()
        arm = agent.act(obs)
        spent += wall() - start
        next_obs, reward, _, _, info = env.step(arm)
        start = wall()
        agent.update(obs, arm, reward, info)
        spent += wall() - start
        regret += info["regret"]
        obs = next_obs
    return regret, 1e6 * spent / horizon, (clock() - loop) / (horizon / 1e6)


def runs(agent_name: str, params: dict, horizon: int, seeds: list[int]) -> dict:
    out = [run(agent_name, params, horizon, s) for s in seeds]
    return {"regret": [r for r, _, _ in out], "us_per_round": [u for _, u, _ in out],
            "loop_us_per_round": [t.wall for _, _, t in out], "loop_cpu_us_per_round": [t.cpu for _, _, t in out]}


def interval(iv) -> dict:
    return {"estimate": iv.estimate, "low": iv.low, "high": iv.high, "n": iv.n, "method": iv.method}


def compare(name: str, num: list[float], den: list[float], target: str, passes) -> dict:
    """Ratio mean(num)/mean(den) with its interval, the paired difference num - den, and the target verdict."""
    ratio = ratio_interval(num, den)
    diff = paired_difference(num, den)
    return {"ratio": name, "target": target, "ratio_ci": interval(ratio), "difference_ci": interval(diff),
            "difference_excludes_zero": diff.excludes(0.0), "meets_target": bool(passes(ratio.estimate)),
            "meets_target_at_ci_bound": bool(passes(ratio.low) and passes(ratio.high))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--long-horizon", type=int, default=100_000)
    parser.add_argument("--short-horizon", type=int, default=10_000)
    args = parser.parse_args()
    seeds = list(range(args.seeds))
    long_t, short_t = args.long_horizon, args.short_horizon
    load = os.getloadavg()

    res = {
        "random_long": runs("random", {}, long_t, seeds),
        "dp_hdb_eps1_long": runs("dp_hdb", {"epsilon": 1.0}, long_t, seeds),
        "fliphat_laplace_eps1_long": runs("fliphat", {"epsilon": 1.0}, long_t, seeds),
        "fliphat_gumbel_eps1_long": runs("fliphat", {"epsilon": 1.0, "selection": "gumbel"}, long_t, seeds),
        "random_short": runs("random", {}, short_t, seeds),
        "fliphat_laplace_eps1_short": runs("fliphat", {"epsilon": 1.0}, short_t, seeds),
        "fliphat_laplace_eps4_short": runs("fliphat", {"epsilon": 4.0}, short_t, seeds),
        "fliphat_noise_off_short": runs("fliphat", {"epsilon": math.inf}, short_t, seeds),
    }
    r = {k: v["regret"] for k, v in res.items()}
    checks = [
        compare(f"random / fliphat laplace (eps=1, T={long_t})", r["random_long"], r["fliphat_laplace_eps1_long"],
                ">= 2.0", lambda x: x >= 2.0),
        compare(f"fliphat laplace / DP-HDB (eps=1, T={long_t})", r["fliphat_laplace_eps1_long"],
                r["dp_hdb_eps1_long"], "<= 0.6", lambda x: x <= 0.6),
        compare(f"random / fliphat gumbel (eps=1, T={long_t})", r["random_long"], r["fliphat_gumbel_eps1_long"],
                ">= 5", lambda x: x >= 5.0),
        compare(f"fliphat laplace / random (eps=4, T={short_t})", r["fliphat_laplace_eps4_short"], r["random_short"],
                "<= 0.80", lambda x: x <= 0.8),
        compare(f"fliphat noise off / random (T={short_t})", r["fliphat_noise_off_short"], r["random_short"],
                "<= 0.03", lambda x: x <= 0.03),
        compare(f"random / fliphat laplace (eps=1, T={short_t}; reference, no target)", r["random_short"],
                r["fliphat_laplace_eps1_short"], "reference 1.01 (spec §2)", lambda x: True),
        compare(f"us/round DP-HDB / fliphat laplace (eps=1, T={long_t}, same runs)",
                res["dp_hdb_eps1_long"]["us_per_round"], res["fliphat_laplace_eps1_long"]["us_per_round"], ">= 3",
                lambda x: x >= 3.0),
    ]
    loop = {which: interval(ratio_interval(res["dp_hdb_eps1_long"][key], res["fliphat_laplace_eps1_long"][key]))
            for which, key in (("wall", "loop_us_per_round"), ("cpu", "loop_cpu_us_per_round"))}
    emit({
        "benchmark": "fliphat_acceptance", "env": ENV_ID, "delta": "1/T", "seeds": seeds,
        "checks": checks,
        "final_regret": {k: [round(x, 2) for x in v] for k, v in r.items()},
        "us_per_round": {k: round(float(np.mean(v["us_per_round"])), 2) for k, v in res.items()},
        "whole_loop_us_per_round": {k: round(float(np.mean(v["loop_us_per_round"])), 2) for k, v in res.items()},
        "whole_loop_ratio_dp_hdb_over_fliphat": loop["wall"],
        "cpu": {"whole_loop_us_per_round": {k: round(float(np.mean(v["loop_cpu_us_per_round"])), 2)
                                            for k, v in res.items()},
                "whole_loop_ratio_dp_hdb_over_fliphat": loop["cpu"]},
        "machine": machine(load),
    })


if __name__ == "__main__":
    main()
