"""The safety matrix (issue 24): every writing subcommand x every way an output could destroy a user's data.

Cases: the output path is a symbolic link out of the folder, the output equals an input of the command, the output is
an existing file of the user's, the output folder is read-only, the file-size limit (``ulimit -f``) is hit. In every
case the command either refuses or fails in exactly one line on stderr (exit 2), never a traceback, and no file
outside what the command may write is created, changed or deleted; no temporary file is left behind.

The subcommands are enumerated from the CLI parser: a new subcommand fails :func:`test_every_subcommand_is_covered`
until it is listed here as a writer (with its cases) or as a command that writes nothing.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dpbandit.experiment.cli import build_parser, main
from tests.one_line import one_line_error
from dpbandit.offline import LoggedData

TOML = """name = "tiny"
seeds = 1
checkpoints = 5
[env]
id = "dpbandit/SparseLinear-v0"
horizon = 40
[[agents]]
type = "random"
"""

#: Commands that never write a file (checked: they take no output option).
NON_WRITERS = {"envs", "agents", "compare"}

#: Writing commands: argv given (out folder, inputs folder) and the run folder they write in ``out``.
WRITERS = {
    "run": (lambda out, ins: ["run", "--config", str(ins / "tiny.toml"), "--out", str(out), "--no-progress"], "tiny"),
    "plot": (lambda out, ins: ["plot", str(out / "tiny")], "tiny"),
    "replay": (lambda out, ins: ["replay", str(ins / "log.csv"), "--agent", "random", "--seeds", "1",
                                 "--out", str(out / "table.csv")], None),
    "frontier": (lambda out, ins: ["frontier", "--quick", "--agents", "dp_ucb", "--seeds", "2", "--out", str(out),
                                   "--no-progress"], "frontier-quick"),
    "oco": (lambda out, ins: ["oco", "--quick", "--out", str(out), "--no-progress"], "oco-quick"),
    "reproduce table-5.1": (lambda out, ins: ["reproduce", "table-5.1", "--quick", "--out", str(out),
                                              "--no-progress"], "table-5.1-quick"),
    "reproduce figure-5.1": (lambda out, ins: ["reproduce", "figure-5.1", "--quick", "--out", str(out),
                                               "--no-progress"], "figure-5.1-quick"),
    "reproduce fliphat": (lambda out, ins: ["reproduce", "fliphat", "--quick", "--out", str(out), "--no-progress"],
                          "fliphat-quick"),
    "notebooks": (lambda out, ins: ["notebooks", "--copy", str(out)], None),
    "bench": (lambda out, ins: ["bench", "--tiny", "--n-jobs", "1",
                                "--out", str(out), "--no-progress"], "bench-tiny"),
}
#: The file of each writer's output that the cases plant (default: results.csv).
PLANTED = {"replay": "table.csv", "plot": "regret.png", "notebooks": "CITATION.cff"}

CASES = ("link", "input", "user_file", "read_only", "size_limit")


def _subcommands() -> set[str]:
    """Every subcommand of the CLI parser; ``reproduce`` as one entry per target."""
    from dpbandit.experiment.reproduce import REPRODUCTIONS

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    names = set(sub.choices) - {"reproduce"}
    return names | {f"reproduce {target}" for target in REPRODUCTIONS}


def test_every_subcommand_is_covered():
    assert _subcommands() == set(WRITERS) | NON_WRITERS


def _snapshot(root: Path) -> dict:
    """Every path under ``root`` (links not followed) with its bytes (files) or target (links) and mode."""
    state = {}
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            state[path] = ("link", os.readlink(path))
        elif path.is_file():
            state[path] = ("file", path.read_bytes(), path.stat().st_mode)
        else:
            state[path] = ("dir", path.stat().st_mode)
    return state


@pytest.fixture(scope="module")
def made_run(tmp_path_factory):
    """A finished tiny run (the input of ``plot``), made once."""
    base = tmp_path_factory.mktemp("made")
    (base / "tiny.toml").write_text(TOML)
    assert main(["run", "--config", str(base / "tiny.toml"), "--out", str(base / "runs"), "--no-progress"]) == 0
    return base / "runs" / "tiny"


def _setup(tmp_path: Path, command: str, made_run: Path) -> tuple[Path, Path, Path]:
    """(out, inputs, canary): the canary folder holds a user's files; nothing may touch them."""
    out, ins, canary = tmp_path / "out", tmp_path / "inputs", tmp_path / "canary"
    for folder in (out, ins, canary):
        folder.mkdir()
    (canary / "precious.txt").write_text("a user's file")
    (canary / "figure.png").write_bytes(b"a user's figure")
    (ins / "tiny.toml").write_text(TOML)
    rng = np.random.default_rng(0)
    LoggedData(context=rng.normal(size=(60, 3)), action=rng.integers(0, 2, 60), reward=rng.random(60),
               pscore=np.full(60, 0.5), n_actions=2).write(ins / "log.csv")
    if command == "plot":
        shutil.copytree(made_run, out / "tiny", symlinks=True)
    return out, ins, canary


