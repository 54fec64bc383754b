"""Validated experiment configurations (Python or TOML).

A configuration names one environment, a list of agents, the seeds and how to record::

    name = "quick"
    seeds = 5                  # an int n means seeds 0..n-1; or an explicit list [0, 7, 11]
    n_jobs = 2                 # parallel (agent, seed) jobs; 1 runs in this process
    batch = "auto"             # "auto": seeds of agents with a batched form run in lockstep (same results); "off"
    checkpoints = 100          # number of recorded rounds (log- and linearly spaced), or "all"
    out = "runs"               # parent folder of the run directory

    [env]
    id = "dpbandit/SparseLinear-v0"
    horizon = 2000             # any other keyword of the environment may follow

    # or, for a sweep over several environments, a list of tables (each may carry a label):
    # [[envs]]
    # id = "dpbandit/SparseLinear-v0"
    # label = "d=100"
    # dim = 100

    [[agents]]
    type = "linucb"            # a name of dpbandit.agents.AGENTS
    label = "LinUCB a=1"       # optional; defaults to the type
    alpha = 1.0                # the agent's hyperparameters

Everything is checked when the configuration is built, before any job starts: unknown keys, wrong types, unknown
environment ids or agent types, and invalid hyperparameters (each agent is built once on each environment).

A configuration expands to (environment, agent, seed) jobs. Its :meth:`ExperimentConfig.config_hash` covers
everything that determines the results (environments, agents, seeds, checkpoints, name) and not how they are
computed (``n_jobs``, ``batch``, ``out``), so a resumed run can tell whether it is still the same experiment.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpbandit.experiment.environments import make_env
from dpbandit.seeding import STREAM_LAYOUT
from dpbandit.validation import check_choice, check_int, check_n_jobs, check_run_name

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
    "AgentSpec", "EnvSpec", "ExperimentConfig", "load_config", "make_env", "parse_seeds", "config_digest",
    "DEFAULT_CONFIG", "BATCH_MODES", "read_toml", "MAX_SEEDS", "Built",
]

#: The packaged default experiment run by ``dpbandit run`` without ``--config``.
DEFAULT_CONFIG = Path(__file__).with_name("configs") / "quick.toml"

_TOP_KEYS = {"name", "seeds", "n_jobs", "batch", "checkpoints", "out", "env", "envs", "agents"}
#: Most seeds an experiment may run: each is one job per (environment, agent) pair with its own files in ``jobs/``,
#: and a list of seeds is stored in the manifest.
MAX_SEEDS = 100_000
#: ``batch`` values: lockstep seeds where the agent has a batched form (bit-identical results), or never.
BATCH_MODES = ("auto", "off")


@dataclass(frozen=True)
class EnvSpec:
    """One environment of an experiment: registered ``id``, result ``label`` and keyword arguments."""

    id: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    label: str = ""

    def __post_init__(self):
        if not isinstance(self.id, str) or not self.id:
            raise TypeError(f"env id must be a non-empty string, got {self.id!r}")
        if not isinstance(self.label, str):
            raise TypeError(f"env label must be a string, got {self.label!r}")
        if not self.label:
            object.__setattr__(self, "label", self.id)
        object.__setattr__(self, "kwargs", dict(self.kwargs))


@dataclass(frozen=True)
class AgentSpec:
    """One agent of an experiment: ``type``, result ``label`` and hyperparameters.

    ``type`` is a registry name (``dpbandit.agents.AGENTS``), ``"package.module:ClassName"``, or an Agent subclass
    (e.g. one defined in a notebook; parallel workers receive it pickled by value).
    """

    type: Any
    label: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        is_class = isinstance(self.type, type)
        if not is_class and (not isinstance(self.type, str) or not self.type):
            raise TypeError(f"agent type must be a non-empty string or an Agent subclass, got {self.type!r}")
        if not isinstance(self.label, str):
            raise TypeError(f"agent label must be a string, got {self.label!r}")
        if not is_class and ":" in self.type:
            from dpbandit.agents import check_import_path

            check_import_path(self.type)  # the form only: the module is imported by validate(), after the rest
        if not self.label:
            label = (getattr(self.type, "name", "") or self.type.__name__) if is_class else self.type
            object.__setattr__(self, "label", label)
        object.__setattr__(self, "params", dict(self.params))

    @property
    def type_name(self) -> str:
        """``type`` as text for manifests: the registry name or ``module:qualname`` of a class."""
        if isinstance(self.type, str):
            return self.type
        return f"{self.type.__module__}:{self.type.__qualname__}"


@dataclass(frozen=True)
class ExperimentConfig:
    """A whole experiment: environments × agents × seeds.

    Give one environment as ``env_id`` + ``env_kwargs`` or several as ``envs`` (a sequence of :class:`EnvSpec`).
    ``checkpoints`` is the number of recorded rounds (``None`` records every round). ``batch``: ``"auto"`` runs
    the seeds of an agent with a batched form (:mod:`dpbandit.agents.batched`) in lockstep, with results identical
    to seed-by-seed runs; ``"off"`` runs every seed alone.
    """

    env_id: str | None = None
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    agents: tuple[AgentSpec, ...] = ()
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    n_jobs: int = 1
    checkpoints: int | None = 100
    name: str = "experiment"
    out: str = "runs"
    envs: tuple[EnvSpec, ...] = ()
    batch: str = "auto"

    def __post_init__(self):
        if self.envs:
            single = self.envs[0] if len(self.envs) == 1 and isinstance(self.envs[0], EnvSpec) else None
            derived = single is not None and self.env_id == single.id and dict(self.env_kwargs) == single.kwargs
            if (self.env_id is not None or self.env_kwargs) and not derived:
                raise ValueError("give either env_id/env_kwargs (one environment) or envs (several), not both")
            envs = tuple(e if isinstance(e, EnvSpec) else _env_from_mapping(e, i) for i, e in enumerate(self.envs))
        else:
            if self.env_id is None:
                raise ValueError("an experiment needs an environment: env_id=... or envs=[...]")
            envs = (EnvSpec(self.env_id, self.env_kwargs),)
        _check_unique("env", [e.label for e in envs])
        object.__setattr__(self, "envs", envs)
        object.__setattr__(self, "env_id", envs[0].id if len(envs) == 1 else None)
        object.__setattr__(self, "env_kwargs", dict(envs[0].kwargs) if len(envs) == 1 else {})
        agents = tuple(a if isinstance(a, AgentSpec) else _agent_from_mapping(a, i) for i, a in enumerate(self.agents))
        if not agents:
            raise ValueError("agents must list at least one agent")
        _check_unique("agent", [a.label for a in agents])
        object.__setattr__(self, "agents", agents)
        object.__setattr__(self, "seeds", parse_seeds(self.seeds))
        check_n_jobs(self.n_jobs)
        check_choice("batch", self.batch, BATCH_MODES)
        if self.checkpoints is not None:
            check_int("checkpoints", self.checkpoints, low=2)
        check_run_name(self.name)
        if not isinstance(self.out, str) or not self.out:
            raise TypeError(f"out must be a non-empty path string, got {self.out!r}")

    def to_dict(self) -> dict:
        """A JSON-able dictionary in the TOML layout (round-trips through :meth:`from_dict`)."""
        return {
            "name": self.name,
            "seeds": list(self.seeds),
            "n_jobs": self.n_jobs,
            "batch": self.batch,
            "checkpoints": "all" if self.checkpoints is None else self.checkpoints,
            "out": self.out,
            "envs": [{"id": e.id, "label": e.label, **e.kwargs} for e in self.envs],
            "agents": [{"type": a.type_name, "label": a.label, **a.params} for a in self.agents],
        }

    def config_hash(self) -> str:
        """SHA-256 of everything that determines the results (not ``n_jobs``, ``batch`` or ``out``), including the
        contents of the data files environments read (``data = "path.csv"``): editing the file makes it a different
        experiment, so a resumed run never mixes jobs computed on different data; and the random streams' layout
        (:data:`~dpbandit.seeding.STREAM_LAYOUT`), so a run of an older layout is never resumed either."""
        data = {k: v for k, v in self.to_dict().items() if k not in ("n_jobs", "batch", "out")}
        data["stream_layout"] = STREAM_LAYOUT  # the same configuration draws other numbers under another layout
        files = {e.label: _file_digest(e.kwargs["data"]) for e in self.envs
                 if isinstance(e.kwargs.get("data"), (str, Path)) and Path(e.kwargs["data"]).is_file()}
        if files:  # absent otherwise: hashes of experiments without data files are unchanged
            data["data_sha256"] = files
        return config_digest(data)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ExperimentConfig":
        """Build from the TOML layout documented in this module."""
        if not isinstance(data, Mapping):
            raise TypeError(f"config must be a table/mapping, got {type(data).__name__}")
        unknown = sorted(set(data) - _TOP_KEYS)
        if unknown:
            raise ValueError(f"unknown config keys {unknown}; accepted keys are {sorted(_TOP_KEYS)}")
        if ("env" in data) == ("envs" in data):
            raise ValueError(
                "config needs exactly one of an [env] table (one environment) or [[envs]] tables (several), "
                'each with an \'id\' key, e.g. id = "dpbandit/SparseLinear-v0"'
            )
        envs = [data["env"]] if "env" in data else data["envs"]
        if not isinstance(envs, Sequence) or isinstance(envs, (str, bytes)) or not envs:
            raise ValueError("[[envs]] must be a non-empty list of tables with an 'id' key")
        agents = data.get("agents")
        if not isinstance(agents, Sequence) or isinstance(agents, (str, bytes)) or not agents:
            raise ValueError("config needs at least one [[agents]] table with a 'type' key")
        checkpoints = data.get("checkpoints", 100)
        if checkpoints == "all":
            checkpoints = None
        return cls(
            envs=tuple(_env_from_mapping(e, i) for i, e in enumerate(envs)),
            agents=tuple(_agent_from_mapping(a, i) for i, a in enumerate(agents)),
            seeds=data.get("seeds", 5),
            n_jobs=data.get("n_jobs", 1),
            batch=data.get("batch", "auto"),
            checkpoints=checkpoints,
            name=data.get("name", "experiment"),
            out=data.get("out", "runs"),
        )

    def replace(self, **changes: Any) -> "ExperimentConfig":
        """A copy with ``changes``; changing ``env_id``/``env_kwargs`` replaces the environment list."""
        if "env_id" in changes or "env_kwargs" in changes:
            changes = {"env_id": self.env_id, "env_kwargs": self.env_kwargs, **changes, "envs": ()}
        elif "envs" in changes:
            changes = {**changes, "env_id": None, "env_kwargs": {}}
        return dataclasses.replace(self, **changes)

    def validate(self) -> dict[tuple[int, int], tuple[type, int]]:
        """Build the environment and every agent once, so bad ids or hyperparameters fail before any job runs.

        Agents given as ``"package.module:ClassName"`` come last: their module is imported (its code runs) only
        after every environment and every other agent of the configuration has been validated. Returns, per
        (environment index, agent index), the agent's class and its memory estimate in bytes (a :class:`Built`:
        ``.horizons`` maps each environment index to its horizon T)."""
        from dpbandit.agents import make_agent

        built = {}

        horizons: dict[int, int] = {}
        imported = [isinstance(spec.type, str) and ":" in spec.type for spec in self.agents]
        for second_pass in (False, True):
            specs = [spec for spec, late in zip(self.agents, imported) if late == second_pass]
            if second_pass and not specs:
                break
            for e, env_spec in enumerate(self.envs):
                env = make_env(env_spec.id, **env_spec.kwargs)
                try:
                    horizons[e] = int(env.unwrapped.constants.horizon)
                    for spec in specs:
                        agent = make_agent(spec.type, env, **spec.params)
                        built[e, self.agents.index(spec)] = (type(agent), agent.memory_estimate())
                finally:
                    env.close()
        return Built(built, horizons)


class Built(dict):
    """What :meth:`ExperimentConfig.validate` built: (environment, agent) -> (agent class, memory estimate), and
    ``horizons``: environment index -> T."""

    def __init__(self, built: dict, horizons: dict[int, int]):
        super().__init__(built)
        self.horizons = dict(horizons)


def read_toml(path: str | Path, what: str = "config file") -> dict:
    """The table of a TOML file; ``ValueError`` naming the file when it is missing, a folder, not UTF-8 text or
    not valid TOML (an unreadable file is an ``OSError`` naming it)."""
    if not isinstance(path, (str, Path)) or not str(path):
        raise TypeError(f"{what} must be a path to a .toml file, got {path!r}")
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{what} {str(path)!r} is a folder, not a TOML file")
    if not path.is_file():
        raise ValueError(f"{what} {str(path)!r} does not exist")
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise ValueError(f"{what} {str(path)!r} is not a TOML file: it is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{what} {str(path)!r} is not valid TOML: {exc}") from None


def _check_unique(kind: str, labels: list[str]) -> None:
    duplicates = sorted({x for x in labels if labels.count(x) > 1})
    if duplicates:
        raise ValueError(f"{kind} labels must be unique; give each a distinct 'label', duplicated: {duplicates}")


def _env_from_mapping(data: Any, index: int) -> EnvSpec:
    if not isinstance(data, Mapping) or "id" not in data:
        raise ValueError(f"envs[{index}] must be a table with an 'id' key, got {data!r}")
    kwargs = {k: v for k, v in data.items() if k not in ("id", "label")}
    return EnvSpec(id=data["id"], kwargs=kwargs, label=data.get("label", ""))


def _agent_from_mapping(data: Any, index: int) -> AgentSpec:
    if isinstance(data, str):
        return AgentSpec(type=data)
    if not isinstance(data, Mapping) or "type" not in data:
        raise ValueError(f"agents[{index}] must be a table with a 'type' key, got {data!r}")
    params = {k: v for k, v in data.items() if k not in ("type", "label")}
    return AgentSpec(type=data["type"], label=data.get("label", ""), params=params)


def _file_digest(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def config_digest(data: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of ``data`` as canonical JSON (sorted keys; values JSON cannot hold by their ``repr``): the
    identity of an experiment in its run directory (:func:`dpbandit.experiment.results.prepare_run_dir`)."""
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=repr).encode()).hexdigest()


