"""Run directories shared by the bandit and OCO runners (dpbandit.experiment.results) and the job executor
(dpbandit.experiment.execution.execute_jobs)."""

from __future__ import annotations

import json
from functools import partial

import numpy as np
import pandas as pd
import pytest

from dpbandit.experiment.results import load_job, prepare_run_dir, store_job, write_json_atomic
from dpbandit.experiment.execution import execute_jobs


def test_prepare_run_dir_reuses_the_same_experiment_and_refuses_others(tmp_path):
    run_dir = prepare_run_dir(tmp_path, "exp", "a" * 64)
    assert run_dir == tmp_path / "exp" and run_dir.is_dir()
    write_json_atomic(run_dir / "manifest.json", {"config_hash": "a" * 64, "config": {"name": "exp"}})
    (run_dir / "jobs").mkdir()
    assert prepare_run_dir(tmp_path, "exp", "a" * 64) == run_dir and (run_dir / "jobs").is_dir()  # kept
    with pytest.raises(ValueError, match="different experiment \\(config hash aaaaaaaaaaaa != bbbbbbbbbbbb\\)"):
        prepare_run_dir(tmp_path, "exp", "b" * 64)
    assert (run_dir / "manifest.json").is_file()  # refused before touching anything
    assert prepare_run_dir(tmp_path, "exp", "b" * 64, fresh=True) == run_dir and not any(run_dir.iterdir())
    # (what --fresh keeps and refuses: tests/experiment/test_fresh_safety.py)
    other = tmp_path / "notes"
    other.mkdir()
    (other / "todo.txt").write_text("mine")
    with pytest.raises(ValueError, match="not a dpbandit run"):
        prepare_run_dir(tmp_path, "notes", "a" * 64)
    assert (other / "todo.txt").read_text() == "mine"


def test_jobs_round_trip_exactly_and_count_as_finished_only_with_their_json(tmp_path):
    frame = pd.DataFrame({"t": [1, 2, 3], "x": np.random.default_rng(0).random(3) / 3.0})
    meta = [{"learner": "a", "gap": float("inf")}]
    store_job(tmp_path, "job0", frame, meta)
    loaded_frame, loaded_meta = load_job(tmp_path, "job0")
    pd.testing.assert_frame_equal(loaded_frame, frame, check_exact=True)  # floats read back bit for bit
    assert loaded_meta == [{"learner": "a", "gap": "inf"}]
    assert json.loads((tmp_path / "jobs" / "job0.json").read_text(), parse_constant=lambda c: 1 / 0)
    (tmp_path / "jobs" / "job1.csv").write_text("t\n1\n")  # a job killed between its two files
    assert load_job(tmp_path, "job1") is None and load_job(tmp_path, "job2") is None


def _square(offset: int, job: int) -> int:
    return job * job + offset


def test_execute_jobs_hands_every_output_to_store():  # worker processes: tests of run_experiment and run_oco
    stored = {}
    execute_jobs(partial(_square, 1), [3, 1, 2], stored.__setitem__, progress=False)
    assert stored == {3: 10, 1: 2, 2: 5}
    with pytest.raises(ValueError, match="backend"):
        execute_jobs(partial(_square, 0), [1], stored.__setitem__, backend="spark")


def test_a_run_of_the_older_stream_layout_is_refused_with_the_reason(tmp_path):
    """A folder of dpbandit <= 0.1.0 (its manifest has no stream_layout) holds another hash for the same
    configuration, since the hash covers the stream layout: refused, naming the version, never resumed."""
    from dpbandit.experiment.config import AgentSpec, ExperimentConfig

    config = ExperimentConfig(env_id="dpbandit/SparseLinear-v0", agents=(AgentSpec("random"),), name="exp")
    run_dir = prepare_run_dir(tmp_path, "exp", config.config_hash())
    write_json_atomic(run_dir / "manifest.json", {"config_hash": "c" * 64, "config": {"name": "exp"}})
    with pytest.raises(ValueError, match=r"\(config hash cccccccccccc != \w{12}\), or the same one run by dpbandit "
                                         r"<= 0\.1\.0, whose random streams are laid out otherwise"):
        prepare_run_dir(tmp_path, "exp", config.config_hash())
    write_json_atomic(run_dir / "manifest.json", {"config_hash": "c" * 64, "config": {"name": "exp"},
                                                  "stream_layout": 2})
    with pytest.raises(ValueError, match=r"!= \w{12}\): pass fresh=True"):
        prepare_run_dir(tmp_path, "exp", config.config_hash())
