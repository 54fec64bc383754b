"""The benchmark suite: its versioned name and its scenarios, each a TOML file in this package.

A scenario (``scenarios/<name>.toml``) names one environment (a registered id and its keywords), says why it is in
the suite, and gives its sizes: ``quick`` (``dpbandit bench --quick``) and ``full`` (``dpbandit bench``), each a
horizon T, a number of seeds and a grid of finite epsilons; every private agent is also run with ``epsilon = inf``
(its noise-off version, the second reference of its ratios). A scenario may fix hyperparameters of an agent
(``[agents.<type>]``, e.g. FLIPHAT's sparsity in its own setting). A hidden ``tiny`` size (T <= 60, one epsilon, one scenario unless named)
exists for tests.

``suite.toml`` holds the suite's name (:data:`SUITE`, versioned: a scenario that changes meaning gets a new suite
name) and the scenarios in the scorecard's order. Python::

    from dpbandit.experiment import bench
    spec = bench.scenario("sparse-logistic-ar-d100", size="quick")    # an EnvSpec: id, kwargs (with horizon), label
    env = gymnasium.make(spec.id, **spec.kwargs)
    bench.load_scenario("digits").sizes["full"]                        # Size(horizon, seeds, epsilons)
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any, Mapping

from dpbandit.experiment.config import AgentSpec, EnvSpec, ExperimentConfig
from dpbandit.validation import check_choice, check_epsilon, check_int

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["SIZES", "Scenario", "Size", "agent_label", "load_scenario", "scenario", "scenario_names",
           "suite_name"]

#: The public sizes of the suite (``"tiny"``, for tests, is accepted too but not listed).
SIZES: tuple[str, ...] = ("quick", "full")
_ALL_SIZES = (*SIZES, "tiny")
#: The hidden ``tiny`` size (tests): this horizon at most, 5 seeds, the quick grid's first epsilon; a tiny bench
#: without a list of scenarios runs only :data:`TINY_SCENARIOS`.
TINY_HORIZON = 60
TINY_SCENARIOS = ("dense-shared-linear",)
#: Recorded rounds per job (the regret curves of ``dpbandit plot``); final regret is always recorded.
CHECKPOINTS = 10
_KEYS = {"name", "why", "env", "agents", "sizes"}


@dataclass(frozen=True)
class Size:
    """One size of a scenario: horizon T, seeds ``0..seeds-1`` (common to every agent: the same users), and the
    finite epsilons of the grid (noise off, epsilon = inf, is added to every private agent)."""

    horizon: int
    seeds: int
    epsilons: tuple[float, ...]


@dataclass(frozen=True)
class Scenario:
    """A scenario of the suite: ``name``, ``why`` (the docs' sentence), the environment ``env_id`` with
    ``env_kwargs`` (without the horizon), ``agent_params`` (type -> hyperparameters fixed here) and ``sizes``."""

    name: str
    why: str
    env_id: str
    env_kwargs: Mapping[str, Any]
    sizes: Mapping[str, Size]
    agent_params: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def env_spec(self, size: str = "quick") -> EnvSpec:
        """The environment at ``size``: registered id, keywords with the horizon, label = the scenario's name."""
        T = self.size(size).horizon
        return EnvSpec(self.env_id, {**self.env_kwargs, "horizon": T}, self.name)

    def size(self, size: str) -> Size:
        check_choice("size", size, _ALL_SIZES)
        return self.sizes[size]

    def agent_specs(self, stem: str, agent_type: Any, epsilons: tuple[float, ...], *,
                    noise_off: bool = True) -> list[AgentSpec]:
        """Agent ``agent_type`` (a registry name, ``"module:Class"`` or a class) labelled ``"<stem> eps=<e>"`` once
        per epsilon of ``epsilons`` and, with ``noise_off``, once with ``epsilon = inf``; with the hyperparameters
        this scenario fixes for ``stem``. An empty ``epsilons`` and no ``noise_off``: one agent with its defaults,
        labelled ``stem``."""
        params = dict(self.agent_params.get(stem, {}))
        grid = (*epsilons, *((math.inf,) if noise_off else ()))
        if not grid:
            return [AgentSpec(agent_type, stem, params)]
        return [AgentSpec(agent_type, agent_label(stem, e), {**params, "epsilon": e}) for e in grid]

    def experiment(self, agents: Mapping[str, Any], size: str, *, references: tuple[str, ...] = ("random",),
                   seeds: int | None = None, n_jobs: int = 2) -> ExperimentConfig:
        """The runner's configuration of this scenario at ``size``: every agent of ``agents`` (label stem -> type)
        over the size's epsilon grid and noise off (:meth:`agent_specs`), then the non-private ``references``; the
        run's name is the scenario's."""
        sz = self.size(size)
        specs = [spec for stem, kind in agents.items() for spec in self.agent_specs(stem, kind, sz.epsilons)]
        specs += [AgentSpec(name, name, dict(self.agent_params.get(name, {}))) for name in references]
        return ExperimentConfig(envs=(self.env_spec(size),), agents=tuple(specs),
                                seeds=sz.seeds if seeds is None else seeds, n_jobs=n_jobs, checkpoints=CHECKPOINTS,
                                name=self.name)


def agent_label(stem: str, epsilon: float) -> str:
    """The label of an agent at ``epsilon`` in a bench run, e.g. ``"dp_ucb eps=1"`` / ``"dp_ucb eps=inf"`` (the
    frontier's labels, so ``dpbandit compare`` names the cells the same way)."""
    return f"{stem} eps={'inf' if math.isinf(epsilon) else f'{epsilon:g}'}"


def _size(name: str, key: str, data: Any) -> Size:
    where = f"scenario {name!r}, sizes.{key}"
    if not isinstance(data, Mapping) or set(data) != {"horizon", "seeds", "epsilons"}:
        raise ValueError(f"{where} must have exactly the keys horizon, seeds, epsilons")
    eps = tuple(check_epsilon(e, f"{where}.epsilons entry") for e in data["epsilons"])
    if not eps or len(set(eps)) != len(eps):
        raise ValueError(f"{where}.epsilons must list distinct finite epsilons (inf is added), got {list(eps)}")
    return Size(check_int(f"{where}.horizon", data["horizon"], low=2), check_int(f"{where}.seeds", data["seeds"],
                                                                                    low=1), tuple(sorted(eps)))


def _parse(name: str, data: dict) -> Scenario:
    unknown = set(data) - _KEYS
    if unknown or data.get("name") != name or not isinstance(data.get("env"), dict) or "id" not in data["env"]:
        raise ValueError(f"scenario file {name}.toml must have name = {name!r}, an [env] table with an id and only "
                         f"the keys {sorted(_KEYS)}")
    env = dict(data["env"])
    if "horizon" in env:
        raise ValueError(f"scenario {name!r}: the horizon belongs to its sizes, not to [env]")
    sizes = {key: _size(name, key, data["sizes"].get(key)) for key in SIZES}
    quick = sizes["quick"]
    sizes["tiny"] = Size(min(quick.horizon, TINY_HORIZON), 5, quick.epsilons[:1])
    return Scenario(name, " ".join(str(data.get("why", "")).split()), env.pop("id"), env, sizes,
                    {k: dict(v) for k, v in data.get("agents", {}).items()})


@lru_cache(maxsize=None)
def _suite() -> tuple[str, tuple[str, ...]]:
    data = tomllib.loads(resources.files(__package__).joinpath("suite.toml").read_text(encoding="utf-8"))
    return data["name"], tuple(data["scenarios"])


def suite_name() -> str:
    """The suite's versioned name, e.g. ``"dpbandit-v1"``."""
    return _suite()[0]


def scenario_names() -> tuple[str, ...]:
    """The suite's scenarios in the scorecard's order."""
    return _suite()[1]


@lru_cache(maxsize=None)
def load_scenario(name: str) -> Scenario:
    """The :class:`Scenario` ``name`` of the suite (``ValueError`` listing the names for an unknown one)."""
    if name not in scenario_names():
        raise ValueError(f"unknown scenario {name!r}; the {suite_name()} scenarios are {', '.join(scenario_names())}")
    text = resources.files(__package__).joinpath("scenarios", f"{name}.toml").read_text(encoding="utf-8")
    return _parse(name, tomllib.loads(text))


def scenario(name: str, size: str = "quick") -> EnvSpec:
    """The environment of scenario ``name`` at ``size`` (``"quick"`` or ``"full"``) as an
    :class:`~dpbandit.experiment.config.EnvSpec`: ``gymnasium.make(spec.id, **spec.kwargs)`` builds it."""
    return load_scenario(name).env_spec(size)

