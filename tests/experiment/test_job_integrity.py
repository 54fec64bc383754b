"""Stored jobs carry their own integrity record; a job whose files do not match it is recomputed with a warning
naming the file, never read back silently (issue 13, item 2)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpbandit.experiment.config import AgentSpec, ExperimentConfig
from dpbandit.experiment.rundir import JobRecomputedWarning, load_job, store_job
from dpbandit.experiment.runner import run_experiment


def _frame(n=6):
    rng = np.random.default_rng(3)
    return pd.DataFrame({"env_id": "e", "agent": "a", "seed": 7, "t": np.arange(1, n + 1),
                         "cumulative_regret": rng.random(n) / 3.0})


def _cut_mid_line(data: bytes) -> bytes:
    return data[: data.rstrip(b"\n").rfind(b",") + 3]


CSV_DAMAGE = {
    "drop-last-rows": lambda b: b"".join(b.splitlines(keepends=True)[:-2]),
    "cut-mid-line": _cut_mid_line,
    "empty": lambda b: b"",
    "header-only": lambda b: b.splitlines(keepends=True)[0],
    "non-numeric": lambda b: b.replace(b",7,", b",seven,", 1),
    "binary-garbage": lambda b: b"\x00\xff\xfe" * 10,
    "edited-value": lambda b: b.replace(b",1,", b",2,", 1),
}
JSON_DAMAGE = {
    "corrupt": lambda s: s[: len(s) // 2],
    "empty": lambda s: "",
    "not-an-object": lambda s: "[1, 2]",
    "old-format-without-record": lambda s: json.dumps(json.loads(s)["meta"]),
    "record-missing-hash": lambda s: json.dumps({k: v for k, v in json.loads(s).items() if k != "sha256"}),
}


def test_round_trip_keeps_values_and_integer_dtypes(tmp_path):
    frame = _frame()
    store_job(tmp_path, "job", frame, {"seed": 7})
    record = json.loads((tmp_path / "jobs" / "job.json").read_text())
    assert record["rows"] == 6 and len(record["sha256"]) == 64 and record["meta"] == {"seed": 7}
    got, meta = load_job(tmp_path, "job")
    pd.testing.assert_frame_equal(got, frame, check_exact=True, check_dtype=False)
    assert got["seed"].dtype == np.int64 and got["t"].dtype == np.int64 and meta == {"seed": 7}


@pytest.mark.parametrize("damage", CSV_DAMAGE, ids=list(CSV_DAMAGE))
def test_a_damaged_csv_is_recomputed_with_a_warning_naming_it(tmp_path, damage):
    store_job(tmp_path, "job", _frame(), {"seed": 7})
    path = tmp_path / "jobs" / "job.csv"
    path.write_bytes(CSV_DAMAGE[damage](path.read_bytes()))
    with pytest.warns(JobRecomputedWarning, match=r"job\.csv.*recomputing this job"):
        assert load_job(tmp_path, "job") is None


@pytest.mark.parametrize("damage", JSON_DAMAGE, ids=list(JSON_DAMAGE))
def test_a_damaged_json_record_is_recomputed_with_a_warning_naming_it(tmp_path, damage):
    store_job(tmp_path, "job", _frame(), {"seed": 7})
    path = tmp_path / "jobs" / "job.json"
    path.write_text(JSON_DAMAGE[damage](path.read_text()))
    with pytest.warns(JobRecomputedWarning, match=r"job\.json.*recomputing this job"):
        assert load_job(tmp_path, "job") is None


def test_a_missing_csv_is_recomputed_and_a_missing_json_means_unfinished(tmp_path, recwarn):
    store_job(tmp_path, "job", _frame(), {"seed": 7})
    (tmp_path / "jobs" / "job.csv").unlink()
    with pytest.warns(JobRecomputedWarning, match=r"job\.csv"):
        assert load_job(tmp_path, "job") is None
    store_job(tmp_path, "job2", _frame(), {})
    (tmp_path / "jobs" / "job2.json").unlink()  # killed between the CSV and its record: not finished, no warning
    assert load_job(tmp_path, "job2") is None and not recwarn.list


def test_resume_recomputes_a_truncated_job_and_equals_an_uninterrupted_run(tmp_path):
    config = ExperimentConfig(env_id="dpbandit/SparseLinear-v0", env_kwargs={"horizon": 200},
                              agents=(AgentSpec("linucb"), AgentSpec("egreedy")), seeds=(0, 1), checkpoints=20,
                              name="exp")
    reference = run_experiment(config, out=tmp_path / "a", progress=False).results
    run_experiment(config, out=tmp_path / "b", progress=False)
    jobs = tmp_path / "b" / "exp" / "jobs"
    victim = sorted(jobs.glob("*.csv"))[0]
    victim.write_bytes(b"".join(victim.read_bytes().splitlines(keepends=True)[:-3]))  # trailing rows removed
    with pytest.warns(JobRecomputedWarning, match=victim.name):
        resumed = run_experiment(config, out=tmp_path / "b", progress=False)
    assert resumed.resumed_jobs == 3
    pd.testing.assert_frame_equal(resumed.results, reference, check_exact=True)
    assert resumed.results["seed"].dtype == np.int64 and resumed.results["t"].dtype == np.int64
    assert load_job(tmp_path / "b" / "exp", victim.stem) is not None  # rewritten with a valid record
