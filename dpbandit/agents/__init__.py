"""Bandit agents and their registry.

``AGENTS`` maps a registry name (as used in TOML configs and the CLI) to the agent class; :func:`make_agent`
builds one for an environment with validated hyperparameters::

    agent = make_agent("linucb", env, alpha=0.5)

Plugins: a package that declares an entry point in the group ``dpbandit.agents`` (name = registry name, value =
``"package.module:ClassName"``) is found by name in every process, worker processes included
(:func:`discover_agents`). A name added at runtime (``AGENTS["mine"] = MyAgent``) exists only in the process that
added it: :func:`runtime_registered` lists such names so that parallel runs can refuse them up front.

Non-private baselines: ``"random"`` (:class:`UniformRandom`), ``"oracle"`` (:class:`Oracle`), ``"greedy"``
(:class:`Greedy`), ``"egreedy"`` (:class:`EpsilonGreedy`), ``"linucb"`` (:class:`LinUCB`), ``"lasso"``
(:class:`LassoBandit`).
"""

from __future__ import annotations

import importlib
import inspect
from importlib import metadata
from typing import Any

from dpbandit.agents.base import Agent
from dpbandit.agents.baselines import EpsilonGreedy, Greedy, Oracle, UniformRandom, argmax_random_tie
from dpbandit.agents.dp_hdb import DPHDB
from dpbandit.agents.dp_ucb import DPUCB
from dpbandit.agents.fliphat import FLIPHAT
from dpbandit.agents.episodic_glm import EpisodicGLM
from dpbandit.agents.episodic_ridge import EpisodicRidge
from dpbandit.agents.lasso_bandit import LassoBandit
from dpbandit.agents.linucb import LinUCB
from dpbandit.agents.oco_adapter import OCOAgent
from dpbandit.agents.private import Curator, PrivateAgent, RewardClip, reward_clip_range
from dpbandit.agents.ridge import RidgeState
from dpbandit.agents.support_ridge import SupportRidge

__all__ = [
    "AGENTS",
    "Agent",
    "Curator",
    "DPHDB",
    "FLIPHAT",
    "PrivateAgent",
    "RewardClip",
    "reward_clip_range",
    "DPUCB",
    "EpisodicGLM",
    "EpisodicRidge",
    "OCOAgent",
    "EpsilonGreedy",
    "Greedy",
    "LassoBandit",
    "LinUCB",
    "Oracle",
    "RidgeState",
    "SupportRidge",
    "UniformRandom",
    "agent_class",
    "check_import_path",
    "argmax_random_tie",
    "discover_agents",
    "runtime_registered",
    "ENTRY_POINT_GROUP",
    "hyperparameters",
    "make_agent",
]

#: Agent classes by registry name.
AGENTS: dict[str, type[Agent]] = {
    cls.name: cls for cls in (UniformRandom, Oracle, Greedy, EpsilonGreedy, LinUCB, LassoBandit, DPUCB, OCOAgent, DPHDB,
                EpisodicRidge, EpisodicGLM, FLIPHAT, SupportRidge)
}
_BUILTIN = frozenset(AGENTS)
#: Entry-point group of agent plugins (name -> ``"package.module:ClassName"``).
ENTRY_POINT_GROUP = "dpbandit.agents"


def _plugin_entry_points() -> dict[str, metadata.EntryPoint]:
    return {ep.name: ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)}


def _load_plugin(ep: metadata.EntryPoint) -> type[Agent]:
    try:
        cls = ep.load()
    except Exception as exc:  # a broken plugin must name itself
        raise ValueError(f"agent plugin {ep.name!r} ({ep.value}) cannot be loaded: {exc}") from None
    if not (isinstance(cls, type) and issubclass(cls, Agent)):
        raise ValueError(f"agent plugin {ep.name!r} ({ep.value}) is not a dpbandit.agents.base.Agent subclass")
    return cls


