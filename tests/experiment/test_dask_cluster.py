"""A real distributed run (issue 25, item 5): a ``dask scheduler`` and two ``dask worker`` processes started by hand,
a sweep through ``dpbandit run --backend dask --dask-address tcp://...``, and the same sweep with joblib.

What a user relies on: a cluster gives the same bytes as this machine (``results.csv``, every job's frame, the
summary and privacy reports; only the timings differ), every job ran on the cluster's workers, and the driver wrote
every file (the workers run in a folder of their own and never see the run directory).

The scheduler picks a free port itself (``--port 0``) and publishes its address in a scheduler file, so two test
processes never race for a port; its HTTP routes take a free port too. Every process runs in its own process
group and dask's scratch space is under ``tmp_path``: the teardown ends each group (SIGTERM, then SIGKILL) and
checks that none of their processes outlived the test.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import dpbandit
from tests.experiment.processes import alive, poll

SWEEP = """
name = "cluster"
seeds = 3
n_jobs = 2
checkpoints = 20
[[envs]]
id = "dpbandit/SparseLinear-v0"
label = "d=10"
horizon = 200
dim = 10
[[envs]]
id = "dpbandit/SparseLinear-v0"
label = "d=20"
horizon = 200
dim = 20
[[agents]]
type = "linucb"
[[agents]]
type = "egreedy"
[[agents]]
type = "dp_ucb"
epsilon = 1.0
"""
#: Seconds the cluster may take to come up (imports on a busy 2-core machine), and each run to finish.
START_LIMIT, RUN_LIMIT = 90, 300
#: The job record's timings (wall, CPU): the only fields of a job's JSON that depend on where and when it ran.
TIMINGS = ("seconds", "cpu_seconds")


def _environment() -> dict:
    """The test's environment with the dpbandit this test imports first on the path: the workers import it to
    unpickle the jobs, and must run the same code as the joblib reference."""
    source = str(Path(dpbandit.__file__).resolve().parents[1])
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": source + (os.pathsep + path if path else ""), "OPENBLAS_NUM_THREADS": "1"}


class Cluster:
    """A dask scheduler and dask workers (one thread each, under their nannies), each started in its own process
    group, with dask's scratch space in the cluster's folder."""

    def __init__(self, root: Path):
        self.root, self.procs, self.logs = root, [], []
        self.scheduler_file = root / "scheduler.json"

    def start(self, workers: int) -> None:
        root = self.root
        for folder in ("scheduler", "workers"):
            (root / folder).mkdir(parents=True)
        env = {**_environment(), "DASK_TEMPORARY_DIRECTORY": str(root / "scratch")}
        dask = [sys.executable, "-m", "dask"]
        common = ["--scheduler-file", str(self.scheduler_file), "--dashboard-address", "127.0.0.1:0"]
        self._start("scheduler", [*dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                  *common], root / "scheduler", env)
        for i in range(workers):  # a worker waits for the scheduler file; --death-timeout ends it if none comes
            self._start(f"worker{i}", [*dask, "worker", "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard",
                                       "--name", f"worker{i}", "--death-timeout", str(START_LIMIT), *common],
                        root / "workers", env)

    def _start(self, name: str, cmd: list[str], cwd: Path, env: dict) -> None:
        log = self.root / f"{name}.log"
        with open(log, "wb") as out:
            self.procs.append(subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                               start_new_session=True))
        self.logs.append(log)

    def tails(self) -> str:
        return "\n".join(f"--- {log.name} (exit {p.poll()}):\n" + log.read_text(errors="replace")[-1500:]
                         for p, log in zip(self.procs, self.logs))

    def client(self, timeout: float):
        import distributed

        return distributed.Client(scheduler_file=str(self.scheduler_file), timeout=timeout)

    def wait_for_workers(self, n: int) -> str:
        """The scheduler's address once ``n`` workers are connected; a test failure with every log otherwise."""
        if not poll(lambda: self.scheduler_file.exists() or self.procs[0].poll() is not None, START_LIMIT):
            pytest.fail(f"the dask scheduler wrote no scheduler file within {START_LIMIT} s\n{self.tails()}")
        try:
            with self.client(START_LIMIT) as client:
                client.wait_for_workers(n, timeout=START_LIMIT)
                return client.scheduler.address
        except Exception as exc:  # noqa: BLE001 - a timeout or a dead scheduler: say which, with the logs
            pytest.fail(f"{n} dask workers did not connect within {START_LIMIT} s ({exc!r})\n{self.tails()}")

    def executed(self) -> dict[str, int]:
        """Tasks each worker has run."""
        with self.client(30) as client:
            return client.run(lambda dask_worker: dask_worker.state.executed_count)

    def stop(self) -> None:
        _stop(self.procs)


