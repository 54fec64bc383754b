"""Plugins through entry points reach every worker; runtime registrations are refused for parallel runs."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import gymnasium
import pytest

from dpbandit.agents import AGENTS, UniformRandom, runtime_registered
from dpbandit.experiment.config import AgentSpec, ExperimentConfig
from dpbandit.experiment.runner import run_experiment

ROOT = Path(__file__).resolve().parents[2]

PLUGIN = '''
import numpy as np
from dpbandit.agents.base import Agent
from dpbandit.envs.glm import GLMBanditEnv


class FirstArm(Agent):
    """Always plays arm 0."""
    name = "first_arm"

    def _reset_state(self):
        pass

    def act(self, observation):
        return 0

    def update(self, observation, arm, reward, info):
        pass


class TinyBandit(GLMBanditEnv):
    def __init__(self, **kwargs):
        super().__init__(**{"n_arms": 3, "dim": 4, "horizon": 50, **kwargs})
'''


def _install_plugin(site: Path) -> None:
    (site / "dpb_plugin.py").write_text(PLUGIN)
    info = site / "dpb_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: dpb-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[dpbandit.agents]\nfirst_arm = dpb_plugin:FirstArm\n\n[dpbandit.envs]\nplugin/Tiny-v0 = dpb_plugin:TinyBandit\n"
    )


def test_entry_point_plugins_work_in_worker_processes(tmp_path):
    """A fresh interpreter with the plugin installed (on its path) runs it with n_jobs=2: the workers find the
    agent and the environment by name through the entry points."""
    site = tmp_path / "site"
    site.mkdir()
    _install_plugin(site)
    script = textwrap.dedent('''
        from dpbandit.agents import discover_agents
        from dpbandit.experiment.config import AgentSpec, ExperimentConfig
        from dpbandit.experiment.runner import run_experiment
        assert "first_arm" in discover_agents()
        config = ExperimentConfig(env_id="plugin/Tiny-v0", agents=(AgentSpec("first_arm"), AgentSpec("random")),
                                  seeds=2, n_jobs=2, checkpoints=5)
        summary = run_experiment(config, progress=False).summary
        print(sorted(summary["agent"]), int(summary["horizon"].iloc[0]))
    ''')
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['first_arm', 'random'] 50"


def test_runtime_registration_is_refused_for_parallel_runs_with_the_fix():
    class Mine(UniformRandom):
        name = "mine"

    AGENTS["mine"] = Mine
    try:
        assert runtime_registered() == ["mine"]
        config = ExperimentConfig(env_id="dpbandit/SparseLinear-v0", env_kwargs={"horizon": 20},
                                  agents=(AgentSpec("mine"),), seeds=2, n_jobs=2, checkpoints=5)
        with pytest.raises(ValueError, match=r"agent\(s\) \['mine'\] were registered at runtime .*AgentSpec\(MyAgent\)"):
            run_experiment(config, progress=False)
        assert run_experiment(config.replace(n_jobs=1), progress=False).summary["seeds"].iloc[0] == 2
        by_class = config.replace(agents=(AgentSpec(Mine),))  # the fix the message names
        assert run_experiment(by_class, progress=False).summary["agent"].iloc[0] == "mine"
    finally:
        del AGENTS["mine"]


def test_runtime_env_registration_is_refused_for_parallel_runs():
    gymnasium.register("runtime/Tiny-v0", entry_point="dpbandit.envs.glm:GLMBanditEnv", kwargs={"horizon": 20})
    try:
        config = ExperimentConfig(env_id="runtime/Tiny-v0", agents=(AgentSpec("random"),), seeds=2, n_jobs=2,
                                  checkpoints=5)
        with pytest.raises(ValueError, match=r"environment id\(s\) \['runtime/Tiny-v0'\] were registered at runtime"):
            run_experiment(config, progress=False)
        assert run_experiment(config.replace(n_jobs=1), progress=False).summary["seeds"].iloc[0] == 2
    finally:
        del gymnasium.registry["runtime/Tiny-v0"]
