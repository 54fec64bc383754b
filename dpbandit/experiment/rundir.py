"""Run directories: atomic files, the run's lock, ``--fresh``, and jobs that carry their own integrity record.

A run directory is ``<out>/<name>`` with ``name`` a single folder name (:func:`dpbandit.validation.check_run_name`).
:func:`open_run_dir` (a context manager, used by every runner) creates it or reuses it when its ``manifest.json``
records the same ``config_hash``, and holds the run's lock (:func:`run_lock`) until the run ends, so a second
process running into the same folder is refused (:class:`RunLockedError`) instead of computing every job again.

Users' data is never deleted: a folder that is not a dpbandit run (no readable manifest naming this run) is refused,
with or without ``fresh``; ``fresh=True`` discards only what a dpbandit run writes (its manifest, the files the
manifest lists, the standard outputs, the ``.csv``/``.json`` files under ``jobs/`` and unfinished temporary files)
inside ``<out>/<name>`` itself, and leaves every other file where it is.

Jobs (:func:`store_job`, :func:`load_job`): ``jobs/<stem>.csv`` is written atomically first, then
``jobs/<stem>.json`` holding the job's metadata *and* the CSV's integrity record (row count, column dtypes,
SHA-256 of the bytes). A job counts as finished only when its JSON exists; a job whose files do not match its
record (truncated, cut mid-line, emptied, edited, corrupt JSON) is not read back: :func:`load_job` warns
(:class:`JobRecomputedWarning`, naming the file) and the runner recomputes it.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import socket
import warnings
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from dpbandit.files import _EXACT_CSV, RECORD, read_manifest, recorded_files, write_atomic, write_json_atomic
from dpbandit.validation import check_run_name

__all__ = [
    "JobRecomputedWarning",
    "RunLockedError",
    "claim_run_dir",
    "load_job",
    "open_run_dir",
    "prepare_run_dir",
    "run_lock",
    "store_job",
    "write_atomic",
    "write_json_atomic",
]

#: Files every runner writes at the top of its run directory (``--fresh`` discards them, and the manifest's
#: ``files``); anything else there belongs to the user and is kept.
RUN_FILES = ("manifest.json", "results.csv", "summary.csv", "regret.png")
LOCK_FILE = ".dpbandit.lock"
_JOB_FORMAT = 1


class RunLockedError(RuntimeError):
    """Another live process holds the run directory's lock."""


class JobRecomputedWarning(UserWarning):
    """A stored job did not match its integrity record (or could not be read) and is recomputed."""


# -- the run directory ----------------------------------------------------------------------------------------------


def _read_manifest(run_dir: Path) -> dict | None:
    """The manifest as a dict; None when there is none; ValueError naming the file when it is unreadable."""
    try:
        return read_manifest(run_dir, required=False)
    except ValueError as exc:
        raise ValueError(f"{exc}; move it away or choose another name or out folder") from None


def _check(run_dir: Path, name: str, config_hash: str, fresh: bool) -> dict | None:
    """Read-only: the manifest of a run directory this run may use, else ValueError (nothing is touched)."""
    if not run_dir.exists():
        return None
    if not run_dir.is_dir():
        raise ValueError(f"{str(run_dir)!r} exists and is not a folder: choose another name or out folder")
    manifest = _read_manifest(run_dir)
    if manifest is None:
        if any(p.name not in (LOCK_FILE, RECORD) for p in run_dir.iterdir()):
            raise ValueError(f"run directory {str(run_dir)!r} exists but is not a dpbandit run (no manifest.json); "
                             "it is left untouched: choose another name or out folder")
        return None
    config = manifest.get("config")
    if "config_hash" not in manifest or not isinstance(config, dict) or config.get("name") != name:
        raise ValueError(f"run directory {str(run_dir)!r} has a manifest.json that does not describe a dpbandit run "
                         f"named {name!r}; it is left untouched: choose another name or out folder")
    if fresh:
        if run_dir.is_symlink() or run_dir.resolve().parent != run_dir.parent.resolve():
            raise ValueError(f"run directory {str(run_dir)!r} is a link to another place: --fresh deletes nothing "
                             "outside the out folder; remove the link yourself or choose another name")
    elif manifest["config_hash"] != config_hash:
        older = "" if "stream_layout" in manifest else (
            ", or the same one run by dpbandit <= 0.1.0, whose random streams are laid out otherwise (CHANGELOG "
            "0.2.0), so its jobs cannot be resumed")
        raise ValueError(
            f"run directory {str(run_dir)!r} holds a different experiment (config hash "
            f"{str(manifest['config_hash'])[:12]} != {config_hash[:12]}){older}: pass fresh=True (CLI: --fresh) to "
            "discard it, or change the experiment's name or out folder"
        )
    return manifest


