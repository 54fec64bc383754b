"""Every benchmark script runs to the end at a tiny size and prints its JSON (a smoke test: no figure is checked).

The benchmarks call the agents' kernels directly, so a changed kernel signature breaks them without breaking any
other test; this catches it. Each runs in an empty working directory, which must stay empty.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"

TINY = {
    "block_benchmark.py": "--repeats 1 --horizon 60 --hdb-horizon 20 --seeds 2",
    "batch_benchmark.py": "--repeats 1 --horizon 60 --seeds 2 --agents linucb,greedy,dp_ucb,dp_hdb --dims 6",
    "dphdb_benchmark.py": "--repeats 1 --rounds 40 --memory-rounds 40",
    "dptofw_benchmark.py": "--repeats 1 --memory-rounds 50",
    "dpucb_benchmark.py": "--repeats 1 --horizon 40 --dims 5",
    "episodic_ridge_acceptance.py": "--seeds 2 --horizon 200",
    "fliphat_acceptance.py": "--seeds 2 --long-horizon 200 --short-horizon 100",
    "frontier_benchmark.py": "--seeds 2 --horizon 50 --n-jobs 1",
    "linucb_benchmark.py": "--repeats 1 --horizon 40 --dims 5",
    "oco_benchmark.py": "--rounds 20 --repeats 1 --dims 5 --budget 2",
    "sweep_benchmark.py": "--seeds 2 --horizon 50 --n-jobs 1",
    "tree_benchmark.py": "--items 64 --repeats 1",
}


def test_every_benchmark_script_has_a_tiny_run():
    scripts = {p.name for p in BENCHMARKS.glob("*.py") if p.name.endswith(("_benchmark.py", "_acceptance.py"))}
    assert scripts == set(TINY)


@pytest.mark.parametrize("script", sorted(TINY))
def test_benchmark_runs_and_prints_json(script, tmp_path):
    done = subprocess.run([sys.executable, str(BENCHMARKS / script), *TINY[script].split()], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["benchmark"]
    assert list(tmp_path.iterdir()) == []
