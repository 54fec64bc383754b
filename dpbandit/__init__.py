"""dpbandit: a simulator for differentially private contextual bandits.

The facade: importing :mod:`dpbandit` registers the ``dpbandit/`` Gymnasium environments, and re-exports what a
user needs to make an environment, build an agent and run an experiment::

    import gymnasium, dpbandit
    env = gymnasium.make("dpbandit/SparseLinear-v0", horizon=1000)
    agent = dpbandit.make_agent("linucb", env)
    frame = dpbandit.simulate(env, agent, seed=0)
"""

from importlib import import_module

from dpbandit import envs  # noqa: F401  (registers the environments)
from dpbandit.agents import AGENTS, make_agent
from dpbandit.agents.base import Agent
from dpbandit.envs import BanditConstants, GLMBanditEnv, registered_envs

__version__ = "0.2.0"  # the single source of the version (pyproject.toml reads it; CITATION.cff repeats it)

_LAZY = {  # the experiment layer pulls in pandas/matplotlib: import it on first use
    "AgentSpec": "dpbandit.experiment.config",
    "ExperimentConfig": "dpbandit.experiment.config",
    "load_config": "dpbandit.experiment.config",
    "load_run": "dpbandit.experiment.run_data",
    "run_experiment": "dpbandit.experiment.runner",
    "simulate": "dpbandit.experiment.runner",
}

__all__ = [
    "AGENTS",
    "Agent",
    "BanditConstants",
    "GLMBanditEnv",
    "make_agent",
    "registered_envs",
    *_LAZY,
]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'dpbandit' has no attribute {name!r}")
