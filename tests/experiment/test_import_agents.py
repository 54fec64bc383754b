"""``type = "package.module:ClassName"`` agents: the class is named explicitly and the module (whose import runs its
code) is imported only after the rest of the configuration validated (issue 13, item 6)."""

from __future__ import annotations

import sys

import pytest

from dpbandit.agents import agent_class
from dpbandit.experiment.cli import main
from dpbandit.experiment.config import AgentSpec, ExperimentConfig

MODULE = '''
from pathlib import Path
Path({marker!r}).write_text("imported")  # a side effect of importing this module

from dpbandit.agents.baselines import UniformRandom


class MyAgent(UniformRandom):
    name = "mine"
'''


@pytest.fixture
def module(tmp_path, monkeypatch):
    marker = tmp_path / "imported.txt"
    (tmp_path / "side_effect_agents.py").write_text(MODULE.format(marker=str(marker)))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("side_effect_agents", None)  # every test starts from a module that was never imported
    yield marker
    sys.modules.pop("side_effect_agents", None)


def _config(tmp_path, agents, env='id = "dpbandit/SparseLinear-v0"\nhorizon = 20'):
    path = tmp_path / "exp.toml"
    path.write_text(f'name = "imp"\nseeds = 1\ncheckpoints = 5\n[env]\n{env}\n' + "".join(
        f"[[agents]]\n{body}\n" for body in agents))
    return str(path)


@pytest.mark.parametrize("name", ["side_effect_agents:", "side_effect_agents", ":MyAgent",
                                  "side_effect_agents:My Agent", "side_effect_agents:MyAgent:x",
                                  "side_effect_agents.:MyAgent", "side_effect_agents:MyAgent()"])
def test_the_class_must_be_named_explicitly_and_nothing_is_imported(module, name):
    with pytest.raises(ValueError, match="must name a class explicitly|unknown agent"):
        agent_class(name)
    with pytest.raises(ValueError, match="must name a class explicitly|unknown agent"):
        ExperimentConfig(env_id="dpbandit/SparseLinear-v0", agents=(AgentSpec(name),)).validate()
    assert not module.exists()


@pytest.mark.parametrize("other,env,needle", [
    ('type = "linucb"\nalpha = -1', 'id = "dpbandit/SparseLinear-v0"', "alpha"),
    ('type = "linucb"\nbogus = 1', 'id = "dpbandit/SparseLinear-v0"', "unknown hyperparameter 'bogus'"),
    ('type = "nope"', 'id = "dpbandit/SparseLinear-v0"', "unknown agent 'nope'"),
    ('type = "random"', 'id = "dpbandit/Nope-v0"', "cannot be made"),
    ('type = "random"\nlabel = "x"', 'id = "dpbandit/SparseLinear-v0"\nhorizon = 0', "horizon"),
])
def test_the_import_happens_only_after_the_rest_validated(tmp_path, module, capsys, other, env, needle):
    config = _config(tmp_path, ['type = "side_effect_agents:MyAgent"', other], env=env)
    assert main(["run", "--config", config, "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    assert needle in capsys.readouterr().err
    assert not module.exists(), "the module was imported before the rest of the config was validated"


def test_a_valid_import_path_runs(tmp_path, module, capsys):
    config = _config(tmp_path, ['type = "side_effect_agents:MyAgent"', 'type = "random"'])
    assert main(["run", "--config", config, "--out", str(tmp_path / "out"), "--no-progress"]) == 0
    assert module.read_text() == "imported" and "side_effect_agents:MyAgent" in capsys.readouterr().out
