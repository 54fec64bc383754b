"""DP-HDB at d = 1,000, K = 10: its own per-round cost against a compiled floor of the same work, and 16 seeds in
lockstep against one, measured in the same run (issue 25). Prints JSON.

Workload: DP-HDB (epsilon = 1, delta = 1/T, Gumbel form) in ``dpbandit/SparseLinear-v0`` with K = 10, d = 1000
(5-sparse theta, contexts scaled to ||x||_inf = 1, the l1/l_inf geometry of DP-HDB), one process, T = ``--rounds``.
Cases, interleaved (``_bench.py``: round-robin repetitions, medians), on both clocks (CPU time under ``"cpu"``:
the machine is shared, so read the CPU figures; wall time beside them):

* ``simulate``: ``dpbandit.experiment.simulate`` (the block loop: DP-HDB's ``play_block``, one compiled kernel per
  run of rounds, ``dpbandit.agents.dp_hdb_blocks``), 100 checkpoints;
* ``env_loop``: the same loop with an agent that plays every block with arm 0 and learns nothing: the environment's
  blocks and the loop's bookkeeping;
* ``floor``: the compiled floor of the agent's work, :func:`floor_kernel`: the same rounds' arithmetic as one plain
  numba loop over the environment's contexts and rewards (one block of 1,024 rounds, replayed), without a check,
  a stop or a Python call per round: the selection numbers drawn in blocks of 256 steps (``integers`` and two
  ``random`` calls, as DP-POFW draws them), after the warm-up the two products (``x . thetaF_i`` for every arm,
  ``x . V_i / (t + 1)`` for the arms within h/2), the played learner's ``max |x_j|``, ``V_a . x``, clamped gradient
  and score row with its envelope, and the K selections (one rejection round each) and vertex moves;
* ``lockstep``: ``simulate_batch`` of ``--seeds`` seeds (per seed-round; the block loop, seed after seed);
* ``steps``: the same episode through Gymnasium ``step`` and the agent's ``act`` / ``update``
  (:func:`~dpbandit.experiment.loop.play_steps`: the path DP-HDB's single seed took before it played blocks; the same
  frame), for ``blocks_speedup_over_steps``.

Targets (issue 25): ``agent_to_floor`` = (simulate - env_loop) / floor <= 1.5; ``lockstep_speedup`` = single
seed-round time / lockstep seed-round time >= 2. ``lockstep_speedup_bound`` = simulate / (env_loop + floor): the
speedup a lockstep would reach if a seed-round cost only the seed's own environment and the floor of its agent (its
contexts, draws and learners are its own; nothing of a seed's work is shared with another seed), i.e. an upper
bound for any bit-identical lockstep in this run; ``bound_reaches_lockstep_target`` says whether 2 is within it.

Memory: the agent's state is K x d arrays (the gradient sums S and vertex sums V of the K DP-POFW learners; DP-POFW
has no tree, ``spec/han-frank-wolfe.md`` §5), so it does not grow with T or with the rounds played. The benchmark
builds the environment and the agent for T = 10^6 and reports the state size, the tracemalloc peak of construction
plus ``--memory-rounds`` rounds (0 skips it), and the process's peak RSS (over the whole run: the throughput
cases, 16 seeds' environments and agents among them, come first). Target: T = 10^6 under 1 GiB. ``--full``
plays all 10^6 rounds of that run (minutes).

    python benchmarks/dphdb_benchmark.py [--repeats 3] [--rounds 10000] [--seeds 16] [--memory-rounds 20000] [--full]

(from a checkout other than the installed one: ``PYTHONPATH=. python benchmarks/...``, so that the script imports
the checkout's dpbandit).
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import tracemalloc

import gymnasium
import numpy as np

import dpbandit.envs  # noqa: F401
from _bench import clock, emit, interleaved_clocks, machine, medians, timed
from dpbandit.agents import make_agent
from dpbandit.compiled import kernel
from dpbandit.experiment import simulate
from dpbandit.experiment.batch import simulate_batch
from dpbandit.experiment.config import AgentSpec, EnvSpec
from dpbandit.experiment.loop import play_steps
from dpbandit.experiment.runner import one_blas_thread
from dpbandit.optim.pofw_draws import SelectionDraws

ENV_ID, N_ARMS, DIM = "dpbandit/SparseLinear-v0", 10, 1000
TARGET_AGENT_TO_FLOOR = 1.5
TARGET_LOCKSTEP = 2.0
MEMORY_HORIZON, MEMORY_LIMIT = 1_000_000, 2**30


def make_env(horizon: int):
    return gymnasium.make(ENV_ID, n_arms=N_ARMS, dim=DIM, horizon=horizon)


class ArmZero:
    """Plays every block with arm 0 and learns nothing: ``simulate`` with it times the block loop's environment."""

    private = False

    def reset(self, seed=None) -> None:
        pass

    def play_block(self, block) -> np.ndarray:
        return np.zeros(block.n, dtype=np.intp)

    def privacy_report(self):
        return None


