"""The output and input layers (dpbandit/files.py) and the issue-24 cases they close, each through the command a user
would type: a command's own input is never overwritten, no file is written through a link, files are readable by
collaborators, a damaged results table is refused naming it, every run format is read, a malformed manifest is one
line."""

from __future__ import annotations

import hashlib
import json
import os
import resource
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpbandit
from dpbandit.experiment.cli import main
from dpbandit.files import (
    RECORD,
    DamagedFileError,
    OutputRefusedError,
    UnverifiedFileWarning,
    read_manifest,
    read_table,
    read_verified,
    write_atomic,
    write_json_atomic,
)
from dpbandit.offline import LoggedData
from tests.one_line import one_line_error

TOML = """name = "tiny"
seeds = 2
checkpoints = 5
[env]
id = "dpbandit/SparseLinear-v0"
horizon = 60
[[agents]]
type = "random"
[[agents]]
type = "greedy"
"""


def _digest(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.fixture
def run(tmp_path, capsys):
    config = tmp_path / "tiny.toml"
    config.write_text(TOML)
    argv = ["run", "--config", str(config), "--out", str(tmp_path / "runs"), "--no-progress"]
    assert main(argv) == 0
    capsys.readouterr()
    return tmp_path / "runs" / "tiny", argv


def _log(tmp_path, name="log.csv"):
    rng = np.random.default_rng(0)
    n, k = 200, 3
    data = LoggedData(context=rng.normal(size=(n, 4)), action=rng.integers(0, k, n), reward=rng.random(n),
                      pscore=np.full(n, 1 / k), n_actions=k)
    return data.write(tmp_path / name)


# -- the layer ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_written_files_follow_the_umask(tmp_path, mask):
    old = os.umask(mask)
    try:
        for kind in ("run", "job", "single"):
            path = write_atomic(tmp_path / kind / "f.csv", lambda p: p.write_text("a\n"), kind=kind)
            assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask, kind
    finally:
        os.umask(old)


def test_links_inputs_and_other_files_are_never_written(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("precious")
    folder = tmp_path / "run"
    write_atomic(folder / "results.csv", lambda p: p.write_text("ours\n"))
    (folder / "regret.png").symlink_to(outside)
    for kind in ("run", "job", "single"):
        with pytest.raises(OutputRefusedError, match="is a symbolic link"):
            write_atomic(folder / "regret.png", lambda p: p.write_text("x"), kind=kind, overwrite=True)
    assert outside.read_text() == "precious" and (folder / "regret.png").is_symlink()

    mine = tmp_path / "mine.csv"
    mine.write_text("user data\n")
    with pytest.raises(OutputRefusedError, match="exists: pass --overwrite"):
        write_atomic(mine, lambda p: p.write_text("x"), kind="single")
    with pytest.raises(OutputRefusedError, match="is an input of this command"):
        write_atomic(mine, lambda p: p.write_text("x"), kind="single", overwrite=True, inputs=[str(mine)])
    assert mine.read_text() == "user data\n"
    write_atomic(mine, lambda p: p.write_text("replaced\n"), kind="single", overwrite=True)
    assert mine.read_text() == "replaced\n"

    (folder / "notes.txt").write_text("a user's file in a run folder")
    with pytest.raises(OutputRefusedError, match="not a file dpbandit wrote"):
        write_atomic(folder / "notes.txt", lambda p: p.write_text("x"))
    write_atomic(folder / "results.csv", lambda p: p.write_text("ours again\n"))  # unchanged since written: ours
    (folder / "results.csv").write_text("edited by the user\n")
    with pytest.raises(OutputRefusedError, match="or it was changed since"):
        write_atomic(folder / "results.csv", lambda p: p.write_text("x"))
    assert (folder / "results.csv").read_text() == "edited by the user\n"
    assert (folder / "notes.txt").read_text() == "a user's file in a run folder"

    linked = tmp_path / "linked-run"
    linked.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (tmp_path / "elsewhere").mkdir()
    with pytest.raises(OutputRefusedError, match="is a link to"):
        write_atomic(linked / "results.csv", lambda p: p.write_text("x"))
    assert not any((tmp_path / "elsewhere").iterdir())


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = write_json_atomic(tmp_path / "run" / "manifest.json", {"status": "complete"})
    before = path.read_bytes()

    def broken(p):
        p.write_text("half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        write_atomic(path, broken)
    assert path.read_bytes() == before and read_verified(path) == before
    assert sorted(p.name for p in path.parent.iterdir()) == [RECORD, "manifest.json"]


def test_a_file_size_limit_fails_cleanly_without_a_partial_file(tmp_path):
    path = tmp_path / "run" / "results.csv"
    write_atomic(path, lambda p: p.write_text("small\n"))
    code = ("import sys; from dpbandit.files import write_atomic; "
            f"write_atomic({str(path)!r}, lambda p: p.write_bytes(b'x' * 100_000))")
    limit = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))  # noqa: E731
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, preexec_fn=limit,
                          timeout=300)
    assert proc.returncode != 0 and "File too large" in proc.stderr
    assert path.read_text() == "small\n" and read_verified(path) == b"small\n"
    assert sorted(p.name for p in path.parent.iterdir()) == [RECORD, "results.csv"]


