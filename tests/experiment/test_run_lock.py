"""One run per run directory at a time: a lock held for the run's lifetime, refused clearly for a second process,
recovered when its holder died (issue 13, item 3)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dpbandit.experiment.rundir import LOCK_FILE, RunLockedError, run_lock

ROOT = Path(__file__).resolve().parents[2]
CONFIG = """name = "locked"
seeds = 2
n_jobs = 1
checkpoints = 5
[env]
id = "dpbandit/SparseLinear-v0"
horizon = 50
[[agents]]
type = "tests.experiment.gated_agent:GatedAgent"
gate = "{gate}"
pids = "{pids}"
"""


def _run(config, out):
    cmd = [sys.executable, "-m", "dpbandit.experiment.cli", "run", "--config", str(config), "--out", str(out),
           "--no-progress"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


def test_lock_is_exclusive_and_released(tmp_path):
    with run_lock(tmp_path) as path:
        info = json.loads(path.read_text())
        assert info["pid"] == os.getpid()
        with pytest.raises(RunLockedError, match=f"in use by another dpbandit process \\(pid {os.getpid()} on"):
            with run_lock(tmp_path):
                pass
    with run_lock(tmp_path):  # released at the end of the block
        pass


def test_a_lock_left_by_a_dead_process_is_recovered(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / LOCK_FILE).write_text(json.dumps({"pid": dead.pid, "host": "here", "since": "earlier"}))
    with run_lock(tmp_path) as path:
        assert json.loads(path.read_text())["pid"] == os.getpid()


def test_a_second_concurrent_run_is_refused_then_the_killed_runs_lock_is_recovered(tmp_path):
    config = tmp_path / "exp.toml"
    config.write_text(CONFIG.format(gate=tmp_path / "gate", pids=tmp_path / "pids"))
    run_dir = tmp_path / "out" / "locked"
    first = _run(config, tmp_path / "out")  # held inside its first job until the gate file exists
    try:
        deadline = time.monotonic() + 180  # hang guard only
        while time.monotonic() < deadline and first.poll() is None and not (tmp_path / "pids").is_dir():
            time.sleep(0.05)
        assert first.poll() is None, first.stderr.read().decode()
        second = _run(config, tmp_path / "out")
        _, err = second.communicate(timeout=180)
        assert second.returncode == 2, err.decode()
        lines = err.decode().strip().splitlines()
        assert len(lines) == 1 and f"in use by another dpbandit process (pid {first.pid} on" in lines[0], lines
        assert first.poll() is None and not list((run_dir / "jobs").glob("*.json"))  # the second computed nothing
    finally:
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
    assert json.loads((run_dir / LOCK_FILE).read_text())["pid"] == first.pid  # the dead holder's record stays
    (tmp_path / "gate").touch()
    again = _run(config, tmp_path / "out")
    _, err = again.communicate(timeout=300)
    assert again.returncode == 0, err.decode()
    assert len(list((run_dir / "jobs").glob("*.json"))) == 2
    assert (run_dir / LOCK_FILE).read_text() == ""  # released