@kernel
def _dot(a, b):
    n = a.shape[0]
    s0 = s1 = s2 = s3 = 0.0
    for j in range(0, n - n % 4, 4):
        s0 += a[j] * b[j]
        s1 += a[j + 1] * b[j + 1]
        s2 += a[j + 2] * b[j + 2]
        s3 += a[j + 3] * b[j + 3]
    for j in range(n - n % 4, n):
        s0 += a[j] * b[j]
    return (s0 + s1) + (s2 + s3)


@kernel
def _dot_over(a, b, divisor):
    n = a.shape[0]
    s0 = s1 = s2 = s3 = 0.0
    for j in range(0, n - n % 4, 4):
        s0 += a[j] * (b[j] / divisor)
        s1 += a[j + 1] * (b[j + 1] / divisor)
        s2 += a[j + 2] * (b[j + 2] / divisor)
        s3 += a[j + 3] * (b[j + 3] / divisor)
    for j in range(n - n % 4, n):
        s0 += a[j] * (b[j] / divisor)
    return (s0 + s1) + (s2 + s3)


@kernel
def floor_kernel(contexts, rewards, t, stop, k, u, v, first, theta_forced, V, scores, s_inf, last_j, last_value,
                 warmup, h, low, high, lipschitz, two_scale, radius, coefficient, values):
    """DP-HDB's rounds t + 1 .. stop (module docstring: ``floor``) on ``contexts`` (n, d) and every arm's
    ``rewards`` (n, K), replayed cyclically, with the selection numbers ``k``, ``u`` (R, K, B), ``v`` (R, K) of
    steps ``first ..``; the squared loss. Returns the last arm played."""
    n, d = contexts.shape
    K, B = V.shape[0], k.shape[2]
    arm = 0
    while t < stop:
        t += 1
        x, r = contexts[(t - 1) % n], rewards[(t - 1) % n]
        if t <= warmup:
            arm = (t - 1) % K
        else:
            top = -math.inf
            for i in range(K):
                values[i] = _dot(x, theta_forced[i])
                top = max(top, values[i])
            best = -math.inf
            for i in range(K):
                if values[i] >= top - h / 2.0:
                    value = _dot_over(x, V[i], float(t))
                    if value > best:
                        best, arm = value, i
        y = min(max(r[arm], low), high)
        x_inf = 0.0
        for j in range(d):
            x_inf = max(x_inf, abs(x[j]))
        vx = _dot(V[arm], x)
        z_prev = (vx - last_value[arm] * x[last_j[arm]]) / (t - 1) if t > 1 else 0.0
        limit = lipschitz / x_inf
        now = min(max(two_scale * (vx / t - y), -limit), limit)
        prev = min(max(two_scale * (z_prev - y), -limit), limit)
        c = (t + 1.0) * now - t * prev
        envelope = 0.0
        for j in range(d):
            value = scores[arm, d + j] + c * x[j]
            scores[arm, d + j], scores[arm, j] = value, -value
            envelope = max(envelope, abs(value))
        s_inf[arm] = envelope
        a, s = radius / ((t + 1.0) * (coefficient / math.sqrt(t + 1.0))), t - first
        for i in range(K):
            chosen = k[s, i, B - 1]
            for b in range(B):
                if u[s, i, b] < math.exp(scores[i, k[s, i, b]] * a - a * s_inf[i]):
                    chosen = k[s, i, b]
                    break
            j, value = (chosen, radius) if chosen < d else (chosen - d, -radius)
            V[i, j] += value
            last_j[i], last_value[i] = j, value
        if t == warmup:
            theta_forced[:] = V / (t + 1.0)
    return arm


def floor_case(horizon: int, agent):
    """A case timing :func:`floor_kernel` over ``horizon`` rounds (its draws in blocks included)."""
    env = make_env(horizon).unwrapped
    env.reset(seed=0)
    block = env.take_block()
    contexts, rewards = np.ascontiguousarray(block.obs[:, 0, :]), np.ascontiguousarray(block.rewards)
    engine = agent.curator.learners
    cal, K, d = engine.calibration, N_ARMS, DIM
    low, high = agent.reward_range

    def run():
        draws = SelectionDraws(np.random.default_rng(0), K, d, horizon, True)
        V, scores, s_inf = np.zeros((K, d)), np.zeros((K, 2 * d)), np.zeros(K)
        last_j, last_value, theta_forced, values = np.zeros(K, np.int64), np.zeros(K), np.zeros((K, d)), np.empty(K)
        start = clock()
        t = 0
        while t < horizon:
            draws.ensure(t + 1)
            stop = min(horizon, draws.first + draws.rounds - 1)
            floor_kernel(contexts, rewards, t, stop, draws.k, draws.u, draws.v, draws.first, theta_forced, V, scores,
                         s_inf, last_j, last_value, agent.warmup_rounds, agent.h, low, high, cal.lipschitz,
                         2.0 * engine.loss.scale, cal.radius, cal.coefficient, values)
            t = stop
        return clock() - start

    return run


