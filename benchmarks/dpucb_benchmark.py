"""DP-UCB through ``simulate`` against the bare mechanism work, measured in the same run (issue 15, item 3). JSON.

Workload: DP-UCB (epsilon = 1, delta = 1/T, tight node noise of spec/errata.md E6), K = 10, d = 20, 50, 100, 200,
unit-l2-norm Gaussian contexts, linear rewards, one process, ``gymnasium.make`` + ``simulate``, both forms
(shared: M = 1 model; disjoint: M = K models, one per arm, on one tree clock).

The reference line, ``bare``, is the work the mechanism cannot avoid per round, done with the fastest plain
numpy/LAPACK calls on the same machine in the same run:

* the node noise the tree needs: one node closes per round, i.e. M symmetric (d+1)x(d+1) draws of
  (d+1)(d+2)/2 normals each (``rng.standard_normal((M, (d+1)(d+2)/2))``);
* M Cholesky factorisations of d x d matrices (``numpy.linalg.cholesky`` on the (M, d, d) stack; LAPACK ``dpotrf``
  when M = 1, where numpy's batched wrapper costs more than the factorisation);
* M solves ``theta = V^{-1} u`` with those factors (LAPACK ``dpotrs``).

``ratio_to_bare`` = agent us/round (through ``simulate``, environment included) / bare us/round; the target is
<= 1.5 for d = 20 ... 200 in both forms. ``env_loop`` (an agent that does nothing) is printed as the floor the
environment sets, and ``agent_minus_env_loop_ratio_to_bare`` = (agent - env loop) / bare, the agent's own cost.
Cases are interleaved (round-robin repetitions, medians; ``_bench.py``); absolute numbers are for this machine at
the printed load only. (The agent solves ``C [w | r] = [x | u]`` with triangular solves in its action rule where
the bare line calls ``potrs``: the same two triangular passes per model.)

Measured (default options, load 1.2-1.7, issue 15), agent-only ratio, d = 20 / 50 / 100 / 200: shared 9.1 / 3.7 /
2.0 / 1.39, disjoint 2.5 / 1.45 / 1.23 / 1.20. Before the exact-sums form (d = 20 / 50 / 100): shared 12.0 / 5.0 /
2.6, disjoint 3.1 / 1.7 / 1.4. Where the bare work is a few microseconds (shared d <= 50: one small factorisation),
the fixed cost of some 40 numpy and LAPACK calls per round dominates.

    python benchmarks/dpucb_benchmark.py [--repeats 3] [--horizon 2000] [--dims 20,50,100,200]
"""

from __future__ import annotations

import argparse
import os
import time

import gymnasium
import numpy as np
from scipy.linalg import lapack
from threadpoolctl import threadpool_limits

import dpbandit.envs  # noqa: F401
from _bench import DoNothing, emit, interleaved, machine, timed
from dpbandit.agents import make_agent
from dpbandit.experiment import simulate

ARMS = 10


def make_env(structure: str, dim: int, horizon: int):
    return gymnasium.make("dpbandit/GLMBandit-v0", n_arms=ARMS, dim=dim, horizon=horizon, structure=structure,
                          theta="dense", contexts="gaussian", context_norm="l2", context_bound=1.0, normalize="scale")


def bare_work(models: int, dim: int, rounds: int):
    """A case timing ``rounds`` rounds of the bare mechanism work (module docstring) for ``models`` models."""
    gen = np.random.default_rng(1)
    A = gen.standard_normal((models, dim, 2 * dim)) / np.sqrt(2 * dim)
    V = A @ A.transpose(0, 2, 1) + np.eye(dim)  # well-conditioned SPD stack, like V_t = N + 2 Upsilon I
    u = gen.standard_normal((models, dim))
    packed = (dim + 1) * (dim + 2) // 2

    def run() -> float:
        rng = np.random.default_rng(0)
        with threadpool_limits(limits=1, user_api="blas"):  # as simulate runs
            start = time.perf_counter()
            for _ in range(rounds):
                rng.standard_normal((models, packed))
                C = np.linalg.cholesky(V) if models > 1 else lapack.dpotrf(V[0], lower=1, clean=1)[0][None]
                for m in range(models):
                    lapack.dpotrs(C[m], u[m], lower=1)
            return time.perf_counter() - start

    return run


def measure(dim: int, horizon: int, repeats: int) -> dict:
    out = {}
    envs = {s: make_env(s, dim, horizon) for s in ("shared", "disjoint")}
    cases = {}
    for structure, env in envs.items():
        cases[f"env_loop_{structure}"] = timed(lambda env=env: simulate(env, DoNothing(), 0, checkpoints=100))
        agent = make_agent("dp_ucb", env, epsilon=1.0)
        cases[structure] = timed(lambda env=env, agent=agent: simulate(env, agent, 0, checkpoints=100))
        cases[f"bare_{structure}"] = bare_work(1 if structure == "shared" else ARMS, dim, horizon)
    seconds = interleaved(cases, repeats)
    us = {k: round(1e6 * s / horizon, 1) for k, s in seconds.items()}
    for structure in ("shared", "disjoint"):
        bare = seconds[f"bare_{structure}"]
        ratio = seconds[structure] / bare
        out[structure] = {"agent_us_per_round": us[structure], "bare_us_per_round": us[f"bare_{structure}"],
                          "env_loop_us_per_round": us[f"env_loop_{structure}"],
                          "ratio_to_bare": round(ratio, 3), "meets_1.5x": bool(ratio <= 1.5),
                          "agent_minus_env_loop_ratio_to_bare": round(
                              (seconds[structure] - seconds[f"env_loop_{structure}"]) / bare, 3),
                          "rounds_per_second": round(horizon / seconds[structure])}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--horizon", type=int, default=2000)
    parser.add_argument("--dims", default="20,50,100,200")
    args = parser.parse_args()
    load = os.getloadavg()
    start = time.perf_counter()
    results = {f"d={d}": measure(int(d), args.horizon, args.repeats) for d in args.dims.split(",")}
    emit({
        "benchmark": "dpucb",
        "workload": {"agent": "dp_ucb (epsilon=1, delta=1/T, tight sigma_n)", "n_arms": ARMS, "horizon": args.horizon,
                     "contexts": "unit l2 gaussian", "repeats": args.repeats, "statistic": "median, interleaved"},
        "results": results,
        "seconds_total": round(time.perf_counter() - start, 1),
        "machine": machine(load),
    })


if __name__ == "__main__":
    main()
