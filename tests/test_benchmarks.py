"""Every benchmark script runs to the end at a tiny size and prints its JSON (a smoke test: no figure's value is
checked), with its figures on both clocks (wall and CPU time) and the load average at its start and end.

The benchmarks call the agents' kernels directly, so a changed kernel signature breaks them without breaking any
other test; this catches it. Each runs in an empty working directory, which must stay empty.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import _bench  # noqa: E402

TINY = {
    "block_benchmark.py": "--repeats 1 --horizon 60 --hdb-horizon 20 --seeds 2",
    "batch_benchmark.py": "--repeats 1 --horizon 60 --seeds 2 --agents linucb,greedy,dp_ucb,dp_hdb --dims 6",
    "dphdb_benchmark.py": "--repeats 1 --rounds 40 --memory-rounds 40",
    "dptofw_benchmark.py": "--repeats 1 --memory-rounds 50",
    "dpucb_benchmark.py": "--repeats 1 --horizon 40 --dims 5",
    "episodic_memory_benchmark.py": "--horizons 50,100 --dim 5",
    "episodic_ridge_acceptance.py": "--seeds 2 --horizon 200",
    "fliphat_acceptance.py": "--seeds 2 --long-horizon 200 --short-horizon 100",
    "frontier_benchmark.py": "--seeds 2 --horizon 50 --n-jobs 1",
    "linucb_benchmark.py": "--repeats 1 --horizon 40 --dims 5",
    "offline_coverage_acceptance.py": "--logs 2 --rounds 500 --resamples 99",
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
    machine = report["machine"]  # _bench.machine(load at the start)
    assert len(machine["load_average_start"]) == len(machine["load_average_end"]) == 3
    assert 0 < machine["run_cpu_seconds"] and 0 < machine["run_wall_seconds"]
    twins = list(_cpu_twins(report))
    assert twins, ("no figure from CPU time beside its wall-time twin: time the cases with _bench.clock / timed and "
                   "print the same figures under 'cpu' (or a figure X beside cpu_X)")
    for wall, cpu in twins:  # the same figures on both clocks, every CPU number finite
        assert set(cpu) <= set(wall), sorted(set(cpu) - set(wall))
        assert all(math.isfinite(x) for x in _numbers(cpu)), cpu


def _cpu_twins(node):
    """(wall figures, their CPU twins) anywhere in a report: a dict and its "cpu" dict, or a dict's figure X (or
    wall_X) and its cpu_X or X_cpu."""
    if isinstance(node, dict):
        if isinstance(node.get("cpu"), dict):
            yield node, node["cpu"]
        flat = {k.removeprefix("cpu_").removesuffix("_cpu"): v for k, v in node.items()
                if k.startswith("cpu_") or k.endswith("_cpu")}
        wall = {k: node.get(k, node.get(f"wall_{k}")) for k in flat if k in node or f"wall_{k}" in node}
        if wall:
            yield wall, {k: flat[k] for k in wall}
        for value in node.values():
            yield from _cpu_twins(value)
    elif isinstance(node, list):
        for value in node:
            yield from _cpu_twins(value)


def _numbers(node):
    if isinstance(node, bool):
        return
    if isinstance(node, (int, float)):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from _numbers(value)
    elif isinstance(node, list):
        for value in node:
            yield from _numbers(value)


def test_cpu_time_counts_child_processes_and_not_waiting():
    """A child's CPU counts only with ``children=True``; a sleep costs wall time, not CPU time."""
    burn = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass"
    start = _bench.clock(children=True)
    subprocess.run([sys.executable, "-c", burn], check=True)
    alone = _bench.cpu_seconds()
    spent = _bench.clock(children=True) - start
    assert spent.cpu >= 0.3 and alone - start.cpu < 0.3 <= spent.wall  # the child's 0.3 s, not this process's
    before = _bench.clock()
    time.sleep(0.2)
    slept = _bench.clock() - before
    assert slept.wall >= 0.2 and slept.cpu < 0.1


def test_interleaved_keeps_wall_seconds_for_cases_returning_floats():
    """Scripts written before the CPU clock still get wall seconds (and nan CPU) from the same helpers."""
    cases = {"old": lambda: 2.0, "new": lambda: _bench.Times(3.0, 1.0)}
    assert _bench.interleaved(cases, 3) == {"old": 2.0, "new": 3.0}
    assert _bench.interleaved_times(cases, 2) == {"old": [2.0, 2.0], "new": [3.0, 3.0]}
    cpu = _bench.medians(_bench.interleaved_clocks(cases, 1))["cpu"]
    assert math.isnan(cpu["old"]) and cpu["new"] == 1.0
