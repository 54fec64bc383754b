"""Running jobs: in this process, in joblib worker processes, or on a dask.distributed cluster.

:func:`execute_jobs` is the one place where the bandit runner (:mod:`dpbandit.experiment.runner`) and the OCO runner
(:mod:`dpbandit.experiment.oco`) hand work to processes. Every output is handed back to the caller's ``store`` as
soon as it arrives, so a killed run keeps every finished job.

Worker processes end with their driver from the moment they start (:func:`_worker_start`: the loky initializer; on a
local Dask cluster, run on every worker as soon as the cluster is up), not only inside a job. Progress counts what ``size(job)`` says a job is worth (the bandit runner:
its rounds); a job's round loop reports its rounds through :func:`round_ticker` about twice a second, in this
process directly and from worker processes on this machine over a local socket, so a long job moves the bar.
"""

from __future__ import annotations

import logging
import os
import secrets
import signal
import threading
import time
import warnings
from collections.abc import Callable, Hashable, Sequence
from multiprocessing.connection import Client, Listener
from typing import Any

from dpbandit.validation import check_choice

__all__ = ["execute_jobs", "round_ticker", "check_worker_versions", "BACKENDS"]

#: Where jobs run: this machine (in-process or joblib processes) or a dask.distributed cluster.
BACKENDS: tuple[str, ...] = ("local", "dask")
#: Seconds between two progress reports of a running job (and the driver watchdog's polling period).
PERIOD = 0.5
#: Most rounds between two calls of a job's ticker (:func:`round_ticker`), and the first call's round.
MAX_STEP, FIRST_STEP = 1 << 16, 16


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
    unit: str = "job",
) -> None:
    """Run ``run_job(job)`` for every job and hand each output to ``store(job, output)`` in this process as soon as
    it arrives (in completion order), so a killed run keeps every job stored before it died. ``size(job)``: what a
    job counts for on the progress bar, in ``unit`` (default 1 job); a job may report its progress meanwhile
    through :func:`round_ticker`.

    ``backend="local"``: this process when ``n_jobs == 1`` (or one job), else ``n_jobs`` joblib processes;
    ``"dask"``: a ``dask.distributed`` cluster at ``dask_address`` (a local one of ``n_jobs`` workers when None).
    ``run_job`` must be picklable for worker processes (a module-level function or a ``functools.partial`` of one).
    """
    if progress:
        from tqdm.auto import tqdm  # a widget in notebooks, text in terminals
    else:
        from tqdm import tqdm  # disabled bar; tqdm.auto would warn in notebooks without ipywidgets

    check_choice("backend", backend, BACKENDS)
    sizes = [int(size(job)) if size else 1 for job in jobs]
    bar = tqdm(total=sum(sizes), desc=desc, unit=unit, unit_scale=unit != "job", disable=not progress or not jobs)
    meter = _Meter(bar, sizes, enabled=progress and bool(jobs))

    def done(index: int, output: Any) -> None:
        store(jobs[index], output)
        meter.finish(index)

    in_process = backend == "local" and (n_jobs == 1 or len(jobs) <= 1)
    local_workers = backend == "local" or dask_address is None  # a remote cluster cannot reach our loopback
    channel = _Channel(meter) if meter.enabled and local_workers and not in_process else None
    try:
        if backend == "dask":
            _execute_dask(run_job, jobs, done, n_jobs, dask_address, channel)
        elif in_process:
            for index, job in enumerate(jobs):
                _JOB[0] = _JobRounds(index, meter.report) if meter.enabled else None
                try:
                    output = run_job(job)
                finally:
                    _JOB[0] = None
                done(index, output)
        else:
            from joblib import Parallel, delayed
            from joblib.parallel import LokyBackend

            workers = LokyBackend(initializer=_worker_start, initargs=(os.getpid(), True))
            parallel = Parallel(n_jobs=min(n_jobs, len(jobs)), return_as="generator_unordered", backend=workers)
            address = channel and channel.address
            outputs = parallel(delayed(_run_tagged)(run_job, job, i, address) for i, job in enumerate(jobs))
            try:
                for index, output in outputs:
                    done(index, output)
            except BaseException:  # Ctrl-C or a failed store: stop the workers now, without joblib's note
                with warnings.catch_warnings():  # that the cancelled tasks were never used
                    warnings.simplefilter("ignore")
                    outputs.close()
                raise
    finally:
        if channel is not None:
            channel.close()
        bar.close()


