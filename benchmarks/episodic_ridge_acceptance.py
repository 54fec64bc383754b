"""Issue 11 acceptance for ``episodic_ridge``: regret against DP-UCB and uniform random play, and cost. Prints JSON;
not a test.

Workload: ``dpbandit/SharedLinear-v0`` (K = 10, d = 20, unit-sphere per-arm features, noise 0.1), T = 10^4,
epsilon = 1, delta = 1/T for both private agents (each with its defaults: episodic_ridge forget/greedy/exact
calibration, DP-UCB tight node noise of spec/errata.md E6), seeds 0..n-1. Every agent sees the same users and reward
noise for a seed (common random numbers), so every comparison is paired by seed:

* regret ratios ``mean(agent) / mean(other)`` with a paired-bootstrap 95% interval
  (:func:`dpbandit.experiment.stats.ratio_interval`) and the paired difference ``other - agent`` with a Student-t
  95% interval (:func:`~dpbandit.experiment.stats.paired_difference`) and its verdict;
* cost: microseconds per round spent in the agent (``act`` + ``update``, timed inside one loop that also steps the
  environment), and of the whole loop, in the same run; the DP-UCB / episodic_ridge ratio with a paired interval.

Targets (issue 11): episodic_ridge <= 0.4x random and <= 0.65x DP-UCB final regret; >= 3x fewer us per round than
DP-UCB. The agent's own time is wall time (a CPU clock per call would cost more than a round of
episodic_ridge); ``"cpu"`` gives the whole loop's CPU time per round (``_bench.py``, which other processes do not
inflate) and its DP-UCB / episodic_ridge ratio, next to the same figures in wall time.

    python benchmarks/episodic_ridge_acceptance.py [--seeds 10] [--horizon 10000] [--epsilon 1]
"""

from __future__ import annotations

import argparse
import os
import time

import gymnasium
import numpy as np

import dpbandit.envs  # noqa: F401
from _bench import Times, clock, emit, machine
from dpbandit.agents import make_agent
from dpbandit.experiment.stats import paired_difference, ratio_interval, verdict

AGENTS = ("episodic_ridge", "dp_ucb", "random")


def run(env, name: str, seed: int, epsilon: float) -> tuple[float, float, Times]:
    """(final regret, agent seconds, loop seconds on both clocks) of one seed; the loop is that of
    ``runner.simulate``."""
    params = {} if name == "random" else {"epsilon": epsilon}
    agent = make_agent(name, env, **params)
    wall = time.perf_counter
    start = clock()
    obs, _ = env.reset(seed=seed)
    agent.reset(seed)
    regret, in_agent = 0.0, 0.0
    for _ in range(env.unwrapped.constants.horizon):
        t0 = wall()
        arm = agent.act(obs)
        t1 = wall()
        next_obs, reward, _, _, info = env.step(arm)
        t2 = wall()
        agent.update(obs, arm, reward, info)
        in_agent += (t1 - t0) + (wall() - t2)
        regret += info["regret"]
        obs = next_obs
    return regret, in_agent, clock() - start


def interval(iv) -> dict:
    return {"estimate": round(iv.estimate, 4), "ci95": [round(iv.low, 4), round(iv.high, 4)], "method": iv.method}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--horizon", type=int, default=10_000)
    parser.add_argument("--epsilon", type=float, default=1.0)
    args = parser.parse_args()
    env = gymnasium.make("dpbandit/SharedLinear-v0", horizon=args.horizon)
    T = args.horizon
    regret = {a: np.empty(args.seeds) for a in AGENTS}
    agent_us = {a: np.empty(args.seeds) for a in AGENTS}
    loop_us = {a: np.empty(args.seeds) for a in AGENTS}
    loop_cpu_us = {a: np.empty(args.seeds) for a in AGENTS}
    load = os.getloadavg()
    for s in range(args.seeds):
        for a in AGENTS:
            regret[a][s], t_agent, t_loop = run(env, a, s, args.epsilon)
            agent_us[a][s], loop_us[a][s], loop_cpu_us[a][s] = 1e6 * t_agent / T, 1e6 * t_loop.wall / T, 1e6 * t_loop.cpu / T
    er, ucb, rnd = regret["episodic_ridge"], regret["dp_ucb"], regret["random"]
    vs_random, vs_ucb = ratio_interval(er, rnd), ratio_interval(er, ucb)
    speed = ratio_interval(agent_us["dp_ucb"], agent_us["episodic_ridge"])
    emit({
        "benchmark": "episodic_ridge_acceptance (issue 11)",
        "workload": {"env": "dpbandit/SharedLinear-v0", "n_arms": 10, "dim": 20, "horizon": T,
                     "epsilon": args.epsilon, "delta": "1/T", "seeds": list(range(args.seeds)),
                     "agents": "episodic_ridge (defaults), dp_ucb (defaults, tight), random"},
        "final_regret": {a: {"mean": round(float(regret[a].mean()), 1), "per_seed": np.round(regret[a], 1).tolist()}
                         for a in AGENTS},
        "regret_ratio_episodic_ridge_over_random": interval(vs_random),
        "regret_ratio_episodic_ridge_over_dp_ucb": interval(vs_ucb),
        "paired_difference_random_minus_episodic_ridge": interval(paired_difference(rnd, er)),
        "paired_difference_dp_ucb_minus_episodic_ridge": interval(paired_difference(ucb, er)),
        "verdicts": [verdict("episodic_ridge", "random", er, rnd), verdict("episodic_ridge", "dp_ucb", er, ucb)],
        "us_per_round_in_agent": {a: round(float(agent_us[a].mean()), 1) for a in AGENTS},
        "us_per_round_whole_loop": {a: round(float(loop_us[a].mean()), 1) for a in AGENTS},
        "agent_cost_ratio_dp_ucb_over_episodic_ridge": interval(speed),
        "whole_loop_cost_ratio_dp_ucb_over_episodic_ridge": interval(
            ratio_interval(loop_us["dp_ucb"], loop_us["episodic_ridge"])),
        "cpu": {"us_per_round_whole_loop": {a: round(float(loop_cpu_us[a].mean()), 1) for a in AGENTS},
                "whole_loop_cost_ratio_dp_ucb_over_episodic_ridge": interval(
                    ratio_interval(loop_cpu_us["dp_ucb"], loop_cpu_us["episodic_ridge"]))},
        "targets": {"regret_vs_random <= 0.4": vs_random.high <= 0.4,
                    "regret_vs_dp_ucb <= 0.65": vs_ucb.high <= 0.65,
                    "cost: dp_ucb / episodic_ridge >= 3": speed.low >= 3.0,
                    "note": "met = the whole 95% interval on the right side of the target"},
        "machine": machine(load),
    })


if __name__ == "__main__":
    main()