def throughput(horizon: int, n_seeds: int, repeats: int) -> dict:
    env = make_env(horizon)
    agent = make_agent("dp_hdb", env, epsilon=1.0)
    spec, seeds = EnvSpec(ENV_ID, {"n_arms": N_ARMS, "dim": DIM, "horizon": horizon}), list(range(n_seeds))

    def lockstep():
        with one_blas_thread():
            simulate_batch(spec, AgentSpec("dp_hdb", params={"epsilon": 1.0}), seeds, checkpoints=100)

    def steps():
        with one_blas_thread():
            play_steps(env, agent, 0, 100)

    assert simulate(env, agent, 0, 100).equals(play_steps(env, agent, 0, 100))
    cases = {
        "env_loop": timed(lambda: simulate(env, ArmZero(), 0, checkpoints=100)),
        "simulate": timed(lambda: simulate(env, agent, 0, checkpoints=100)),
        "floor": floor_case(horizon, agent),
        "lockstep": timed(lockstep),
        "steps": timed(steps),
    }
    for case in cases.values():  # not timed: the kernels' first calls (compiled or loaded from the cache)
        case()
    clocks = medians(interleaved_clocks(cases, repeats))
    out = figures(clocks["wall"], horizon, n_seeds)
    out.update(warmup_rounds=agent.warmup_rounds, cpu=figures(clocks["cpu"], horizon, n_seeds))
    return out


def figures(s: dict[str, float], horizon: int, n_seeds: int) -> dict:
    """The figures of one clock's median seconds per case."""
    per_round = {k: v / horizon for k, v in s.items()}
    per_round["lockstep"] /= n_seeds  # per seed-round
    agent = per_round["simulate"] - per_round["env_loop"]
    ratio = agent / per_round["floor"]
    speedup = per_round["simulate"] / per_round["lockstep"]
    bound = per_round["simulate"] / (per_round["env_loop"] + per_round["floor"])
    return {
        "us_per_round": {k: round(1e6 * v, 2) for k, v in per_round.items()},
        "agent_us_per_round": round(1e6 * agent, 2),
        "simulate_rounds_per_second": round(1 / per_round["simulate"]),
        "agent_to_floor": round(ratio, 3),
        "target_agent_to_floor": TARGET_AGENT_TO_FLOOR,
        "meets_agent_to_floor": bool(ratio <= TARGET_AGENT_TO_FLOOR),
        "lockstep_speedup": round(speedup, 3),
        "lockstep_speedup_bound": round(bound, 3),
        "target_lockstep_speedup": TARGET_LOCKSTEP,
        "meets_lockstep_speedup": bool(speedup >= TARGET_LOCKSTEP),
        "bound_reaches_lockstep_target": bool(bound >= TARGET_LOCKSTEP),
        "blocks_speedup_over_steps": round(per_round["steps"] / per_round["simulate"], 3),
    }


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
    env.reset(seed=0)
    agent.reset(0)
    start = clock()
    played = 0
    while played < rounds:  # the block loop's work (experiment/loop.py) without its records
        block = env.unwrapped.take_block()
        agent.play_block(block)
        played += block.n
    seconds = clock() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux
    return {
        "horizon": MEMORY_HORIZON,
        "rounds_played": played,
        "seconds": round(seconds.wall, 1),
        "cpu_seconds": round(seconds.cpu, 1),
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
    parser.add_argument("--rounds", type=int, default=10_000, help="horizon of the throughput runs")
    parser.add_argument("--seeds", type=int, default=16, help="seeds of the lockstep case")
    parser.add_argument("--memory-rounds", type=int, default=20_000, help="rounds played in the T = 1e6 run (0: skip)")
    parser.add_argument("--full", action="store_true", help="play all 1e6 rounds in the memory run")
    args = parser.parse_args()
    load = os.getloadavg()
    results = {"throughput": throughput(args.rounds, args.seeds, args.repeats)}
    if args.memory_rounds or args.full:
        results["memory"] = memory(args.memory_rounds, args.full)
    emit({
        "benchmark": "dphdb",
        "workload": {"agent": "dp_hdb (epsilon=1, delta=1/T, gumbel)", "env": "dpbandit/SparseLinear-v0",
                     "n_arms": N_ARMS, "dim": DIM, "horizon": args.rounds, "seeds": args.seeds, "repeats": args.repeats,
                     "statistic": "median, interleaved"},
        "results": results,
        "machine": machine(load),
    })


if __name__ == "__main__":
    main()
