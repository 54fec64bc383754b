"""Bandit agents and their registry.

``AGENTS`` maps a registry name (as used in TOML configs and the CLI) to the agent class; :func:`make_agent`
builds one for an environment with validated hyperparameters::

    agent = make_agent("linucb", env, alpha=0.5)

Non-private baselines: ``"random"`` (:class:`UniformRandom`), ``"oracle"`` (:class:`Oracle`), ``"greedy"``
(:class:`Greedy`), ``"egreedy"`` (:class:`EpsilonGreedy`), ``"linucb"`` (:class:`LinUCB`), ``"lasso"``
(:class:`LassoBandit`).
"""

from __future__ import annotations

import inspect
from typing import Any

from dpbandit.agents.base import Agent
from dpbandit.agents.baselines import EpsilonGreedy, Greedy, Oracle, UniformRandom, argmax_random_tie
from dpbandit.agents.dp_hdb import DPHDB
from dpbandit.agents.dp_ucb import DPUCB
from dpbandit.agents.lasso_bandit import LassoBandit
from dpbandit.agents.linucb import LinUCB
from dpbandit.agents.oco_adapter import OCOAgent
from dpbandit.agents.ridge import RidgeState

__all__ = [
    "AGENTS",
    "Agent",
    "DPHDB",
    "DPUCB",
    "OCOAgent",
    "EpsilonGreedy",
    "Greedy",
    "LassoBandit",
    "LinUCB",
    "Oracle",
    "RidgeState",
    "UniformRandom",
    "argmax_random_tie",
    "hyperparameters",
    "make_agent",
]

#: Agent classes by registry name.
AGENTS: dict[str, type[Agent]] = {
    cls.name: cls for cls in (UniformRandom, Oracle, Greedy, EpsilonGreedy, LinUCB, LassoBandit, DPUCB, OCOAgent, DPHDB)
}


def hyperparameters(name: str) -> tuple[str, ...]:
    """The hyperparameters ``make_agent`` accepts for agent ``name`` (constructor arguments after ``constants``)."""
    cls = _agent_class(name)
    if cls is Oracle:
        return ()  # the oracle's only argument comes from the environment
    params = list(inspect.signature(cls.__init__).parameters.values())[2:]  # drop self, constants
    return tuple(p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))


def make_agent(name: str, env: Any, **params: Any) -> Agent:
    """Build agent ``name`` for the (possibly wrapped) dpbandit environment ``env``.

    Raises ``ValueError`` for an unknown name (listing the known ones), ``TypeError`` for an unknown
    hyperparameter (listing the accepted ones), and the constructor's ``ValueError``/``TypeError`` naming the
    parameter for an invalid value.
    """
    cls = _agent_class(name)
    accepted = hyperparameters(name)
    for key in params:
        if key not in accepted:
            raise TypeError(
                f"unknown hyperparameter {key!r} for agent {name!r}; accepted: "
                f"{', '.join(accepted) if accepted else 'none'}"
            )
    return cls.from_env(env, **params)


def _agent_class(name: Any) -> type[Agent]:
    if not isinstance(name, str):
        raise TypeError(f"agent name must be a string, one of {sorted(AGENTS)}, got {name!r}")
    if name not in AGENTS:
        raise ValueError(f"unknown agent {name!r}; known agents: {', '.join(sorted(AGENTS))}")
    return AGENTS[name]
