"""Continual-release trees: cost per item and memory. Prints JSON; not a test.

Workload: ``add_and_release`` of d-dimensional items with Gaussian node noise (vanilla tree, Honaker tree, window
tree W = 1024), d = 1,000 and 10,000, against the baseline of one vector addition plus one noise draw of size d
(``total += v; z = sigma * rng.standard_normal(d)``). Target: within 3x of the baseline.
Memory: the tree's state at T = 1e6 (O(d log T) target): bytes held by its arrays and the tracemalloc peak while
items are added, against ``d * log2(T) * 8`` bytes. ``"cpu"`` holds the per-item figures from CPU time
(``_bench.py``, best of the repeats on each clock), which other processes do not inflate.

    python benchmarks/tree_benchmark.py [--items 4096] [--repeats 3]
"""

from __future__ import annotations

import argparse
import math
import os
import tracemalloc

import numpy as np

from _bench import Times, clock, emit, machine
from dpbandit.privacy.noise import GaussianNoise
from dpbandit.privacy.tree import TreeAggregator
from dpbandit.privacy.window import WindowTree

DIMS = (1_000, 10_000)
TARGET_RATIO = 3.0
MEMORY_HORIZON = 10**6


def best_seconds_per_item(run, items: int, repeats: int) -> Times:
    """The fewest seconds per item of ``repeats`` runs, on each clock."""
    runs = [run() for _ in range(repeats)]
    return Times(*(min(getattr(t, which) for t in runs) / items for which in Times._fields))


def baseline(d: int, items: int, repeats: int) -> Times:
    x = np.random.default_rng(1).normal(size=(items, d))

    def run() -> Times:
        rng = np.random.default_rng(0)
        total = np.zeros(d)
        start = clock()
        for v in x:
            total += v
            _ = 2.0 * rng.standard_normal(d)
        return clock() - start

    return best_seconds_per_item(run, items, repeats)


def mechanism(make, d: int, items: int, repeats: int) -> Times:
    x = np.random.default_rng(1).normal(size=(items, d))

    def run() -> Times:
        tree = make(d, items)
        start = clock()
        for v in x:
            tree.add_and_release(v)
        return clock() - start

    return best_seconds_per_item(run, items, repeats)


MECHANISMS = {
    "tree (vanilla)": lambda d, T: TreeAggregator(d, T, GaussianNoise(2.0), np.random.default_rng(0)),
    "tree (Honaker)": lambda d, T: TreeAggregator(d, T, GaussianNoise(2.0), np.random.default_rng(0), honaker=True),
    "window tree (W=1024)": lambda d, T: WindowTree(d, 1024, GaussianNoise(2.0), np.random.default_rng(0)),
}


def memory(d: int, items: int) -> dict:
    x = np.random.default_rng(1).normal(size=d)
    tracemalloc.start()
    tree = TreeAggregator(d, MEMORY_HORIZON, GaussianNoise(2.0), np.random.default_rng(0))
    for _ in range(items):
        tree.add_and_release(x)
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    reference = d * math.log2(MEMORY_HORIZON) * 8
    return {
        "horizon": MEMORY_HORIZON,
        "depth": tree.depth,
        "state_bytes": tree.nbytes,
        "traced_current_bytes": current,
        "traced_peak_bytes": peak,
        "d_log2T_8_bytes": round(reference),
        "state_over_d_log2T_8": round(tree.nbytes / reference, 3),
        "peak_over_d_log2T_8": round(peak / reference, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    load = os.getloadavg()
    results = {}
    for d in DIMS:
        base = baseline(d, args.items, args.repeats)
        entry = {"baseline_us_per_item": round(base.wall * 1e6, 2), "cpu_baseline_us_per_item": round(base.cpu * 1e6, 2)}
        for name, make in MECHANISMS.items():
            per_item = mechanism(make, d, args.items, args.repeats)
            ratio = per_item.wall / base.wall
            entry[name] = {
                "us_per_item": round(per_item.wall * 1e6, 2),
                "ratio_to_baseline": round(ratio, 2),
                "meets_target": ratio <= TARGET_RATIO,
                "cpu": {"us_per_item": round(per_item.cpu * 1e6, 2),
                        "ratio_to_baseline": round(per_item.cpu / base.cpu, 2),
                        "meets_target": per_item.cpu / base.cpu <= TARGET_RATIO},
            }
        entry["memory_T=1e6"] = memory(d, min(args.items, 2048))
        results[f"d={d}"] = entry
    emit({
        "benchmark": "tree_benchmark",
        "items": args.items,
        "repeats": args.repeats,
        "target_ratio": TARGET_RATIO,
        "results": results,
        "machine": machine(load),
    })


if __name__ == "__main__":
    main()
