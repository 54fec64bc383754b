"""``private`` in job records and figure groupings comes from the privacy report's guarantee (issue 12 item 4)."""

from __future__ import annotations

import json
import math

import gymnasium
import pytest

from dpbandit.agents import make_agent
from dpbandit.experiment.config import AgentSpec, ExperimentConfig
from dpbandit.experiment.reproduce.figure_5_1 import figure_config, private_labels
from dpbandit.experiment.runner import run_experiment
from dpbandit.privacy.report import PrivacyReport, is_private


def test_job_records_label_noise_off_runs_not_private(tmp_path):
    config = ExperimentConfig(
        env_id="dpbandit/SparseLinear-v0", env_kwargs={"horizon": 60, "dim": 6}, seeds=1, checkpoints=5, name="p",
        agents=(AgentSpec("dp_ucb", "off", {"epsilon": math.inf}), AgentSpec("dp_ucb", "on", {"epsilon": 1.0}),
                AgentSpec("random")))
    run_experiment(config, out=tmp_path, progress=False)
    stored = (json.loads(p.read_text()) for p in (tmp_path / "p" / "jobs").glob("*.json"))
    records = {r["agent"]: r for r in (s.get("meta", s) for s in stored)}  # the job record is the "meta" entry
    assert records["off"]["private"] is False and records["off"]["privacy_report"]["guarantee"] == "none"
    assert records["on"]["private"] is True and records["on"]["privacy_report"]["guarantee"] == "JDP"
    assert records["random"]["private"] is False


def test_figure_5_1_lists_noise_off_agents_with_the_references():
    config = figure_config(horizon=200, seeds=1, epsilon=math.inf, arms=(2,), agents=("dp_hdb", "linucb", "random"))
    labels = private_labels(config)
    assert labels and not any(labels.values())
    assert any("noise off, no guarantee" in label for label in labels)
    private = private_labels(figure_config(horizon=200, seeds=1, epsilon=1.0, arms=(2,),
                                           agents=("dp_hdb", "random")))
    assert [v for k, v in private.items() if k.startswith("DP-HDB")] == [True]


def test_is_private_follows_the_guarantee():
    env = gymnasium.make("dpbandit/SparseLinear-v0", horizon=50, dim=6)
    assert is_private(make_agent("dp_hdb", env, epsilon=2.0).privacy_report())
    assert not is_private(make_agent("dp_hdb", env, epsilon=math.inf).privacy_report())
    assert not is_private(None)
    assert not is_private(PrivacyReport.non_private("x"))
    with pytest.raises(TypeError, match="report must be a PrivacyReport"):
        is_private({"guarantee": "JDP"})
