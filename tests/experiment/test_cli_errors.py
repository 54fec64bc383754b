"""Every expected failure of the command line is one line on stderr and exit code 2, never a traceback (``--debug``
shows it); sizes that cannot fit are refused before anything is allocated (issue 13, item 5)."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pandas as pd
import pytest

from dpbandit.experiment.cli import main
from dpbandit.experiment.rundir import run_lock
from dpbandit.files import write_atomic

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


def _code(argv):
    """main's exit code; argparse's usage errors (and --help) end with SystemExit, as argparse does."""
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


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
    assert _code([*argv, "--out", str(tmp_path)] if argv[0] != "reproduce" or len(argv) > 2 else argv) == 2
    _one_line_error(capsys, needle)  # argparse's usage errors too: one line, no usage block


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
    table_run = tmp_path / "table"  # tables written through the output layer, as every command writes them
    table = pd.DataFrame({"T": [1000], "d": [5], "p": [1.5], "algo": ["OFW"], "risk": [0.1]})
    write_atomic(table_run / "results.csv", lambda p: table.to_csv(p, index=False))
    _fails(capsys, ["plot", str(table_run)], "holds no regret curves", "has no regret plot")
    oco_run = tmp_path / "oco"
    oco = pd.DataFrame({"stream": "linear", "learner": "pigd", "seed": [0, 0], "t": [1, 2],
                        "cumulative_regret": [0.1, 0.2]})
    write_atomic(oco_run / "results.csv", lambda p: oco.to_csv(p, index=False))
    assert main(["plot", str(oco_run)]) == 0 and (oco_run / "regret.png").stat().st_size > 1000
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "results.csv").write_text("")
    _fails(capsys, ["plot", str(tmp_path / "empty")], "was not written by dpbandit")
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


# -- issue 24, item 6: errors that send the user the right way -------------------------------------------------------

OWN_DATA = """name = "own"
seeds = 1
[env]
id = "dpbandit/{env}"
data = "{data}"
target = "{target}"
horizon = 20
{extra}
[[agents]]
type = "random"
"""


def _own(tmp_path, text, env="Classification-v0", target="label", extra="", name="users.csv"):
    (tmp_path / name).write_text(text)
    path = tmp_path / "own.toml"
    path.write_text(OWN_DATA.format(env=env, data=name, target=target, extra=extra))
    return ["run", "--config", str(path), "--out", str(tmp_path / "runs"), "--no-progress"]


@pytest.mark.parametrize("text,extra,needles", [
    # before: "dpbandit/Classification-v0 needs your data: data='path.csv' ..." although data and target were given
    ("a,b,label\n1,x,0\n2,y,1\n", "", ("feature column 'b' of data file '", "users.csv' must hold numbers; "
                                       "row 0 holds 'x'")),
    ("a,b,label\n", "", ("data file '", "users.csv' holds no rows (only the header line ['a', 'b', 'label'])")),
    # before: "No columns to parse from file"
    ("", "", ("data file '", "users.csv' is empty")),
    # before: "needs your data" (the retry's error); gymnasium's kwargs dump before that
    ("a,label\n1,0\n2,1\n", "colour = 3", ("env 'dpbandit/Classification-v0' has no parameter 'colour'; its "
                                           "parameters: dataset, data, target, X, y, horizon")),
    ("a,label\n1,0\n2,1\n", "standardize = 3", ("standardize must be a bool, got 3",)),
])
def test_own_data_errors_name_the_file_and_the_column(tmp_path, capsys, text, extra, needles):
    line = _fails(capsys, _own(tmp_path, text, extra=extra), *needles)
    assert "needs your data" not in line and "was raised from the environment creator" not in line
    assert not (tmp_path / "runs").exists()  # refused before the run directory


def test_regression_target_that_is_not_a_number(tmp_path, capsys):
    # before: "targets (y / the target column) must be numbers" (no file, no column)
    _fails(capsys, _own(tmp_path, "rooms,price\n3,100\n4,high\n", env="Regression-v0", target="price"),
           "targets (target column 'price' of data file '", "users.csv') must be numbers; row 1 holds 'high'")


def test_a_wrong_environment_keyword_is_one_short_line(tmp_path, capsys):
    # before: "... was raised from the environment creator for dpbandit/SparseLinear-v0 with kwargs ({...})"
    line = _fails(capsys, ["run", "--config", _config(tmp_path, env_extra='colour = "red"'), "--out", str(tmp_path)],
                  "env 'dpbandit/SparseLinear-v0' has no parameter 'colour'; its parameters: n_arms, dim, horizon")
    assert "kwargs" not in line
    line = _fails(capsys, ["run", "--config", _config(tmp_path, env_extra='context_scale = "big"'), "--out",
                           str(tmp_path)], "context_scale")
    assert "kwargs" not in line and len(line) < 200, line


@pytest.mark.parametrize("name,text,needles", [
    # before: "invalid literal for int() with base 10: 'buy'"
    ("log.csv", "x,action,reward\n1,0,1\n2,buy,0\n", ("column 'action' of log file '", "log.csv' must hold "
                                                      "numbers; row 1 holds 'buy'")),
    # before: "could not convert string to float: 'high'"
    ("log.csv", "x,action,reward,pscore\n1,0,1,high\n2,1,0,0.5\n", ("column 'pscore' of log file '",
                                                                   "row 0 holds 'high'")),
    # before: "No columns to parse from file"
    ("log.csv", "", ("log file '", "log.csv' is empty")),
    # before: numpy's "This file contains pickled (object) data. If you trust the file you can load it unsafely ..."
    ("log.npz", "not an archive\n", ("log file '", "log.npz' is not a NumPy .npz archive")),
])
def test_log_file_errors_name_the_file_and_the_column(tmp_path, capsys, name, text, needles):
    (tmp_path / name).write_text(text)
    line = _fails(capsys, ["replay", str(tmp_path / name), "--agent", "random"], *needles)
    assert "allow_pickle" not in line


def test_a_config_that_is_a_folder_says_so(tmp_path, capsys):
    # before: "config file '...' does not exist"
    _fails(capsys, ["run", "--config", str(tmp_path)], f"config file {str(tmp_path)!r} is a folder, not a TOML file")
    _fails(capsys, ["replay", "log.npz", "--agent", "random", "--config", str(tmp_path)], "is a folder")
    (tmp_path / "binary.toml").write_bytes(b"\xff\xfe\x00name")
    _fails(capsys, ["run", "--config", str(tmp_path / "binary.toml")], "binary.toml' is not a TOML file: it is not "
                                                                        "UTF-8 text")


@pytest.mark.parametrize("argv,line", [
    # before: "usage: dpbandit reproduce [-h] ..." then "error: the following arguments are required: target, options"
    (["reproduce"], "dpbandit reproduce: error: name a target; choose one of table-5.1, figure-5.1, fliphat (e.g. "
                    "dpbandit reproduce table-5.1 --quick)"),
    (["reproduce", "--quick"], "dpbandit reproduce: error: name a target before the options (got '--quick'); "
                               "choose one of table-5.1, figure-5.1, fliphat"),
    # argparse's usage errors: before, a usage block and then the error; now the error line alone
    (["run", "--seeds", "x"], "dpbandit run: error: argument --seeds: must be an integer >= 1, got 'x' (see "
                              "dpbandit run --help)"),
    (["nosuch"], "dpbandit: error: argument command: invalid choice: 'nosuch'"),
    (["oco", "--seeds", "1e12"], "dpbandit oco: error: argument --seeds: invalid int value: '1e12'"),
    (["frontier", "--epsilons", "0"], "dpbandit frontier: error: argument --epsilons: must be a number > 0"),
    (["replay"], "dpbandit replay: error: the following arguments are required: log"),
    (["reproduce", "table-5.1", "--dims", "x"], "dpbandit reproduce table-5.1: error: argument --dims: invalid int"),
    (["reproduce", "figure-5.1", "--arms", "3"], "dpbandit reproduce figure-5.1: error: argument --arms: invalid "
                                                 "choice: 3"),
    (["reproduce", "fliphat", "--nope"], "dpbandit reproduce fliphat: error: unrecognized arguments: --nope"),
    # before: the reproduction ran, then "cannot reindex on an axis with duplicate labels"
    (["reproduce", "fliphat", "--arms", "3", "3"], "dpbandit reproduce fliphat: error: argument --arms: values must "
                                                   "not repeat, got 3 3"),
])
def test_usage_errors_are_one_line(capsys, argv, line):
    assert _code(argv) == 2
    assert _one_line_error(capsys).startswith(line)


def test_plot_prints_the_path_it_really_wrote(tmp_path, capsys):
    # before: "--output x" wrote x.png and printed "Plot: x"
    assert main(["run", "--config", _config(tmp_path), "--out", str(tmp_path), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["plot", str(tmp_path / "exp"), "--output", str(tmp_path / "figure")]) == 0
    printed = capsys.readouterr().out.strip().splitlines()
    assert printed == [f"Plot: {tmp_path / 'figure.png'}"] and (tmp_path / "figure.png").stat().st_size > 1000
    assert not (tmp_path / "figure").exists()
