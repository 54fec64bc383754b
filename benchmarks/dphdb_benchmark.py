"""DP-HDB at d = 1,000, K = 10 (issue #5, item 7). Prints JSON; not a test.

Workload: DP-HDB (epsilon = 1, delta = 1/T, Gumbel form) in ``dpbandit/SparseLinear-v0`` with K = 10, d = 1000
(5-sparse theta, contexts scaled to ||x||_inf = 1, the l1/l_inf geometry of DP-HDB), one process.

* Throughput: rounds per second through the full environment loop (``gymnasium.make`` +
  ``dpbandit.experiment.runner.simulate`` with checkpoints, as every experiment runs), best of ``--repeats``, and of
  the agent alone (``act`` + ``update`` on pre-generated observations). Target >= 5,000 rounds/s.
* Memory: the agent's state is K x d arrays (the gradient sums S and vertex sums V of the K DP-POFW learners;
  DP-POFW has no tree, ``spec/han-frank-wolfe.md`` §5), so it does not grow with T or with the rounds played. The
  benchmark builds the environment and the agent for T = 10^6 and reports the state size, the tracemalloc peak of
  construction plus ``--memory-rounds`` rounds, and the process's peak RSS. Target: T = 10^6 under 1 GiB
  (O(K d log T) allowed). ``--full`` plays all 10^6 rounds of that run (about 2-3 minutes).

    python benchmarks/dphdb_benchmark.py [--repeats 3] [--rounds 20000] [--memory-rounds 20000] [--full]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import time
import tracemalloc

import gymnasium
import numpy as np

import dpbandit.envs  # noqa: F401
from dpbandit.agents import make_agent
from dpbandit.experiment.runner import simulate

N_ARMS, DIM = 10, 1000
TARGET_ROUNDS_PER_SECOND = 5_000
MEMORY_HORIZON, MEMORY_LIMIT = 1_000_000, 2**30


def make_env(horizon: int):
    return gymnasium.make("dpbandit/SparseLinear-v0", n_arms=N_ARMS, dim=DIM, horizon=horizon)


def env_loop_rate(horizon: int, repeats: int) -> float:
    env = make_env(horizon)
    agent = make_agent("dp_hdb", env, epsilon=1.0)
    best = np.inf
    for seed in range(repeats):
        start = time.perf_counter()
        simulate(env, agent, seed=seed, checkpoints=100)
        best = min(best, time.perf_counter() - start)
    return horizon / best


def agent_only_rate(horizon: int, repeats: int) -> float:
    env = make_env(horizon)
    agent = make_agent("dp_hdb", env, epsilon=1.0)
    obs, _ = env.reset(seed=0)
    observations, rewards = [], []
    for _ in range(min(horizon, 2000)):  # a pool of real observations, replayed
        observations.append(np.array(obs))
        obs, reward, *_ = env.step(0)
        rewards.append(reward)
    best = np.inf
    for seed in range(repeats):
        agent.reset(seed)
        start = time.perf_counter()
        for t in range(horizon):
            o = observations[t % len(observations)]
            arm = agent.act(o)
            agent.update(o, arm, rewards[t % len(rewards)], {})
        best = min(best, time.perf_counter() - start)
    return horizon / best


def state_bytes(agent) -> int:
    learners = agent.curator.learners
    arrays = (learners.S, learners.V, learners._s_inf, learners._last_j, learners._last_value)
    return int(sum(a.nbytes for a in arrays))


def memory(rounds: int, full: bool) -> dict:
    rounds = MEMORY_HORIZON if full else rounds
    small = make_agent("dp_hdb", make_env(10_000), epsilon=1.0)
    tracemalloc.start()
    env = make_env(MEMORY_HORIZON)
    agent = make_agent("dp_hdb", env, epsilon=1.0)
    obs, _ = env.reset(seed=0)
    agent.reset(0)
    start = time.perf_counter()
    for _ in range(rounds):
        arm = agent.act(obs)
        next_obs, reward, _, _, info = env.step(arm)
        agent.update(obs, arm, reward, info)
        obs = next_obs
    seconds = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux
    return {
        "horizon": MEMORY_HORIZON,
        "rounds_played": rounds,
        "seconds": round(seconds, 1),
        "agent_state_bytes": state_bytes(agent),
        "agent_state_bytes_at_T_1e4": state_bytes(small),
        "tracemalloc_peak_bytes": peak,
        "process_peak_rss_bytes": rss,
        "limit_bytes": MEMORY_LIMIT,
        "meets_target": max(peak, rss) < MEMORY_LIMIT,
        "scaling": "O(K d): two (K, d) float arrays, independent of T and of the rounds played",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=20_000, help="horizon of the throughput runs")
    parser.add_argument("--memory-rounds", type=int, default=20_000, help="rounds played in the T = 1e6 run")
    parser.add_argument("--full", action="store_true", help="play all 1e6 rounds in the memory run")
    args = parser.parse_args()
    loop = env_loop_rate(args.rounds, args.repeats)
    alone = agent_only_rate(args.rounds, args.repeats)
    print(
        json.dumps(
            {
                "benchmark": "dphdb",
                "workload": {"agent": "dp_hdb (epsilon=1, delta=1/T, gumbel)", "env": "dpbandit/SparseLinear-v0",
                             "n_arms": N_ARMS, "dim": DIM, "horizon": args.rounds},
                "results": {
                    "env_loop_rounds_per_second": round(loop),
                    "agent_only_rounds_per_second": round(alone),
                    "target": TARGET_ROUNDS_PER_SECOND,
                    "meets_target": loop >= TARGET_ROUNDS_PER_SECOND,
                    "memory": memory(args.memory_rounds, args.full),
                },
                "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__},
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
