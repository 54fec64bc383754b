"""Plugins through entry points reach every worker; runtime registrations are refused for parallel runs."""

import json
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


def test_manifest_records_each_plugins_distribution_and_version(tmp_path):
    """Issue 29 item 7: the run manifest names the distribution and version of every plugin whose agent or
    environment produced results (from its entry point), and none for dpbandit's own; an agent given as
    "module:Class" from a module no distribution installs is recorded with distribution None."""
    site = tmp_path / "site"
    site.mkdir()
    _install_plugin(site)
    (site / "loose_agents.py").write_text("from dpb_plugin import FirstArm\n\n\nclass Loose(FirstArm):\n    name = 'loose'\n")
    script = textwrap.dedent(f'''
        import json
        from dpbandit.experiment.config import AgentSpec, ExperimentConfig
        from dpbandit.experiment.runner import run_experiment
        config = ExperimentConfig(env_id="plugin/Tiny-v0", agents=(AgentSpec("first_arm"), AgentSpec("random"),
                                  AgentSpec("loose_agents:Loose", label="loose")), seeds=1, checkpoints=5,
                                  name="plugins")
        run_dir = run_experiment(config, out={str(tmp_path / "runs")!r}, progress=False).run_dir
        print(json.dumps(json.loads((run_dir / "manifest.json").read_text())["versions"]))
    ''')
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    plugins = json.loads(done.stdout.strip().splitlines()[-1])["plugins"]
    assert plugins == {
        "agent first_arm": {"module": "dpb_plugin", "distribution": "dpb-plugin", "version": "0.1"},
        "env plugin/Tiny-v0": {"module": "dpb_plugin", "distribution": "dpb-plugin", "version": "0.1"},
        "agent loose": {"module": "loose_agents", "distribution": None, "version": None},
    }
