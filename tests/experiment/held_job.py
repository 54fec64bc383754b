"""A job that holds the worker process *before* the job starts: unpickling it in the worker records the worker's
process id and waits until a gate file exists, so a test can kill the driver while its workers have not begun a job
(issue 24, item 3). Used by tests/experiment/test_worker_cleanup.py through :func:`main` in a driver subprocess::

    python -m tests.experiment.held_job GATE PIDS BACKEND

(On Dask the client unpickles a task in the driver, so there the hold happens in the driver, not a worker.)
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

HANG_GUARD = 600.0  # seconds: a test that forgets to open the gate does not hang forever


def _arrive(gate: str, pids: str, index: int) -> "HeldJob":
    Path(pids).mkdir(parents=True, exist_ok=True)
    (Path(pids) / str(os.getpid())).touch()
    deadline = time.monotonic() + HANG_GUARD
    while not Path(gate).exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return HeldJob(gate, pids, index)


class HeldJob:
    """A job whose unpickling (in the worker, before any job code runs) waits for ``gate``."""

    def __init__(self, gate: str, pids: str, index: int):
        self.gate, self.pids, self.index = gate, pids, index

    def __reduce__(self):
        return _arrive, (self.gate, self.pids, self.index)

    def __hash__(self) -> int:
        return self.index


def run(job: HeldJob) -> int:
    return job.index


def main(argv: list[str]) -> None:
    from dpbandit.experiment.execution import execute_jobs

    gate, pids, backend = argv
    jobs = [HeldJob(gate, pids, i) for i in range(2)]
    execute_jobs(run, jobs, lambda job, output: None, n_jobs=2, progress=False, backend=backend)


if __name__ == "__main__":
    main(sys.argv[1:])