def _plant(case: str, command: str, out: Path, ins: Path, canary: Path) -> list[str]:
    """Prepare ``case``; returns extra argv."""
    argv_out, folder = WRITERS[command]
    target_folder = out / folder if folder else out
    target_folder.mkdir(exist_ok=True)
    name = PLANTED.get(command, "results.csv")
    if case == "link":
        (target_folder / name).unlink(missing_ok=True)
        (target_folder / name).symlink_to(canary / ("figure.png" if name.endswith(".png") else "precious.txt"))
    elif case == "user_file":
        (target_folder / name).unlink(missing_ok=True)
        (target_folder / name).write_text("a user's table\n")
    elif case == "input":
        if command == "replay":
            return ["--out", str(ins / "log.csv")]  # the last --out wins: the log itself
        if command == "plot":
            return ["--output", str(out / "tiny" / "regret.png"), "--overwrite"]  # a file of the run it reads
        # commands whose inputs are flags: an input file of the user's placed where the run writes
        shutil.copy(ins / "tiny.toml", target_folder / name)
    return []


def _readonly(folder: Path) -> list[str] | None:
    """A command prefix that runs with ``folder`` read-only (a read-only bind mount for root, chmod otherwise);
    None where neither is possible."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        return []
    if shutil.which("unshare") is None:
        return None
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if probe.returncode != 0:
        return None
    script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" "$0" && shift && exec "$@"'
    return ["unshare", "-m", "sh", "-c", script, str(folder), "--"]


def _subprocess(argv: list[str], prefix: list[str] = (), limit: int | None = None) -> subprocess.CompletedProcess:
    def preexec():
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([*prefix, sys.executable, "-m", "dpbandit.experiment.cli", *argv], capture_output=True,
                          text=True, env=env, preexec_fn=preexec, timeout=600, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("command", sorted(WRITERS))
def test_no_output_destroys_a_users_file(tmp_path, command, case, made_run, capsys):
    out, ins, canary = _setup(tmp_path, command, made_run)
    argv_out, _ = WRITERS[command]
    argv = argv_out(out, ins) + _plant(case, command, out, ins, canary)
    protected = {root: _snapshot(root) for root in (canary, ins)}
    if case == "input" or case == "user_file":  # the planted files are the user's, inside the output folder
        protected[out] = {p: s for p, s in _snapshot(out).items() if p.name in ("results.csv", *PLANTED.values())}
    if case in ("link", "input", "user_file"):
        code = main(argv)
        err = capsys.readouterr().err
        assert code == 2, err
        one_line_error(err)
    elif case == "read_only":
        prefix = _readonly(out)
        if prefix is None:
            pytest.skip("no way to make a folder read-only for root here (unshare -m not permitted)")
        proc = _subprocess(argv, prefix)
        if os.geteuid() != 0:
            out.chmod(0o755)
        assert proc.returncode == 2, proc.stderr
        one_line_error(proc.stderr)
    else:  # the file-size limit: the first file written is larger than it
        proc = _subprocess(argv, limit=100)
        assert proc.returncode == 2, proc.stderr
        one_line_error(proc.stderr)
        assert "File too large" in proc.stderr
    for root, before in protected.items():
        after = _snapshot(root)
        assert {p: after.get(p) for p in before} == before, f"{command} / {case} changed a file under {root}"
    assert _snapshot(canary) == protected[canary]
    leftovers = [p for p in tmp_path.rglob(".*.tmp")]
    assert not leftovers, leftovers