# -- the driver's side of progress -------------------------------------------------------------------------------


class _Meter:
    """Per-job progress on the bar: reports of a running job (rounds so far) and its full size when it finishes,
    from any thread."""

    def __init__(self, bar: Any, sizes: list[int], enabled: bool):
        self.bar, self.sizes, self.enabled = bar, sizes, enabled
        self.shown = [0] * len(sizes)
        self.lock = threading.Lock()

    def report(self, index: int, done: int) -> None:
        with self.lock:
            new = min(int(done), self.sizes[index])
            if new > self.shown[index]:
                self.bar.update(new - self.shown[index])
                self.shown[index] = new

    def finish(self, index: int) -> None:
        self.report(index, self.sizes[index])


class _Channel:
    """A socket on this machine's loopback through which worker processes report their jobs' progress
    (``(index, rounds)`` messages, authenticated by a random key)."""

    def __init__(self, meter: _Meter):
        self.meter, self.key, self.closed = meter, secrets.token_bytes(16), False
        self.listener = Listener(("127.0.0.1", 0), authkey=self.key)
        self.address = (self.listener.address, self.key)
        threading.Thread(target=self._accept, name="dpbandit-progress", daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                conn = self.listener.accept()
            except Exception:  # noqa: BLE001 - a stranger or a closed listener: never fatal to the run
                continue
            if self.closed:
                conn.close()
                return
            threading.Thread(target=self._read, args=(conn,), name="dpbandit-progress-reader", daemon=True).start()

    def _read(self, conn: Any) -> None:
        try:
            while True:
                index, done = conn.recv()
                self.meter.report(index, done)
        except Exception:  # noqa: BLE001 - the worker closed its end or ended
            conn.close()

    def close(self) -> None:
        self.closed = True
        try:  # wake the accepting thread, which then ends
            Client(self.listener.address, authkey=self.key).close()
        except Exception:  # noqa: BLE001
            pass
        self.listener.close()


# -- the worker's side of progress -------------------------------------------------------------------------------


class _JobRounds:
    """The job running in this process: its index and how its progress reaches the driver (at most every
    :data:`PERIOD` seconds)."""

    def __init__(self, index: int, send: Callable[[int, int], None]):
        self.index, self.send, self.done, self.sent = index, send, 0, time.monotonic()

    def add(self, rounds: int) -> None:
        self.done += rounds
        now = time.monotonic()
        if now - self.sent >= PERIOD:
            self.sent = now
            self.send(self.index, self.done)


_JOB: list[_JobRounds | None] = [None]


def round_ticker(weight: int = 1) -> Callable[[int], int] | None:
    """For a job's round loop: ``None`` when nobody watches its progress (no job of :func:`execute_jobs` runs in
    this process, or progress is off); else ``tick`` with ``tick(t)`` to be called at round ``t`` (the first call
    at round ``FIRST_STEP``), which reports ``t`` rounds so far, each counting ``weight`` (seeds run in lockstep),
    and returns the round of the next call: about :data:`PERIOD`/2 seconds later at the measured pace, so the loop
    pays one integer comparison per round and one call per quarter second."""
    job = _JOB[0]
    if job is None:
        return None
    state = {"t": 0, "clock": time.monotonic()}

    def tick(t: int) -> int:
        now = time.monotonic()
        rounds, elapsed = t - state["t"], now - state["clock"]
        job.add(rounds * weight)
        state["t"], state["clock"] = t, now
        step = int(rounds * PERIOD / (2 * elapsed)) if elapsed > 0 else MAX_STEP
        return t + max(1, min(MAX_STEP, step))

    return tick


_CONNECTION: dict[str, Any] = {"address": None, "conn": None}


def _remote_send(address: tuple) -> Callable[[int, int], None]:
    """A sender to the driver's :class:`_Channel` at ``address``: one connection per worker process, reused across
    jobs; a failure only stops the progress reports."""
    def send(index: int, done: int) -> None:
        if _CONNECTION["address"] != address:
            if _CONNECTION["conn"] is not None:
                _CONNECTION["conn"].close()
            _CONNECTION.update(address=address, conn=None)
            try:
                _CONNECTION["conn"] = Client(address[0], authkey=address[1])
            except Exception:  # noqa: BLE001
                return
        conn = _CONNECTION["conn"]
        if conn is not None:
            try:
                conn.send((index, done))
            except Exception:  # noqa: BLE001
                _CONNECTION["conn"] = None
    return send


def _run_tagged(run_job: Callable[[Any], Any], job: Any, index: int, address: tuple | None) -> tuple[int, Any]:
    _JOB[0] = _JobRounds(index, _remote_send(address)) if address is not None else None
    try:
        return index, run_job(job)
    finally:
        _JOB[0] = None


def _worker_version() -> str | None:
    """The dpbandit version a Dask worker imports (None: it cannot import dpbandit)."""
    try:
        from dpbandit import __version__
    except ImportError:
        return None
    return __version__


def check_worker_versions(versions: dict[str, str | None]) -> None:
    """``ValueError`` (one line, before any job) naming the first worker of a cluster (address -> its dpbandit
    version, :func:`_worker_version`) that cannot import dpbandit or runs another version than this driver: jobs
    computed with other code, or another random-stream layout, would be mixed into one table."""
    from dpbandit import __version__

    for worker, version in sorted(versions.items()):
        if version != __version__:
            found = "cannot import dpbandit" if version is None else f"runs dpbandit {version}"
            raise ValueError(f"Dask worker {worker} {found}, this driver dpbandit {__version__}: install the same "
                             "version on every worker (docs/user-guide.md, running on a cluster)")


# -- workers end with their driver -------------------------------------------------------------------------------


def _worker_start(driver: int, child: bool) -> None:
    """Run in every local worker process as it starts, before any job: Ctrl-C is the driver's to handle (it stops
    the workers), and the worker ends with the driver (:func:`_watch_driver`). ``child``: the worker is the
    driver's own child (loky), so a worker whose parent is already another process was orphaned while starting
    and ends at once."""
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread (a Dask worker's event loop may run elsewhere)
        pass
    if child and os.getppid() != driver:
        os._exit(70)
    _watch_driver(driver)


_WATCHING: set[int] = set()


def _watch_driver(driver: int, period: float = PERIOD) -> None:
    """In a worker process started by the driver process ``driver`` on this machine (loky, a local Dask cluster),
    start (once) a daemon thread that ends this process within ``period`` seconds of the driver's death (the
    worker is then re-parented), even in the middle of a job: a killed run leaves no workers computing behind it.
    Does nothing in the driver itself or in a process that is not the driver's child."""
    if driver in _WATCHING or os.getpid() == driver or os.getppid() != driver:
        return
    _WATCHING.add(driver)

    def watch() -> None:
        while os.getppid() == driver:
            time.sleep(period)
        os._exit(70)

    threading.Thread(target=watch, name="dpbandit-driver-watchdog", daemon=True).start()


def _execute_dask(run_job, jobs, done, n_jobs, dask_address, channel) -> None:
    try:
        from dask.distributed import Client as DaskClient
        from dask.distributed import LocalCluster, as_completed
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise ValueError("backend='dask' needs dask.distributed: pip install 'dpbandit[dask]'") from exc
    cluster = None
    if dask_address is None:
        # warnings of a cluster stopped early (Ctrl-C: cancelled tasks, workers killed) would bury the one line
        with warnings.catch_warnings():  # its HTTP routes (no dashboard) fall back to a free port: not the user's
            warnings.filterwarnings("ignore", message=r"Port \d+ is already in use")
            cluster = LocalCluster(n_workers=min(n_jobs, len(jobs)), threads_per_worker=1, processes=True,
                                   dashboard_address=None, silence_logs=logging.CRITICAL)
    client = DaskClient(cluster if cluster is not None else dask_address)
    try:
        if cluster is not None:  # every worker is up once LocalCluster returns: all watch the driver from now
            client.run(_worker_start, os.getpid(), False)
        else:
            check_worker_versions(client.run(_worker_version))
        address = channel and channel.address
        futures = [client.submit(_run_tagged, run_job, job, i, address, pure=False) for i, job in enumerate(jobs)]
        for future in as_completed(futures):
            index, output = future.result()
            done(index, output)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