def discover_agents() -> dict[str, type[Agent]]:
    """Load every ``dpbandit.agents`` entry point into :data:`AGENTS` (names already there are kept) and return
    :data:`AGENTS`."""
    for name, ep in _plugin_entry_points().items():
        if name not in AGENTS:
            AGENTS[name] = _load_plugin(ep)
    return AGENTS


def runtime_registered() -> list[str]:
    """Names in :data:`AGENTS` that are neither built in nor plugin entry points: they were added at runtime in
    this process and are unknown to worker processes."""
    plugins = _plugin_entry_points()
    return sorted(name for name in AGENTS if name not in _BUILTIN and name not in plugins)


def hyperparameters(name: str | type[Agent]) -> tuple[str, ...]:
    """The hyperparameters ``make_agent`` accepts for agent ``name`` (constructor arguments after ``constants``)."""
    cls = agent_class(name)
    if cls is Oracle:
        return ()  # the oracle's only argument comes from the environment
    params = list(inspect.signature(cls.__init__).parameters.values())[2:]  # drop self, constants
    return tuple(p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))


def make_agent(name: str | type[Agent], env: Any, **params: Any) -> Agent:
    """Build agent ``name`` for the (possibly wrapped) dpbandit environment ``env``.

    ``name`` is a registry name (``AGENTS``), ``"package.module:ClassName"`` for an agent defined elsewhere, or an
    :class:`Agent` subclass. Raises ``ValueError`` for an unknown name (listing the known ones), ``TypeError`` for
    an unknown hyperparameter (listing the accepted ones), and the constructor's ``ValueError``/``TypeError`` naming
    the parameter for an invalid value.
    """
    cls = agent_class(name)
    accepted = hyperparameters(cls)
    for key in params:
        if key not in accepted:
            raise TypeError(
                f"unknown hyperparameter {key!r} for agent {cls.name!r}; accepted: "
                f"{', '.join(accepted) if accepted else 'none'}"
            )
    return cls.from_env(env, **params)


def check_import_path(name: str) -> tuple[str, str]:
    """``(module, qualname)`` of ``"package.module:ClassName"`` after checking its form, without importing anything:
    both parts are dotted Python identifiers, so the class is always named explicitly. ``ValueError`` otherwise."""
    module, _, qualname = name.partition(":")
    if not all(part.isidentifier() for text in (module, qualname) for part in text.split(".")):
        raise ValueError(f"agent type {name!r} must name a class explicitly as 'package.module:ClassName' (dotted "
                         f"Python names on both sides of one ':'), or be one of {', '.join(sorted(AGENTS))}")
    return module, qualname


def agent_class(name: Any) -> type[Agent]:
    """The agent class for a registry name, a ``"package.module:ClassName"`` string or an Agent subclass.

    An import path **imports that module, which runs its code**: use only modules you trust. The form is checked
    (:func:`check_import_path`) before anything is imported."""
    if isinstance(name, type) and issubclass(name, Agent):
        return name
    if not isinstance(name, str):
        raise TypeError(f"agent name must be a string, one of {sorted(AGENTS)}, or an Agent subclass, got {name!r}")
    if name in AGENTS:
        return AGENTS[name]
    plugin = _plugin_entry_points().get(name)
    if plugin is not None:
        AGENTS[name] = _load_plugin(plugin)
        return AGENTS[name]
    if ":" in name:
        module, qualname = check_import_path(name)
        try:
            obj = importlib.import_module(module)
            for part in qualname.split("."):
                obj = getattr(obj, part)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"agent {name!r} cannot be imported: {exc}") from None
        if not (isinstance(obj, type) and issubclass(obj, Agent)):
            raise ValueError(f"agent {name!r} is not a dpbandit.agents.base.Agent subclass")
        return obj
    raise ValueError(
        f"unknown agent {name!r}; known agents: {', '.join(sorted(AGENTS))} (or 'package.module:ClassName')"
    )
