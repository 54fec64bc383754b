"""Throughput of every registered streaming learner: rounds per second at d = 100 and d = 1,000. Prints JSON; not a
test.

Workload: one round = ``predict()`` plus ``update(x_t, y_t)`` on a linear-regression stream with ``||x_t||_2 = 1``
(squared loss; ridge ``mu = 0.1`` for the learners that need strong convexity; window W = 128 for the window
learners), each learner at its default privacy (noise on). A learner runs ``--rounds`` rounds or until ``--budget``
seconds have passed (at least 3 rounds), and the best of ``--repeats`` runs (on each clock) is reported. The in-run reference is the
non-private ``igd`` at the same d: ``ratio_to_igd`` = us per round / igd's. ``"cpu"`` holds the same figures from CPU
time (``_bench.py``), which other processes do not inflate; the load averages are printed with them.

    python benchmarks/oco_benchmark.py [--rounds 2000] [--budget 3] [--repeats 2] [--dims 100,1000]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from _bench import Times, clock, emit, machine
from dpbandit.optim.losses import SquaredLoss
from dpbandit.optim.registry import LEARNERS, make_learner, with_known_constants
from dpbandit.seeding import stream

EXTRA = {"wdp-cocop": {"window": 128}, "wdp-cocol": {"window": 128}}


REFERENCE = "igd"


def throughput(name: str, d: int, rounds: int, budget: float) -> tuple[int, Times]:
    """(rounds played, seconds on both clocks) of one run of learner ``name`` in dimension ``d``."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(rounds, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    y = np.clip(x @ (rng.normal(size=d) / np.sqrt(d)) + 0.05 * rng.normal(size=rounds), -1.0, 1.0)
    params = with_known_constants(name, dict(EXTRA.get(name, {})), loss=SquaredLoss(0.5), mu=0.1, x_bound=1.0,
                                  y_bound=1.0, radius=1.0)
    learner = make_learner(name, d, rounds, rng=stream(0, "privacy"), **params)
    start, wall = clock(), time.perf_counter()
    t = 0
    while t < rounds:
        learner.predict()
        learner.update(x[t], y[t])
        t += 1
        if t >= 3 and time.perf_counter() - wall > budget:
            break
    return t, clock() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--budget", type=float, default=3.0, help="seconds per run at most (after 3 rounds)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--dims", default="100,1000")
    args = parser.parse_args()
    dims = [int(v) for v in args.dims.split(",")]
    load = os.getloadavg()
    best = {}
    for name in LEARNERS:
        for d in dims:
            runs = [throughput(name, d, args.rounds, args.budget) for _ in range(args.repeats)]
            best[name, d] = {which: min(getattr(s, which) / t for t, s in runs) for which in Times._fields}
            best[name, d]["rounds"] = max(t for t, _ in runs)

    def figures(name: str, d: int, which: str) -> dict:
        per_round = best[name, d][which]
        return {"rounds_per_second": round(1 / per_round, 1), "us_per_round": round(1e6 * per_round, 1),
                f"ratio_to_{REFERENCE}": round(per_round / best[REFERENCE, d][which], 2)}

    results = [{"learner": name, "dim": d, "rounds": best[name, d]["rounds"], **figures(name, d, "wall"),
                "cpu": figures(name, d, "cpu")} for name, d in best]
    emit({
        "benchmark": "oco learners: rounds per second (predict + update), default privacy",
        "settings": vars(args),
        "results": results,
        "machine": machine(load),
    })


if __name__ == "__main__":
    main()
