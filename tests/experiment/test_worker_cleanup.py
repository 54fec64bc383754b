"""Worker processes end when the driver dies, even in the middle of a job (issue 13, item 4): the driver is killed
with SIGKILL while every worker is held inside a job (tests.experiment.gated_agent), and the workers must be gone
within a bounded time (the watchdog polls every 0.5 s; the bound is a hang guard, 20x that)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

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


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    except OSError:  # pragma: no cover - no /proc
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return state != "Z"  # a zombie has ended; only its exit status waits for its new parent


@pytest.mark.parametrize("backend", ["local", "dask"])
def test_workers_end_when_the_driver_is_killed(tmp_path, backend):
    if backend == "dask":
        pytest.importorskip("dask.distributed")
    pids = tmp_path / "pids"
    config = tmp_path / "exp.toml"
    config.write_text(CONFIG.format(gate=tmp_path / "gate", pids=pids))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, "-m", "dpbandit.experiment.cli", "run", "--config", str(config), "--out",
           str(tmp_path / "out"), "--no-progress", "--backend", backend]
    driver = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 180  # hang guard: two workers start and enter their first job
        while time.monotonic() < deadline and driver.poll() is None and len(list(pids.glob("*"))) < 2:
            time.sleep(0.05)
        assert driver.poll() is None, driver.stderr.read().decode()
        workers = [int(p.name) for p in pids.iterdir()]
        assert len(workers) == 2 and driver.pid not in workers and all(map(_alive, workers))
    finally:
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait()
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline and any(map(_alive, workers)):
        time.sleep(0.05)
    survivors = [pid for pid in workers if _alive(pid)]
    for pid in survivors:  # clean up before failing
        os.kill(pid, signal.SIGKILL)
    assert not survivors, f"worker processes {survivors} outlived the killed driver"