def test_reads_are_verified_against_the_record(tmp_path):
    path = write_atomic(tmp_path / "run" / "results.csv", lambda p: p.write_text("t,x\n1,0.5\n2,0.25\n"))
    assert read_table(path)["x"].tolist() == [0.5, 0.25]
    path.write_text("t,x\n1,0.5\n")  # truncated
    with pytest.raises(DamagedFileError, match=r"results.csv' is damaged: its 10 bytes do not match the 17 bytes"):
        read_table(path)
    (path.parent / "other.csv").write_text("a\n1\n")
    with pytest.raises(DamagedFileError, match="was not written by dpbandit"):
        read_table(path.parent / "other.csv")
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    (legacy / "manifest.json").write_text("{}")
    (legacy / "results.csv").write_text("a\n1\n")
    with pytest.warns(UnverifiedFileWarning, match="cannot be verified"):
        assert read_table(legacy / "results.csv")["a"].tolist() == [1]


@pytest.mark.parametrize("text, needle", [("[1, 2]", "a JSON list, not an object"), ("{", "is not valid JSON"),
                                          ('{"config": []}', "'config' must be a JSON object"),
                                          ('{"files": {"results": 3}}', "files['results'] must be a string")])
def test_manifests_are_schema_checked(tmp_path, text, needle):
    (tmp_path / "manifest.json").write_text(text)
    with pytest.raises(ValueError, match=needle.replace("[", r"\[").replace("]", r"\]")):
        read_manifest(tmp_path)


# -- the cases, as a user meets them ------------------------------------------------------------------------


def test_replay_never_overwrites_its_log(tmp_path, capsys):
    log = _log(tmp_path)
    before = _digest(log)
    assert main(["replay", str(log), "--agent", "random", "--seeds", "1", "--out", str(log)]) == 2
    one_line_error(capsys.readouterr().err, "is an input of this command")
    assert _digest(log) == before
    assert main(["replay", str(log), "--agent", "random", "--seeds", "1", "--out", str(log), "--overwrite"]) == 2
    one_line_error(capsys.readouterr().err, "is an input of this command")
    assert _digest(log) == before
    out = tmp_path / "table.csv"
    assert main(["replay", str(log), "--agent", "random", "--seeds", "1", "--out", str(out)]) == 0
    assert main(["replay", str(log), "--agent", "random", "--seeds", "1", "--out", str(out)]) == 2
    one_line_error(capsys.readouterr().err, "exists: pass --overwrite")


def test_a_figure_link_in_a_run_folder_is_never_written_through(run, tmp_path, capsys):
    run_dir, argv = run
    user = tmp_path / "my-figure.png"
    user.write_bytes(b"a user's figure")
    (run_dir / "regret.png").unlink()
    (run_dir / "regret.png").symlink_to(user)
    assert main(argv) == 2
    one_line_error(capsys.readouterr().err, "regret.png", "is a symbolic link")
    assert main(["plot", str(run_dir)]) == 2
    one_line_error(capsys.readouterr().err, "is a symbolic link")
    assert user.read_bytes() == b"a user's figure"


def test_run_files_are_readable_by_collaborators(run):
    run_dir, _ = run
    files = [p for p in run_dir.rglob("*") if p.is_file() and p.name != ".dpbandit.lock"]
    assert {p.name for p in files} >= {"results.csv", "summary.csv", "manifest.json", "regret.png", RECORD}
    mask = os.umask(0)
    os.umask(mask)
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask, path


