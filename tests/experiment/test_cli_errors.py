"""Every expected failure of the command line is one line on stderr and exit code 2, never a traceback (``--debug``
shows it); sizes that cannot fit are refused before anything is allocated (issue 13, item 5)."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pandas as pd
import pytest

from dpbandit.experiment.cli import main
from dpbandit.experiment.rundir import run_lock

CONFIG = """name = "{name}"
seeds = 1
checkpoints = 5
[env]
id = "{env}"
horizon = 30
{env_extra}
[[agents]]
type = "{agent}"
"""


def _config(tmp_path, name="exp", env="dpbandit/SparseLinear-v0", env_extra="", agent="random"):
    path = tmp_path / f"{name}.toml"
    path.write_text(CONFIG.format(name=name, env=env, env_extra=env_extra, agent=agent))
    return str(path)


def _one_line_error(capsys, *needles):
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert ": error: " in lines[0]
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def _fails(capsys, argv, *needles):
    assert main(argv) == 2
    return _one_line_error(capsys, *needles)


def test_output_folder_that_is_a_file_or_cannot_be_created(tmp_path, capsys):
    config = _config(tmp_path)
    (tmp_path / "a-file").write_text("precious")
    _fails(capsys, ["run", "--config", config, "--out", str(tmp_path / "a-file"), "--no-progress"],
           "cannot create the run directory", "Not a directory")
    assert (tmp_path / "a-file").read_text() == "precious"
    if Path("/proc/self").is_dir():  # not writable even for root
        _fails(capsys, ["run", "--config", config, "--out", "/proc/self/dpbandit-runs", "--no-progress"],
               "cannot create the run directory")
    _fails(capsys, ["oco", "--quick", "--out", str(tmp_path / "a-file"), "--no-progress"], "dpbandit oco: error:")


def test_an_io_error_in_the_middle_of_a_run(tmp_path, capsys):
    config = _config(tmp_path)
    run_dir = tmp_path / "out" / "exp"
    assert main(["run", "--config", config, "--out", str(tmp_path / "out"), "--no-progress", "--seeds", "2"]) == 0
    capsys.readouterr()
    for path in (run_dir / "jobs").iterdir():
        path.unlink()
    (run_dir / "jobs").rmdir()
    (run_dir / "jobs").write_text("not a folder")  # every job write fails
    _fails(capsys, ["run", "--config", config, "--out", str(tmp_path / "out"), "--no-progress", "--seeds", "2"],
           "dpbandit run: error:")


@pytest.mark.parametrize("argv,needle", [
    (["frontier", "--env", "dpbandit/Nope-v0", "--quick", "--no-progress"], "env id 'dpbandit/Nope-v0' cannot be made"),
    (["frontier", "--env", "CartPole-v1", "--quick", "--no-progress"], "not a dpbandit contextual-bandit"),
    (["oco", "--quick", "--problems", "nope", "--no-progress"], "unknown problem"),
    (["oco", "--quick", "--learners", "nope", "--no-progress"], "nope"),
    (["reproduce", "table-5.2"], "invalid choice: 'table-5.2'"),
    (["reproduce", "table-5.1", "--quick", "--ps", "3", "--no-progress"], "ps must be"),
])
def test_unknown_ids_in_every_subcommand(tmp_path, capsys, argv, needle):
    try:
        code = main([*argv, "--out", str(tmp_path)] if argv[0] != "reproduce" or len(argv) > 2 else argv)
    except SystemExit as exc:  # argparse's own usage errors: a "usage:" line, then the error line, exit code 2
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    lines = [line for line in err.strip().splitlines() if not line.startswith("usage:")]
    assert len(lines) == 1 and "Traceback" not in err and needle in lines[0], err


@pytest.mark.parametrize("env,needle", [
    ("dpbandit/Nope-v0", "env id 'dpbandit/Nope-v0' cannot be made"),
    ("NoSuchThing-v3", "env id 'NoSuchThing-v3' cannot be made"),
    ("CartPole-v1", "env id 'CartPole-v1' is not a dpbandit contextual-bandit environment"),
])
def test_unknown_and_foreign_environments_in_toml(tmp_path, capsys, env, needle):
    config = _config(tmp_path, env=env)
    _fails(capsys, ["run", "--config", config, "--out", str(tmp_path), "--no-progress"], needle)
    assert not (tmp_path / "exp").exists()  # refused before the run directory


def test_unknown_agent_in_toml(tmp_path, capsys):
    _fails(capsys, ["run", "--config", _config(tmp_path, agent="nope"), "--out", str(tmp_path)], "unknown agent 'nope'")


def _peak_bytes(argv):
    tracemalloc.start()
    try:
        code = main(argv)
        return code, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("argv_of,needle", [
    (lambda tmp: ["run", "--config", _config(tmp, env_extra="dim = 1000000000"), "--out", str(tmp)],
     "environment GLMBanditEnv(n_arms=5, dim=1000000000, horizon=30) would need about 240 GB"),
    (lambda tmp: ["run", "--config", _config(tmp, env_extra="dim = 100000", agent="linucb"), "--out", str(tmp)],
     "agent 'linucb' (K=5, d=100000, T=30) would need about 800 GB"),
    (lambda tmp: ["run", "--config", _config(tmp, env_extra="dim = 30000", agent="dp_ucb"), "--out", str(tmp)],
     "agent 'dp_ucb' (K=5, d=30000, T=30) would need about"),
    (lambda tmp: ["oco", "--quick", "--dim", "1000000000", "--out", str(tmp), "--no-progress"],
     "regression stream (dim=1000000000, horizon=1000, test_size=1) would need about 16 TB"),
    (lambda tmp: ["reproduce", "table-5.1", "--quick", "--dims", "1000000000", "--out", str(tmp), "--no-progress"],
     "regression stream (dim=1000000000, horizon=1000, test_size=1000) would need about 32 TB"),
])
def test_sizes_that_cannot_fit_are_refused_before_allocating(tmp_path, capsys, argv_of, needle):
    code, peak = _peak_bytes(argv_of(tmp_path))
    assert code == 2
    line = _one_line_error(capsys, needle, "of this machine's")
    assert peak < 64e6, f"allocated {peak / 1e6:.0f} MB before refusing: {line}"


def test_plot_on_every_run_kind_is_a_plot_or_one_line(tmp_path, capsys):
    table_run = tmp_path / "table"
    table_run.mkdir()
    pd.DataFrame({"T": [1000], "d": [5], "p": [1.5], "algo": ["OFW"], "risk": [0.1]}).to_csv(
        table_run / "results.csv", index=False)
    _fails(capsys, ["plot", str(table_run)], "holds no regret curves", "has no regret plot")
    oco_run = tmp_path / "oco"
    oco_run.mkdir()
    pd.DataFrame({"stream": "linear", "learner": "pigd", "seed": [0, 0], "t": [1, 2],
                  "cumulative_regret": [0.1, 0.2]}).to_csv(oco_run / "results.csv", index=False)
    assert main(["plot", str(oco_run)]) == 0 and (oco_run / "regret.png").stat().st_size > 1000
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "results.csv").write_text("")
    _fails(capsys, ["plot", str(tmp_path / "empty")], "dpbandit plot: error:")
    _fails(capsys, ["plot", str(tmp_path / "nowhere")], "has no results.csv")


def test_a_run_directory_in_use_is_one_line(tmp_path, capsys):
    config = _config(tmp_path)
    (tmp_path / "exp").mkdir()
    with run_lock(tmp_path / "exp"):
        _fails(capsys, ["run", "--config", config, "--out", str(tmp_path), "--no-progress"],
               "is in use by another dpbandit process")


def test_warnings_are_one_line(tmp_path, capsys):
    config = _config(tmp_path)
    args = ["run", "--config", config, "--out", str(tmp_path), "--no-progress"]
    assert main(args) == 0
    job = next((tmp_path / "exp" / "jobs").glob("*.csv"))
    job.write_text(job.read_text()[:-5])
    capsys.readouterr()
    assert main(args) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("dpbandit run: warning: job file") and job.name in err[0], err


def test_debug_shows_the_traceback(tmp_path):
    config = _config(tmp_path, env="CartPole-v1")
    with pytest.raises(ValueError, match="not a dpbandit contextual-bandit environment"):
        main(["--debug", "run", "--config", config, "--out", str(tmp_path)])
    with pytest.raises(ValueError, match="unknown problem"):
        main(["oco", "--quick", "--problems", "nope", "--debug", "--out", str(tmp_path)])
    assert main(["run", "--config", config, "--out", str(tmp_path)]) == 2  # debug does not stick