def _discard(run_dir: Path, manifest: dict) -> None:
    """Delete what a dpbandit run wrote in ``run_dir`` (see the module docstring); keep everything else."""
    listed = manifest.get("files")
    names = set(RUN_FILES) | {v for v in (listed.values() if isinstance(listed, dict) else ()) if isinstance(v, str)}
    names |= set(recorded_files(run_dir) or ()) | {RECORD}
    for name in names:
        path = run_dir / name
        if "/" not in name and "\\" not in name and name not in ("", ".", "..") and path.is_file():
            path.unlink()
    jobs = run_dir / "jobs"
    for folder in (run_dir, jobs) if jobs.is_dir() and not jobs.is_symlink() else (run_dir,):
        for path in folder.iterdir():
            temporary = path.name.startswith(".") and path.name.endswith(".tmp")
            if path.is_file() and (temporary or (folder is jobs and path.suffix in (".csv", ".json"))):
                path.unlink()
    if jobs.is_dir() and not jobs.is_symlink() and not any(jobs.iterdir()):
        jobs.rmdir()


def prepare_run_dir(parent: str | Path, name: str, config_hash: str, fresh: bool = False) -> Path:
    """``<parent>/<name>``: created, or reused when its ``manifest.json`` holds the same ``config_hash``.

    A folder holding a different experiment is refused unless ``fresh``; one that is not a dpbandit run of this
    ``name`` is always refused (ValueError, before anything is written). ``fresh=True`` discards only the run's own
    files (module docstring). Callers that run jobs use :func:`open_run_dir`, which also holds the lock.
    """
    check_run_name(name)
    run_dir = Path(parent) / name
    manifest = _check(run_dir, name, config_hash, fresh)
    if fresh and manifest is not None:
        _discard(run_dir, manifest)
    _mkdir(run_dir)
    return run_dir


def _mkdir(run_dir: Path) -> None:
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OSError(exc.errno, f"cannot create the run directory {str(run_dir)!r}: {exc.strerror}") from None


@contextlib.contextmanager
def open_run_dir(parent: str | Path, name: str, config_hash: str, fresh: bool = False) -> Iterator[Path]:
    """:func:`prepare_run_dir` with the run's lock held (:func:`run_lock`) until the ``with`` block ends.

    The folder is checked before it is created or locked, and checked again (and discarded if ``fresh``) under
    the lock, so a concurrent run cannot slip in between.
    """
    check_run_name(name)
    run_dir = Path(parent) / name
    _check(run_dir, name, config_hash, fresh)
    _mkdir(run_dir)
    with run_lock(run_dir):
        yield prepare_run_dir(parent, name, config_hash, fresh)


def claim_run_dir(run_dir: str | Path, kind: str) -> Path:
    """For commands that rewrite one folder per run (``reproduce table-5.1``, ``reproduce fliphat``): create
    ``run_dir``, or reuse it when it is empty or its manifest says ``kind``; anything else is refused (ValueError,
    before anything is written), so a folder of the user's is never written into."""
    run_dir = Path(run_dir)
    if run_dir.exists() and (not run_dir.is_dir()
                             or any(p.name not in (LOCK_FILE, RECORD) for p in run_dir.iterdir())):
        try:
            found = (read_manifest(run_dir, required=False) or {}).get("kind")
        except (OSError, ValueError):
            found = None
        if found != kind:
            what = kind.removeprefix("reproduce ")
            raise ValueError(f"run directory {str(run_dir)!r} exists and is not a {what} reproduction; it is left "
                             "untouched: choose another --name or --out")
    _mkdir(run_dir)
    return run_dir


@contextlib.contextmanager
def run_lock(run_dir: str | Path) -> Iterator[Path]:
    """Hold ``<run_dir>/.dpbandit.lock`` for the ``with`` block; :class:`RunLockedError` if a live process holds it.

    POSIX: an exclusive ``flock`` on the file, which the kernel releases when the holder exits, however it dies, so
    a lock left by a killed process never blocks (the file stays, naming the last holder). Without ``fcntl`` the
    file's PID decides: a lock whose process is dead on this host is stale and taken over.
    """
    path = Path(run_dir) / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise OSError(exc.errno, f"cannot create the lock file {str(path)!r}: {exc.strerror}") from None
    try:
        holder = _take(fd, path)
        try:
            yield path
        finally:
            _release(fd, holder)
    finally:
        os.close(fd)


def _holder_text(path: Path) -> str:
    try:
        info = json.loads(path.read_text(encoding="utf-8") or "{}")
        return f"pid {info['pid']} on {info['host']}, since {info['since']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "unknown process"