def parse_seeds(seeds: Any) -> tuple[int, ...]:
    """Seeds of an experiment: an int ``n`` in ``[1, MAX_SEEDS]`` means ``0..n-1``; a non-empty list/tuple of at most
    :data:`MAX_SEEDS` distinct integers ``>= 0`` is kept in its order. ``TypeError``/``ValueError`` naming ``seeds``
    otherwise, before any list is built."""
    if isinstance(seeds, bool):
        raise TypeError(f"seeds must be a positive integer or a list of integers >= 0, got {seeds!r}")
    if isinstance(seeds, int):
        try:
            n = check_int("seeds", seeds, low=1, high=MAX_SEEDS)
        except ValueError as exc:
            raise ValueError(f"{exc} (every seed is one job per agent, with its own files)") from None
        return tuple(range(n))
    if isinstance(seeds, (list, tuple)) and len(seeds) > MAX_SEEDS:
        raise ValueError(f"seeds must list at most {MAX_SEEDS} seeds (every seed is one job per agent, with its own "
                         f"files), got {len(seeds)}")
    if isinstance(seeds, (list, tuple)) and seeds:
        values = tuple(check_int(f"seeds[{i}]", s, low=0) for i, s in enumerate(seeds))
        if len(set(values)) != len(values):
            raise ValueError(f"seeds must not repeat, got {list(values)}")
        return values
    raise TypeError(f"seeds must be a positive integer or a non-empty list of integers >= 0, got {seeds!r}")


def load_config(path: str | Path) -> ExperimentConfig:
    """Read and validate a TOML experiment file (see the module docstring for the layout)."""
    data = read_toml(path)
    path = Path(path)
    for env in [data.get("env")] + list(data.get("envs") or []):  # a data file is found next to the TOML file
        if isinstance(env, dict) and isinstance(env.get("data"), str) and not Path(env["data"]).is_absolute():
            beside = path.parent / env["data"]
            if beside.is_file():
                env["data"] = str(beside.resolve())
    return ExperimentConfig.from_dict(data)
