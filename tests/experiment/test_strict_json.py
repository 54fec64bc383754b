"""Every JSON file the experiment layer writes is strict JSON (no NaN/Infinity tokens): the writer converts
non-finite floats to the strings "nan", "inf", "-inf", and every runner writes through it."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest

from dpbandit.experiment.config import AgentSpec, ExperimentConfig
from dpbandit.experiment.frontier import FrontierConfig, run_frontier
from dpbandit.experiment.oco import LearnerSpec, OCOConfig, run_oco
from dpbandit.experiment.reproduce.table_5_1 import Table51Config, run_table_5_1
from dpbandit.experiment.results import write_json_atomic
from dpbandit.experiment.runner import run_experiment


def strict_load(path: Path):
    def refuse(token):
        raise ValueError(f"{path}: non-strict JSON constant {token}")

    return json.loads(path.read_text(), parse_constant=refuse)


def test_the_writer_turns_non_finite_numbers_into_strings(tmp_path):
    data = {"a": math.nan, "b": [math.inf, -math.inf, np.float64("nan")], "c": {"d": np.float32(np.inf)},
            "e": (1.5, np.int64(3)), "f": tmp_path, "g": np.array([1.0, np.inf])}
    path = write_json_atomic(tmp_path / "x.json", data)
    assert strict_load(path) == {"a": "nan", "b": ["inf", "-inf", "nan"], "c": {"d": "inf"}, "e": [1.5, 3],
                                 "f": str(tmp_path), "g": [1.0, "inf"]}


def _run_dirs(tmp_path: Path) -> list[Path]:
    bandit = ExperimentConfig(env_id="dpbandit/SharedLinear-v0", env_kwargs={"horizon": 30, "dim": 4, "n_arms": 3},
                              agents=(AgentSpec("random"), AgentSpec("dp_ucb", params={"epsilon": math.inf})),
                              seeds=1, checkpoints=5, name="bandit")
    oco = OCOConfig(learners=(LearnerSpec("ldp-reduction", params={"tau": math.inf}),), problems=("linear",),
                    dim=3, horizon=40, seeds=(0,), checkpoints=5)
    frontier = FrontierConfig(env_id="dpbandit/SharedLinear-v0", env_kwargs={"dim": 4, "n_arms": 3},
                              agents=("dp_ucb",), epsilons=(0.5, math.inf), horizons=(30,), seeds=2,
                              references=("random",), n_jobs=1, checkpoints=5)
    table = Table51Config(horizons=(16,), dims=(3,), seeds=1, sgd_max_horizon=16, name="t51")
    run_experiment(bandit, out=tmp_path, progress=False)
    run_oco(oco, out=tmp_path, progress=False)
    run_frontier(frontier, out=tmp_path, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the published-calibration column warns by design
        run_table_5_1(table, out=tmp_path, progress=False)
    return [tmp_path / name for name in ("bandit", "oco", "frontier", "t51")]


@pytest.mark.slow
def test_every_runner_writes_strict_json(tmp_path):  # slow: four small runs, about 8 s
    manifests = {}
    for run_dir in _run_dirs(tmp_path):
        files = sorted(run_dir.rglob("*.json"))
        assert run_dir / "manifest.json" in files
        for path in files:
            loaded = strict_load(path)
            if path.name == "manifest.json":
                manifests[path.relative_to(tmp_path).as_posix()] = loaded
    assert set(manifests) == {"bandit/manifest.json", "oco/manifest.json", "frontier/manifest.json",
                              "frontier/sweep/manifest.json", "t51/manifest.json"}
    assert manifests["bandit/manifest.json"]["config"]["agents"][1]["epsilon"] == "inf"
    assert manifests["oco/manifest.json"]["config"]["learners"][0]["params"]["tau"] == "inf"
    assert manifests["frontier/manifest.json"]["config"]["epsilons"] == ["0.5", "inf"]