def _stop(procs: list[subprocess.Popen]) -> None:
    """End every process group of ``procs`` (SIGTERM, SIGKILL after 10 s) and reap the leaders; fail if any of the
    groups' processes is still alive."""
    groups = {p.pid: _group(p.pid) for p in procs}
    for p in procs:
        _signal_group(p.pid, signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            _signal_group(p.pid, signal.SIGKILL)
            p.wait(timeout=10)
    members = {pid for pids in groups.values() for pid in pids} | set(groups)
    if not poll(lambda: not any(map(alive, members)), 10):
        for pgid in groups:
            _signal_group(pgid, signal.SIGKILL)
        pytest.fail(f"processes outlived the test: {sorted(p for p in members if alive(p))}")


def _group(pgid: int) -> set[int]:
    """Process ids in process group ``pgid`` now (Linux /proc; empty elsewhere)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[2]) == pgid:
                found.add(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


@pytest.fixture
def cluster(tmp_path):
    pytest.importorskip("distributed")  # here, not at import: collecting the suite stays cheap
    started = Cluster(tmp_path / "cluster")
    try:
        started.start(workers=2)
        yield started
    finally:
        started.stop()


def _run(config: Path, out: Path, *options: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "dpbandit.experiment.cli", "run", "--config", str(config), "--out", str(out),
           *options]
    return subprocess.Popen(cmd, cwd=out.parent, env=_environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)


def _job_record(path: Path) -> dict:
    record = json.loads(path.read_text())
    assert all(record["meta"].pop(key, 0) >= 0 for key in TIMINGS) and "seconds" not in record["meta"]
    return record


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="ends its processes by process group (POSIX)")
def test_sweep_on_a_started_scheduler_and_workers_equals_joblib(tmp_path, cluster):
    config = tmp_path / "sweep.toml"
    config.write_text(SWEEP)
    address = cluster.wait_for_workers(2)
    assert address.startswith("tcp://127.0.0.1:")
    # both runs at once: the imports of one overlap the other's work
    runs = {"dask": _run(config, tmp_path / "dask", "--backend", "dask", "--dask-address", address),
            "joblib": _run(config, tmp_path / "joblib", "--n-jobs", "2", "--no-progress")}
    try:
        for name, proc in runs.items():
            out, err = proc.communicate(timeout=RUN_LIMIT)
            assert proc.returncode == 0, f"{name}: {err.decode()[-3000:]}\n{cluster.tails()}"
            assert "Results table:" in out.decode()
    finally:
        _stop(list(runs.values()))

    dask, joblib = tmp_path / "dask" / "cluster", tmp_path / "joblib" / "cluster"
    assert (dask / "results.csv").read_bytes() == (joblib / "results.csv").read_bytes()
    frames = sorted(p.name for p in (dask / "jobs").glob("*.csv"))
    assert len(frames) == 2 * 3 * 3 and frames == sorted(p.name for p in (joblib / "jobs").glob("*.csv"))
    for name in frames:
        assert (dask / "jobs" / name).read_bytes() == (joblib / "jobs" / name).read_bytes(), name
        record = name.removesuffix(".csv") + ".json"
        assert _job_record(dask / "jobs" / record) == _job_record(joblib / "jobs" / record), record
    # the summary: the same text in every column but the measured costs per round
    got, want = (pd.read_csv(run / "summary.csv", dtype=str) for run in (dask, joblib))
    timings = [c for c in got.columns if c.endswith("per_round")]
    assert "us_per_round" in timings
    pd.testing.assert_frame_equal(got.drop(columns=timings), want.drop(columns=timings))
    manifests = [json.loads((run / "manifest.json").read_text()) for run in (dask, joblib)]
    assert [m["backend"] for m in manifests] == ["dask", "local"]
    assert manifests[0]["config_hash"] == manifests[1]["config_hash"]
    assert manifests[0]["privacy"] == manifests[1]["privacy"]

    # every job ran on the two workers: one task per lockstep unit (a job record's "batch" is its unit's seeds)
    units = sum(1 / json.loads(p.read_text())["meta"].get("batch", 1) for p in (dask / "jobs").glob("*.json"))
    executed = cluster.executed()
    assert len(executed) == 2 and sum(executed.values()) == round(units), executed
    # the workers wrote nothing where they run (their scratch space is dask's, under the cluster's folder)
    assert list((cluster.root / "workers").iterdir()) == []


def test_workers_of_another_dpbandit_version_are_refused_before_any_job():
    """A cluster whose workers import another dpbandit (or none) would mix other code's results into one table."""
    from dpbandit.experiment.execution import check_worker_versions

    check_worker_versions({"tcp://a:1": dpbandit.__version__, "tcp://b:2": dpbandit.__version__})
    with pytest.raises(ValueError, match=r"^Dask worker tcp://b:2 runs dpbandit 0\.0\.1, this driver dpbandit "):
        check_worker_versions({"tcp://a:1": dpbandit.__version__, "tcp://b:2": "0.0.1"})
    with pytest.raises(ValueError, match="Dask worker tcp://a:1 cannot import dpbandit"):
        check_worker_versions({"tcp://a:1": None})