def test_a_truncated_results_table_is_refused_by_load_run_plot_and_compare(run, capsys):
    run_dir, argv = run
    rows = len(dpbandit.load_run(run_dir).results)
    table = run_dir / "results.csv"
    table.write_bytes(table.read_bytes()[: len(table.read_bytes()) // 2])
    with pytest.raises(ValueError, match="results.csv' is damaged"):
        dpbandit.load_run(run_dir)
    for command in (["plot", str(run_dir)], ["compare", str(run_dir), "--baseline", "random"]):
        assert main(command) == 2
        one_line_error(capsys.readouterr().err, "results.csv' is damaged", "move it away")
    assert main(argv) == 2  # the rerun does not replace the changed file either
    one_line_error(capsys.readouterr().err, "results.csv", "changed since")
    table.unlink()
    assert main(argv) == 0  # moved away: the rerun rebuilds it from the verified jobs
    assert len(dpbandit.load_run(run_dir).results) == rows


def test_plot_and_compare_read_a_parquet_run(tmp_path, capsys):
    pytest.importorskip("pyarrow")
    config = tmp_path / "tiny.toml"
    config.write_text(TOML)
    assert main(["run", "--config", str(config), "--out", str(tmp_path), "--format", "parquet", "--no-progress"]) == 0
    run_dir = tmp_path / "tiny"
    assert (run_dir / "results.parquet").is_file() and not (run_dir / "results.csv").exists()
    capsys.readouterr()
    assert main(["plot", str(run_dir)]) == 0
    assert str(run_dir / "regret.png") in capsys.readouterr().out
    assert main(["compare", str(run_dir), "--baseline", "random"]) == 0
    assert "greedy" in capsys.readouterr().out


def test_a_manifest_that_is_a_list_is_one_line_everywhere(run, capsys):
    run_dir, argv = run
    (run_dir / "manifest.json").unlink()
    (run_dir / "manifest.json").write_text("[1, 2]")
    for command in (["plot", str(run_dir)], ["compare", str(run_dir)], argv):
        assert main(command) == 2
        one_line_error(capsys.readouterr().err, "manifest.json")
    with pytest.raises(ValueError, match="manifest.json"):
        dpbandit.load_run(run_dir)


def test_plot_output_prints_the_path_it_wrote_and_never_a_run_file(run, tmp_path, capsys):
    run_dir, _ = run
    assert main(["plot", str(run_dir), "--output", str(tmp_path / "fig")]) == 0
    assert capsys.readouterr().out.strip().endswith(str(tmp_path / "fig.png"))
    assert (tmp_path / "fig.png").is_file()
    assert main(["plot", str(run_dir), "--output", str(tmp_path / "fig.png")]) == 2
    one_line_error(capsys.readouterr().err, "exists: pass --overwrite")
    assert main(["plot", str(run_dir), "--output", str(tmp_path / "fig.png"), "--overwrite"]) == 0
    capsys.readouterr()
    before = {p.name: _digest(p) for p in run_dir.iterdir() if p.is_file()}
    assert main(["plot", str(run_dir), "--output", str(run_dir / "regret.png"), "--overwrite"]) == 2
    one_line_error(capsys.readouterr().err, "is an input of this command")
    assert main(["plot", str(run_dir), "--output", str(tmp_path / "table.csv")]) == 2  # never a file not named
    one_line_error(capsys.readouterr().err, "is not an image file name")
    assert not list(tmp_path.glob("table.csv*"))
    assert all(_digest(run_dir / name) == digest for name, digest in before.items())
    json.loads((run_dir / "manifest.json").read_text())
    assert pd.read_csv(run_dir / "summary.csv").shape[0] == 2


def test_a_run_of_an_older_version_stays_readable_after_a_new_write(run, capsys):
    """A folder written before records existed (simulated: its record removed): plotting it makes the first record,
    and its other files are still read (unverified, with a warning), never refused as not dpbandit's."""
    run_dir, _ = run
    (run_dir / RECORD).unlink()
    with pytest.warns(UnverifiedFileWarning):
        rows = len(dpbandit.load_run(run_dir).results)
    assert main(["plot", str(run_dir)]) == 0
    assert set(json.loads((run_dir / RECORD).read_text())["files"]) == {"regret.png"}
    with pytest.warns(UnverifiedFileWarning, match="results.csv"):
        assert len(dpbandit.load_run(run_dir).results) == rows
    (run_dir / "regret.png").write_bytes(b"changed by the user")
    capsys.readouterr()
    assert main(["plot", str(run_dir)]) == 2  # a listed file changed since: the user's now
    last = capsys.readouterr().err.strip().splitlines()[-1]  # after the unverified-read warnings
    assert "regret.png' exists and is not a file dpbandit wrote (or it was changed since)" in last
