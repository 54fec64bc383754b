"""A sweep process killed with SIGKILL mid-run resumes without losing or duplicating finished jobs."""

import os
import signal
import subprocess
import sys
import time

import pandas as pd

CONFIG = """
name = "killme"
seeds = 6
n_jobs = 1
checkpoints = 20
[env]
id = "dpbandit/SparseLinear-v0"
horizon = 4000
dim = 30
[[agents]]
type = "linucb"
[[agents]]
type = "egreedy"
"""


def _run(config, out, **kwargs):
    cmd = [sys.executable, "-m", "dpbandit.experiment.cli", "run", "--config", str(config), "--out", str(out)]
    return subprocess.Popen(cmd + ["--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)


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

    resumed = _run(config, tmp_path / "killed")
    out, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err.decode()
    assert f"Resumed: {len(finished_before)} finished job(s)" in out.decode()

    reference = _run(config, tmp_path / "reference")
    _, err = reference.communicate(timeout=300)
    assert reference.returncode == 0, err.decode()

    got = pd.read_csv(tmp_path / "killed" / "killme" / "results.csv")
    want = pd.read_csv(tmp_path / "reference" / "killme" / "results.csv")
    assert not got.duplicated(["env_id", "agent", "seed", "t"]).any()
    assert sorted({p.name for p in jobs_dir.glob("*.json")}) == sorted(
        p.name for p in (tmp_path / "reference" / "killme" / "jobs").glob("*.json")
    )
    pd.testing.assert_frame_equal(got, want, check_exact=True)
