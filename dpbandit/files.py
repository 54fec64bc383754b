"""The one output layer and the one input layer: every file a dpbandit command writes or reads back goes through here.

Output (:func:`write_atomic`, :func:`write_json_atomic`, :func:`save_figure`) guarantees, for every caller:

* **atomic**: the content goes to a temporary file in the same folder that is renamed onto the target, so a reader,
  a killed run or a full disk never leaves a partial file (the temporary file is removed on any failure);
* **no links**: a target that is a symbolic link is refused, never written through nor replaced, and the target's
  folder must be the folder the path names (a link in the last folder component that leads elsewhere is refused);
* **never an input**: a target that is the same file as one of the command's ``inputs`` is refused, even with
  ``overwrite``;
* **never another's file**: in a run folder (``kind="run"``, the default) an existing file is replaced only when the
  folder's record (:data:`RECORD`) says dpbandit wrote it; a single-file output (``kind="single"``: ``replay --out``,
  ``plot --output``) never replaces an existing file unless the user asked (``overwrite=True``, ``--overwrite``);
  ``kind="job"`` is for the ``jobs/`` folder of a run, which belongs to the run as a whole;
* **readable like any other file**: the mode follows the process's umask (``0o666 & ~umask``), not ``mkstemp``'s
  private 0600.

Every file written with ``kind="run"`` is entered in the folder's record ``.dpbandit-files.json`` with its size and
SHA-256, before it is renamed into place. Input (:func:`read_verified`, :func:`read_table`, :func:`read_manifest`)
checks a file against that record and refuses a damaged one (:class:`DamagedFileError`, a ``ValueError`` naming the
file), so a truncated or edited ``results.csv`` is never used silently. Folders written before records existed
(dpbandit <= 0.1.0 runs) are read with a :class:`UnverifiedFileWarning`.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "DamagedFileError",
    "OutputRefusedError",
    "RECORD",
    "UnverifiedFileWarning",
    "check_output",
    "read_manifest",
    "read_table",
    "read_verified",
    "recorded_files",
    "run_file",
    "save_figure",
    "write_atomic",
    "write_json_atomic",
]

#: The record of the files dpbandit wrote in a run folder: ``{"format": 1, "files": {name: {"bytes", "sha256"}}}``.
RECORD = ".dpbandit-files.json"
KINDS = ("run", "job", "single")


class OutputRefusedError(ValueError):
    """A write that would touch a file dpbandit must not (a link, an input, another's file)."""


class DamagedFileError(ValueError):
    """A file read back does not match the record written with it (changed, truncated, or not dpbandit's)."""


class UnverifiedFileWarning(UserWarning):
    """A file was read from a folder that has no record (written by dpbandit <= 0.1.0): it cannot be verified."""


# -- output ---------------------------------------------------------------------------------------------------------


def write_atomic(path: str | Path, write: Callable[[Path], Any], *, kind: str = "run", overwrite: bool = False,
                 inputs: Iterable[str | Path] = ()) -> Path:
    """Write ``path`` atomically with the module's guarantees: ``write(tmp_path)`` fills a temporary file that is then
    renamed onto ``path``. ``kind``: ``"run"`` (a run folder's file, recorded), ``"job"`` (a file under ``jobs/``)
    or ``"single"`` (a user-named output: an existing file is replaced only with ``overwrite=True``). Returns
    ``path``; :class:`OutputRefusedError` (before anything is written) when the target is not dpbandit's to write."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    path = Path(path)
    check_output(path, kind, overwrite, inputs)
    path.parent.mkdir(parents=True, exist_ok=True)
    check_output(path, kind, overwrite, inputs)  # the folder may have been created as (or through) a link
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        os.chmod(tmp, 0o666 & ~_umask())
        write(Path(tmp))
        if kind == "run":
            data = Path(tmp).read_bytes()
            _record(path, {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()})
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_json_atomic(path: str | Path, data: Any, **options: Any) -> Path:
    """Write strict JSON through :func:`write_atomic` (same ``options``): infinite and NaN floats, also inside numpy
    scalars and arrays, become the strings "inf", "-inf", "nan"; numpy values become Python numbers and lists,
    paths strings."""
    text = json.dumps(_strict(data), indent=2, default=_json_default, allow_nan=False)
    return write_atomic(path, lambda p: p.write_text(text + "\n", encoding="utf-8"), **options)


def save_figure(fig: Any, path: str | Path, **options: Any) -> Path:
    """Write a matplotlib figure through :func:`write_atomic` (same ``options``) with a tight bounding box, close it
    and return the path written. The format follows the suffix (``.png``, ``.svg``, ``.pdf``, any of matplotlib's);
    a path without a suffix gets ``.png`` appended (the returned path says so), another suffix is refused."""
    import matplotlib.pyplot as plt

    path = Path(path)
    suffix = path.suffix.lower().lstrip(".")
    formats = fig.canvas.get_supported_filetypes()
    if not suffix:
        path, suffix = path.with_name(path.name + ".png"), "png"
    elif suffix not in formats:
        plt.close(fig)
        raise OutputRefusedError(f"{str(path)!r} is not an image file name: a figure's path ends in one of "
                                 f"{', '.join('.' + f for f in ('png', 'pdf', 'svg') if f in formats)} (or has no "
                                 "suffix: .png is added)")
    try:
        return write_atomic(path, lambda p: fig.savefig(p, format=suffix, dpi=120, bbox_inches="tight"), **options)
    finally:
        plt.close(fig)


def check_output(path: str | Path, kind: str = "run", overwrite: bool = False,
                 inputs: Iterable[str | Path] = ()) -> None:
    """:class:`OutputRefusedError` when :func:`write_atomic` would refuse ``path`` (same arguments): a command calls it
    before any work so that a refused output costs nothing."""
    path = Path(path)
    if path.is_symlink():
        raise OutputRefusedError(f"{str(path)!r} is a symbolic link: dpbandit never writes through or replaces a link; "
                                 "remove it or choose another path")
    if kind != "single" and path.parent.is_symlink():
        raise OutputRefusedError(f"the folder {str(path.parent)!r} is a link to {str(path.parent.resolve())!r}: "
                                 "dpbandit writes a run's files only into the run's own folder")
    if not path.exists():
        return
    if path.is_dir():
        raise OutputRefusedError(f"{str(path)!r} is a folder, not a file: choose a file path")
    for source in inputs:
        try:
            same = os.path.samefile(path, source)
        except OSError:
            same = False
        if same:
            raise OutputRefusedError(f"{str(path)!r} is an input of this command: dpbandit never overwrites its input; "
                                     "choose another output path")
    if kind == "single" and not overwrite:
        raise OutputRefusedError(f"{str(path)!r} exists: pass --overwrite to replace it, or choose another path")
    if kind == "run" and not _owned(path):
        raise OutputRefusedError(f"{str(path)!r} exists and is not a file dpbandit wrote (or it was changed since); it "
                                 "is left untouched: move it away, or choose another name or out folder")


def _owned(path: Path) -> bool:
    """Whether ``path`` (a file of a run folder) is dpbandit's to replace: listed in the folder's record and exactly
    as dpbandit wrote it (a file changed since, by a user or a truncation, is theirs to keep); an unlisted file only
    in a folder of dpbandit <= 0.1.0 (:func:`_older`), beside its manifest."""
    record = _read_record(path.parent)
    entry = record["files"].get(path.name) if record else None
    if entry is not None:
        return _matches(path.read_bytes(), entry)
    return _older(path.parent, record) and path.name != RECORD


def _older(folder: Path, record: dict | None) -> bool:
    """A run folder written by dpbandit <= 0.1.0 (a manifest and no record when the first record was made): its
    unlisted files are dpbandit's, unverified."""
    return (folder / "manifest.json").is_file() and (record is None or bool(record.get("older")))


def _matches(data: bytes, entry: dict) -> bool:
    return len(data) == entry["bytes"] and hashlib.sha256(data).hexdigest() == entry["sha256"]


def recorded_files(folder: str | Path) -> dict[str, dict] | None:
    """The folder's record: name -> {"bytes", "sha256"} of each file dpbandit wrote there; None without a record;
    :class:`DamagedFileError` for a record that cannot be read."""
    record = _read_record(Path(folder))
    return None if record is None else record["files"]


def _read_record(folder: Path) -> dict | None:
    path = folder / RECORD
    if not path.is_file() or path.is_symlink():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        files = data["files"]
        if data.get("format") != 1 or not isinstance(files, dict) or not all(
                isinstance(v, dict) and isinstance(v.get("sha256"), str) and isinstance(v.get("bytes"), int)
                for v in files.values()):
            raise ValueError("unexpected layout")
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        raise DamagedFileError(f"{str(path)!r} (dpbandit's record of the files of this folder) cannot be read ({exc}); "
                               "the folder is left untouched: move it away or rerun under another name") from None
    return data


def _record(path: Path, entry: dict) -> None:
    record = _read_record(path.parent) or {"format": 1, "files": {}, "older": _older(path.parent, None)}
    record["files"][path.name] = entry
    text = json.dumps(record, indent=1, sort_keys=True) + "\n"
    target = path.parent / RECORD
    if target.is_symlink():
        raise OutputRefusedError(f"{str(target)!r} is a symbolic link: dpbandit never writes through a link")
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{RECORD}.", suffix=".tmp")
    os.close(fd)
    try:
        os.chmod(tmp, 0o666 & ~_umask())
        Path(tmp).write_text(text, encoding="utf-8")
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    """The process's umask (read from /proc without changing it where possible)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # pragma: no cover - platforms without /proc
    os.umask(mask)
    return mask


def _strict(obj: Any) -> Any:
    if isinstance(obj, float) and not np.isfinite(obj):
        return "nan" if np.isnan(obj) else ("inf" if obj > 0 else "-inf")
    if isinstance(obj, dict):
        return {k: _strict(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_strict(v) for v in obj]
    if isinstance(obj, (np.generic, np.ndarray)):
        return _strict(obj.tolist() if isinstance(obj, np.ndarray) else obj.item())
    return obj


def _json_default(obj: Any) -> Any:  # numpy values were converted by _strict
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


# -- input ----------------------------------------------------------------------------------------------------------


def read_verified(path: str | Path) -> bytes:
    """The bytes of a file dpbandit wrote, checked against its folder's record: :class:`DamagedFileError` (naming the
    file) when it differs from what was written or the record does not list it; in a folder without a record, the
    bytes with an :class:`UnverifiedFileWarning`. ``ValueError`` naming the file when it is missing or a link."""
    path = Path(path)
    if path.is_symlink() or not path.is_file():
        raise ValueError(f"{str(path)!r} is missing" + (" (it is a link)" if path.is_symlink() else "")
                         + ": pass a folder written by a dpbandit command")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise OSError(exc.errno, f"cannot read {str(path)!r}: {exc.strerror}") from None
    record = _read_record(path.parent)
    entry = record["files"].get(path.name) if record else None
    if entry is None and _older(path.parent, record):
        warnings.warn(f"{str(path)!r} cannot be verified (written by dpbandit <= 0.1.0, before {RECORD})",
                      UnverifiedFileWarning, stacklevel=2)
        return data
    if entry is None:
        raise DamagedFileError(f"{str(path)!r} was not written by dpbandit (its folder's record does not list it); "
                               "it is not read")
    if not _matches(data, entry):
        raise DamagedFileError(f"{str(path)!r} is damaged: its {len(data)} bytes do not match the {entry['bytes']} "
                               "bytes dpbandit wrote (changed, truncated or cut since); move it away and rerun the "
                               "command that made it to rebuild it (a run resumes from its verified jobs/)")
    return data


def read_table(path: str | Path) -> pd.DataFrame:
    """A verified table (:func:`read_verified`): ``.parquet`` or CSV by suffix; floats read back exactly."""
    path = Path(path)
    data = read_verified(path)
    try:
        if path.suffix == ".parquet":
            try:
                return pd.read_parquet(io.BytesIO(data))
            except ImportError:
                raise ValueError("reading parquet needs pyarrow: pip install 'dpbandit[parquet]'") from None
        return pd.read_csv(io.BytesIO(data), **_EXACT_CSV)
    except (ValueError, pd.errors.ParserError, OSError) as exc:
        if isinstance(exc, ValueError) and "pyarrow" in str(exc):
            raise
        raise DamagedFileError(f"{str(path)!r} cannot be read as a table ({' '.join(str(exc).split())})") from None


#: pandas >= 3 parses floats round-trip by default (and deprecates the option); older pandas needs it.
_EXACT_CSV = {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}

#: Manifest keys with the JSON type they must have when present.
_MANIFEST_TYPES = {"status": str, "kind": str, "config": dict, "config_hash": str, "files": dict, "privacy": dict,
                   "versions": dict, "started": str, "finished": str}


def read_manifest(folder: str | Path, *, required: bool = True) -> dict | None:
    """The ``manifest.json`` of a run folder, verified (:func:`read_verified`) and schema-checked: a JSON object whose
    known keys have their types. ``ValueError`` naming the file otherwise; None for a folder without one when not ``required``."""
    path = Path(folder) / "manifest.json"
    if not path.exists() and not path.is_symlink():
        if required:
            raise ValueError(f"{str(Path(folder))!r} is not a dpbandit run directory (no manifest.json); pass a folder "
                             "printed by a dpbandit command")
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnverifiedFileWarning)  # the manifest of an older run: its schema is checked
        data = read_verified(path)
    try:
        manifest = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"{str(path)!r} is not valid JSON ({exc}); this folder is left untouched") from None
    if not isinstance(manifest, dict):
        raise ValueError(f"{str(path)!r} is not a dpbandit manifest (a JSON {type(manifest).__name__}, not an object); "
                         "this folder is left untouched")
    for key, kind in _MANIFEST_TYPES.items():
        if key in manifest and not isinstance(manifest[key], kind):
            raise ValueError(f"{str(path)!r} is not a dpbandit manifest: {key!r} must be a JSON "
                             f"{'object' if kind is dict else 'string'}, got {type(manifest[key]).__name__}")
    for key, name in manifest.get("files", {}).items():
        if not isinstance(name, str):
            raise ValueError(f"{str(path)!r} is not a dpbandit manifest: files[{key!r}] must be a string, got "
                             f"{type(name).__name__}")
    return manifest


def run_file(folder: str | Path, manifest: dict, key: str, default: str) -> Path:
    """The path of the file a manifest lists under ``files[key]`` (``default`` when absent): ``ValueError`` naming
    the manifest when it names anything but a plain file of the folder."""
    name = manifest.get("files", {}).get(key, default)
    if name in ("", ".", "..") or "/" in name or "\\" in name or "\0" in name:
        raise ValueError(f"{str(Path(folder) / 'manifest.json')!r} is not a dpbandit manifest: files[{key!r}] must "
                         f"name a file of the folder, got {name!r}")
    return Path(folder) / name
