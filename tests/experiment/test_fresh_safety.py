"""Users' data is never deleted: run names are single folder names, and ``--fresh`` discards only a dpbandit run's
own files inside ``<out>/<name>`` (issue 13, item 1)."""

from __future__ import annotations

import pytest

from dpbandit.experiment.cli import main
from dpbandit.experiment.config import ExperimentConfig, load_config
from dpbandit.experiment.oco_config import OCOConfig, default_learners
from dpbandit.experiment.rundir import prepare_run_dir, write_json_atomic
from dpbandit.validation import check_run_name

BAD_NAMES = [".", "..", "", "a/b", "/tmp/x", "../up", "a\\b", " x", "x\0", "~", "-rf", "*", "run\nname", "a" * 101]

CONFIG = """name = "{name}"
seeds = 1
checkpoints = 5
[env]
id = "dpbandit/SparseLinear-v0"
horizon = 30
[[agents]]
type = "random"
"""


def _plant(tmp_path):
    """An output folder with a user's file next to where runs go, and the user's own folder 'notes' inside."""
    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "beside-out.txt").write_text("precious")
    (out / "next-to-run.txt").write_text("precious")
    return out


def _intact(tmp_path, out):
    assert (tmp_path / "beside-out.txt").read_text() == "precious"
    assert (out / "next-to-run.txt").read_text() == "precious"


@pytest.mark.parametrize("name", BAD_NAMES)
def test_run_names_are_single_folder_names(name):
    with pytest.raises(ValueError, match="must be a plain folder name"):
        check_run_name(name)
    with pytest.raises(ValueError, match="name must be a plain folder name"):
        ExperimentConfig(env_id="dpbandit/SparseLinear-v0", agents=("random",), name=name)
    with pytest.raises(ValueError, match="name must be a plain folder name"):
        OCOConfig(learners=default_learners(["pigd"]), name=name)
    with pytest.raises(ValueError, match="must be a plain folder name"):
        prepare_run_dir("somewhere", name, "a" * 64, fresh=True)
    assert check_run_name("figure-5.1-quick") == "figure-5.1-quick"


@pytest.mark.parametrize("name", [".", ".."])
def test_fresh_with_dot_names_is_refused_and_deletes_nothing(tmp_path, capsys, name):
    out = _plant(tmp_path)
    config = tmp_path / "exp.toml"
    config.write_text(CONFIG.format(name=name))
    assert main(["run", "--config", str(config), "--out", str(out), "--fresh", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "plain folder name" in err and "Traceback" not in err
    assert main(["oco", "--quick", "--name", name, "--out", str(out), "--fresh", "--no-progress"]) == 2
    assert "plain folder name" in capsys.readouterr().err
    _intact(tmp_path, out)
    assert sorted(p.name for p in out.iterdir()) == ["next-to-run.txt"]


def test_fresh_keeps_files_inside_the_run_folder_that_the_run_did_not_write(tmp_path, capsys):
    out = _plant(tmp_path)
    config = tmp_path / "exp.toml"
    config.write_text(CONFIG.format(name="exp"))
    args = ["run", "--config", str(config), "--out", str(out), "--no-progress"]
    assert main(args) == 0
    run_dir = out / "exp"
    (run_dir / "my-notes.txt").write_text("precious")
    (run_dir / "analysis").mkdir()
    (run_dir / "analysis" / "fig.png").write_bytes(b"mine")
    (run_dir / "jobs" / "README.txt").write_text("mine")
    config.write_text(CONFIG.format(name="exp").replace("horizon = 30", "horizon = 40"))
    assert main(args) == 2  # a different experiment: refused without --fresh, nothing touched
    assert "different experiment" in capsys.readouterr().err
    assert main(args + ["--fresh"]) == 0
    _intact(tmp_path, out)
    assert (run_dir / "my-notes.txt").read_text() == "precious"
    assert (run_dir / "analysis" / "fig.png").read_bytes() == b"mine"
    assert (run_dir / "jobs" / "README.txt").read_text() == "mine"
    assert load_config(config).config_hash() in (run_dir / "manifest.json").read_text()


def test_fresh_refuses_folders_that_are_not_this_dpbandit_run(tmp_path):
    out = _plant(tmp_path)
    cases = {
        "no-manifest": None,
        "corrupt": "{not json",
        "other-program": '{"version": 3}',
        "other-name": '{"config_hash": "' + "b" * 64 + '", "config": {"name": "someone-else"}}',
    }
    for folder, manifest in cases.items():
        (out / folder).mkdir()
        (out / folder / "data.csv").write_text("precious")
        if manifest is not None:
            (out / folder / "manifest.json").write_text(manifest)
        for fresh in (False, True):
            with pytest.raises(ValueError, match="left untouched") as info:
                prepare_run_dir(out, folder, "a" * 64, fresh=fresh)
            assert "--fresh" not in str(info.value) and "fresh=True" not in str(info.value)  # never recommends --fresh for a folder that is not a run
        assert (out / folder / "data.csv").read_text() == "precious"
        assert (out / folder / "manifest.json").exists() == (manifest is not None)
    (out / "a-file").write_text("precious")
    with pytest.raises(ValueError, match="not a folder"):
        prepare_run_dir(out, "a-file", "a" * 64, fresh=True)
    assert (out / "a-file").read_text() == "precious"
    _intact(tmp_path, out)


def test_fresh_deletes_nothing_outside_out_through_a_link(tmp_path):
    out = _plant(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    write_json_atomic(elsewhere / "manifest.json", {"config_hash": "a" * 64, "config": {"name": "linked"}})
    (elsewhere / "results.csv").write_text("precious")
    (out / "linked").symlink_to(elsewhere)
    assert prepare_run_dir(out, "linked", "a" * 64) == out / "linked"  # resuming through the link is fine
    with pytest.raises(ValueError, match="link to another place"):
        prepare_run_dir(out, "linked", "b" * 64, fresh=True)
    assert (elsewhere / "results.csv").read_text() == "precious"
    _intact(tmp_path, out)


def test_frontier_never_writes_into_a_folder_that_is_not_its_run(tmp_path, capsys):
    out = _plant(tmp_path)
    (out / "frontier-quick").mkdir()
    (out / "frontier-quick" / "results.csv").write_text("precious")
    args = ["frontier", "--quick", "--agents", "dp_ucb", "--out", str(out), "--no-progress"]
    for extra in ([], ["--fresh"]):
        assert main(args + extra) == 2
        assert "is not a dpbandit frontier named 'frontier-quick'" in capsys.readouterr().err
    assert (out / "frontier-quick" / "results.csv").read_text() == "precious"
    assert sorted(p.name for p in (out / "frontier-quick").iterdir()) == ["results.csv"]
    _intact(tmp_path, out)
