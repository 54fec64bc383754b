"""Worker processes end when the driver dies: in the middle of a job (issue 13, item 4) and before their first job
(issue 24, item 3). The driver is killed with SIGKILL while every worker is held, inside a job
(tests.experiment.gated_agent) or while receiving its first job (tests.experiment.held_job), and the workers must
then be gone.

The tests wait for conditions, never for a wall-clock budget of the work itself: they poll until the workers are
held and until they are gone, each with a generous overall limit (a hang guard), so they pass on a machine at load
20. The limits do not measure the watchdog: a worker that outlives its driver waits at the gate for ten minutes,
far beyond them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.experiment.processes import alive, poll

ROOT = Path(__file__).resolve().parents[2]
CONFIG = """name = "workers"
seeds = 4
n_jobs = 2
checkpoints = 5
[env]
id = "dpbandit/SparseLinear-v0"
horizon = 50
[[agents]]
type = "tests.experiment.gated_agent:GatedAgent"
gate = "{gate}"
pids = "{pids}"
"""
#: Hang guards (seconds): workers starting and reaching the gate (imports under load), and workers ending.
START_LIMIT, END_LIMIT = 900.0, 240.0


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def _kill_driver_and_check_workers(driver: subprocess.Popen, pids: Path, gate: Path) -> None:
    """Wait until two workers are held at the gate, SIGKILL the driver, and require the workers to end."""
    workers: list[int] = []
    try:
        held = poll(lambda: driver.poll() is not None or len(list(pids.glob("*"))) >= 2, START_LIMIT)
        assert driver.poll() is None, driver.stderr.read().decode()
        assert held, f"the workers did not reach the gate within {START_LIMIT:.0f} s"
        workers = [int(p.name) for p in pids.iterdir()]
        assert len(workers) == 2 and driver.pid not in workers and all(map(alive, workers))
    finally:
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait()
    gone = poll(lambda: not any(map(alive, workers)), END_LIMIT)
    survivors = [pid for pid in workers if alive(pid)]
    gate.touch()  # clean up before failing: held workers go on, and are killed
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)
    assert gone and not survivors, f"worker processes {survivors} outlived the killed driver"


@pytest.mark.parametrize("backend", ["local", "dask"])
def test_workers_end_when_the_driver_is_killed(tmp_path, backend):
    if backend == "dask":
        pytest.importorskip("dask.distributed")
    pids, gate = tmp_path / "pids", tmp_path / "gate"
    config = tmp_path / "exp.toml"
    config.write_text(CONFIG.format(gate=gate, pids=pids))
    cmd = [sys.executable, "-m", "dpbandit.experiment.cli", "run", "--config", str(config), "--out",
           str(tmp_path / "out"), "--no-progress", "--backend", backend]
    driver = subprocess.Popen(cmd, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _kill_driver_and_check_workers(driver, pids, gate)


def test_workers_end_when_the_driver_is_killed_before_their_first_job(tmp_path):
    """Issue 24: the watchdog started inside the first job, so a loky worker whose driver died before it (here:
    while the worker receives its first job) lived on; now every worker watches the driver from its start (loky's
    initializer). (A Dask client unpickles tasks in the driver, so this hold cannot be staged on Dask workers.)"""
    pids, gate = tmp_path / "pids", tmp_path / "gate"
    cmd = [sys.executable, "-m", "tests.experiment.held_job", str(gate), str(pids), "local"]
    driver = subprocess.Popen(cmd, env=_env(), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _kill_driver_and_check_workers(driver, pids, gate)
