"""A sweep process killed with SIGKILL mid-run resumes without losing or duplicating finished jobs."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from tests.experiment.processes import alive, poll

# Jobs of a few tenths of a second each (0.2.0's block path plays these agents at a few microseconds per round), one
# job stored at a time (batch off: no lockstep units of 6 seeds), so a run is still going when its first job is in.
CONFIG = """
name = "killme"
seeds = 6
n_jobs = 1
batch = "off"
checkpoints = 20
[env]
id = "dpbandit/SparseLinear-v0"
horizon = 200000
dim = 30
[[agents]]
type = "linucb"
[[agents]]
type = "egreedy"
"""


def _run(config, out, *options, **kwargs):
    cmd = [sys.executable, "-m", "dpbandit.experiment.cli", "run", "--config", str(config), "--out", str(out),
           *options]
    return subprocess.Popen(cmd + ["--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)


def _resume_and_reference(config, stopped, reference, kept: int) -> None:
    """Rerun the stopped run (it must say it resumed ``kept`` jobs) and run the same config uninterrupted."""
    resumed = _run(config, stopped)
    out, err = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, err.decode()
    assert f"Resumed: {kept} finished job(s)" in out.decode()
    uninterrupted = _run(config, reference)
    _, err = uninterrupted.communicate(timeout=600)
    assert uninterrupted.returncode == 0, err.decode()


def test_sigkill_then_resume_equals_uninterrupted(tmp_path):
    config = tmp_path / "sweep.toml"
    config.write_text(CONFIG)
    jobs_dir = tmp_path / "killed" / "killme" / "jobs"

    proc = _run(config, tmp_path / "killed")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list(jobs_dir.glob("*.json"))) < 3:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    finished_before = {p.name for p in jobs_dir.glob("*.json")}
    assert 3 <= len(finished_before) < 12, "the run must be killed mid-way"

    _resume_and_reference(config, tmp_path / "killed", tmp_path / "reference", len(finished_before))
    got = pd.read_csv(tmp_path / "killed" / "killme" / "results.csv")
    want = pd.read_csv(tmp_path / "reference" / "killme" / "results.csv")
    assert not got.duplicated(["env_id", "agent", "seed", "t"]).any()
    assert sorted({p.name for p in jobs_dir.glob("*.json")}) == sorted(
        p.name for p in (tmp_path / "reference" / "killme" / "jobs").glob("*.json")
    )
    pd.testing.assert_frame_equal(got, want, check_exact=True)


def _children(pid: int) -> set[int]:
    """Process ids whose parent is ``pid`` (Linux /proc; empty elsewhere)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc to find the worker processes")
@pytest.mark.parametrize("backend", ["local", "dask"])
def test_sigint_is_one_line_exit_130_keeps_finished_jobs_and_resumes(tmp_path, backend):
    """Issue 24: Ctrl-C printed a 15-20-line KeyboardInterrupt traceback. Now: exit code 130, one line on stderr
    naming the finished jobs kept, the workers gone, and the same command resumes to the uninterrupted results."""
    if backend == "dask":
        pytest.importorskip("dask.distributed")
    config = tmp_path / "sweep.toml"
    config.write_text(CONFIG.replace("n_jobs = 1", "n_jobs = 2"))
    jobs_dir = tmp_path / "stopped" / "killme" / "jobs"
    # Ctrl-C as a terminal sends it: the command starts with SIGINT's default disposition, whatever the test runner's
    # process inherited (an ignored SIGINT is inherited through exec, and Python then never raises KeyboardInterrupt)
    proc = _run(config, tmp_path / "stopped", "--backend", backend,
                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    workers: set[int] = set()

    def first_job_stored() -> bool:
        workers.update(_children(proc.pid))
        return proc.poll() is not None or any(jobs_dir.glob("*.json"))

    assert poll(first_job_stored, 900), "no job finished (hang guard)"
    assert proc.poll() is None, proc.stderr.read().decode()
    os.kill(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=300)
    kept = len(list(jobs_dir.glob("*.json")))
    assert proc.returncode == 130, (proc.returncode, kept, out.decode()[-500:], err.decode())
    assert err.decode().splitlines() == [
        f"dpbandit run: interrupted: {kept} finished job{'s' * (kept != 1)} kept; rerun the same command to resume"
    ]
    assert 1 <= kept < 12
    assert workers and poll(lambda: not any(map(alive, workers)), 240), "worker processes outlived the run"
    if backend == "dask":
        return  # resuming is the same code for both backends

    _resume_and_reference(config, tmp_path / "stopped", tmp_path / "reference", kept)
    got = (tmp_path / "stopped" / "killme" / "results.csv").read_bytes()
    assert got == (tmp_path / "reference" / "killme" / "results.csv").read_bytes()