def _take(fd: int, path: Path) -> Any:
    message = (f"run directory {str(path.parent)!r} is in use by another dpbandit process ({{}}): wait for it to "
               "finish, or run under another name")
    try:
        import fcntl
    except ImportError:  # pragma: no cover - non-POSIX
        fcntl = None
    if fcntl is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunLockedError(message.format(_holder_text(path))) from None
    else:  # pragma: no cover - non-POSIX
        info = _lock_info(path)
        if info and info.get("host") == socket.gethostname() and info.get("pid") != os.getpid() and \
                _alive(int(info.get("pid", -1))):
            raise RunLockedError(message.format(_holder_text(path)) + f"; if it is not running, delete {str(path)!r}")
    record = json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                         "since": datetime.now(timezone.utc).isoformat(timespec="seconds")})
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, record.encode())
    return fcntl


def _release(fd: int, fcntl: Any) -> None:
    os.ftruncate(fd, 0)  # the file stays (deleting it would race with a process opening it); empty = free
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)


def _lock_info(path: Path) -> dict:  # pragma: no cover - non-POSIX
    try:
        return json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return {}


def _alive(pid: int) -> bool:  # pragma: no cover - non-POSIX
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return pid > 0


# -- jobs -----------------------------------------------------------------------------------------------------------


def store_job(run_dir: Path, stem: str, frame: pd.DataFrame, meta: Any) -> None:
    """Write a finished job: ``jobs/<stem>.csv`` atomically, then (atomically, after it) ``jobs/<stem>.json``
    with ``meta`` and the CSV's integrity record; the JSON's presence marks the job finished."""
    data = frame.to_csv(index=False).encode("utf-8")
    write_atomic(run_dir / "jobs" / f"{stem}.csv", lambda p: p.write_bytes(data), kind="job")
    record = {"format": _JOB_FORMAT, "csv": f"{stem}.csv", "rows": len(frame),
              "dtypes": _kinds(frame),
              "sha256": hashlib.sha256(data).hexdigest(), "meta": meta}
    write_json_atomic(run_dir / "jobs" / f"{stem}.json", record, kind="job")




def load_job(run_dir: Path, stem: str) -> tuple[pd.DataFrame, Any] | None:
    """The ``(frame, meta)`` of a job finished by an earlier (possibly killed) run, or None (not finished, or its
    files do not match the integrity record: :class:`JobRecomputedWarning` names the file). Floats read back
    exactly (round-trip parsing) and every column keeps its dtype, so a resumed run equals an uninterrupted one."""
    meta_path, csv_path = run_dir / "jobs" / f"{stem}.json", run_dir / "jobs" / f"{stem}.csv"
    if not meta_path.is_file():
        return None
    try:
        record = json.loads(meta_path.read_text(encoding="utf-8"))
        if not isinstance(record, dict) or record.get("format") != _JOB_FORMAT:
            raise ValueError("no integrity record (format 1)")
        rows, digest, dtypes, meta = record["rows"], record["sha256"], record["dtypes"], record["meta"]
    except (OSError, UnicodeDecodeError, ValueError, KeyError) as exc:
        return _recompute(f"job record {str(meta_path)!r} is unreadable ({exc})")
    try:
        data = csv_path.read_bytes()
    except OSError as exc:
        return _recompute(f"job file {str(csv_path)!r} cannot be read ({exc.strerror})")
    if hashlib.sha256(data).hexdigest() != digest:
        return _recompute(f"job file {str(csv_path)!r} does not match its integrity record in {meta_path.name} "
                          "(changed, truncated or cut since it was written)")
    try:
        frame = pd.read_csv(io.BytesIO(data), **_EXACT_CSV)
    except (ValueError, pd.errors.ParserError) as exc:  # EmptyDataError is a ValueError
        return _recompute(f"job file {str(csv_path)!r} cannot be parsed ({exc})")
    got = _kinds(frame)
    if len(frame) != rows or got != dtypes:
        return _recompute(f"job file {str(csv_path)!r} reads back as {len(frame)} rows with dtypes {got}, its "
                          f"record says {rows} rows with {dtypes}")
    return frame, meta


def _kinds(frame: pd.DataFrame) -> dict[str, str]:
    """Column -> "int", "float", "bool" or "text" (text columns read back as object or str depending on pandas)."""
    names = {"i": "int", "u": "int", "f": "float", "b": "bool"}
    return {str(c): names.get(getattr(t, "kind", ""), "text") for c, t in frame.dtypes.items()}


def _recompute(reason: str) -> None:
    warnings.warn(f"{reason}: recomputing this job", JobRecomputedWarning, stacklevel=3)
    return None
