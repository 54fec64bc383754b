"""Running jobs: in this process, in joblib worker processes, or on a dask.distributed cluster.

:func:`execute_jobs` is the one place where the bandit runner (:mod:`dpbandit.experiment.runner`) and the OCO runner
(:mod:`dpbandit.experiment.oco`) hand work to processes. Every output is handed back to the caller's ``store`` as
soon as it arrives, so a killed run keeps every finished job; worker processes end with their driver.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from dpbandit.validation import check_choice

__all__ = ["execute_jobs", "BACKENDS"]

#: Where jobs run: this machine (in-process or joblib processes) or a dask.distributed cluster.
BACKENDS: tuple[str, ...] = ("local", "dask")


def execute_jobs(
    run_job: Callable[[Any], Any],
    jobs: Sequence[Hashable],
    store: Callable[[Any, Any], None],
    *,
    n_jobs: int = 1,
    desc: str = "jobs",
    progress: bool = True,
    backend: str = "local",
    dask_address: str | None = None,
    size: Callable[[Any], int] | None = None,
) -> None:
    """Run ``run_job(job)`` for every job and hand each output to ``store(job, output)`` in this process as soon as
    it arrives (in completion order), so a killed run keeps every job stored before it died. ``size(job)``: what a
    job counts for on the progress bar (default 1).

    ``backend="local"``: this process when ``n_jobs == 1`` (or one job), else ``n_jobs`` joblib processes;
    ``"dask"``: a ``dask.distributed`` cluster at ``dask_address`` (a local one of ``n_jobs`` workers when None).
    ``run_job`` must be picklable for worker processes (a module-level function or a ``functools.partial`` of one).
    """
    if progress:
        from tqdm.auto import tqdm  # a widget in notebooks, text in terminals
    else:
        from tqdm import tqdm  # disabled bar; tqdm.auto would warn in notebooks without ipywidgets

    check_choice("backend", backend, BACKENDS)
    size = size or (lambda job: 1)
    bar = tqdm(total=sum(map(size, jobs)), desc=desc, unit="job", disable=not progress or not jobs)

    def done(job, output):
        store(job, output)
        bar.update(size(job))

    try:
        if backend == "dask":
            _execute_dask(run_job, jobs, done, n_jobs, dask_address)
        elif n_jobs == 1 or len(jobs) <= 1:
            for job in jobs:
                done(job, run_job(job))
        else:
            from joblib import Parallel, delayed

            parallel = Parallel(n_jobs=min(n_jobs, len(jobs)), return_as="generator_unordered")
            for job, output in parallel(delayed(_run_tagged)(run_job, job, os.getpid()) for job in jobs):
                done(job, output)
    finally:
        bar.close()


def _run_tagged(run_job: Callable[[Any], Any], job: Any, driver: int | None = None) -> tuple[Any, Any]:
    if driver is not None:
        _watch_driver(driver)
    return job, run_job(job)


_WATCHING: set[int] = set()


def _watch_driver(driver: int, period: float = 0.5) -> None:
    """In a worker process started by the driver process ``driver`` on this machine (loky, a local Dask cluster),
    start (once) a daemon thread that ends this process within ``period`` seconds of the driver's death (the
    worker is then re-parented), even in the middle of a job: a killed run leaves no workers computing behind it.
    Does nothing in the driver itself or in workers of a remote cluster."""
    if driver in _WATCHING or os.getpid() == driver or os.getppid() != driver:
        return
    _WATCHING.add(driver)

    def watch() -> None:
        while os.getppid() == driver:
            time.sleep(period)
        os._exit(70)

    threading.Thread(target=watch, name="dpbandit-driver-watchdog", daemon=True).start()


def _execute_dask(run_job, jobs, done, n_jobs, dask_address) -> None:
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise ValueError("backend='dask' needs dask.distributed: pip install 'dpbandit[dask]'") from exc
    cluster = None
    if dask_address is None:
        cluster = LocalCluster(n_workers=n_jobs, threads_per_worker=1, processes=True, dashboard_address=None)
    client = Client(cluster if cluster is not None else dask_address)
    try:
        futures = [client.submit(_run_tagged, run_job, job, os.getpid(), pure=False) for job in jobs]
        for future in as_completed(futures):
            job, output = future.result()
            done(job, output)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
