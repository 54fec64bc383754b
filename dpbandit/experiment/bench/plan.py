"""What a bench will run, checked before any work: every scenario's experiment (agents built once on it: a refusal
is listed with its line, an agent without a noise-off form runs without it), the shipped reference it reads, its
seeds, and the planned work with its estimated time (CPU per round from the shipped reference, else timed rounds)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dpbandit.experiment.bench.references import COMMAND, builtin_agents, load_reference, reference_problems
from dpbandit.experiment.bench.suite import CHECKPOINTS, load_scenario, suite_name
from dpbandit.experiment.config import ExperimentConfig, make_env

if TYPE_CHECKING:  # the runner imports this module
    from dpbandit.experiment.bench.runner import BenchConfig

__all__ = ["Cell", "plan_cells", "plan_line", "reference_for", "seeds_for", "agent_stem"]


def agent_stem(agent: Any) -> str:
    """The label stem of an agent given as a registry name, ``"module:Class"`` or a class."""
    if isinstance(agent, type):
        return getattr(agent, "name", "") or agent.__name__
    return str(agent)


@dataclass
class Cell:
    """One scenario's plan: its experiment (None when nothing runs here) and what was refused before any work."""

    scenario: Any
    config: ExperimentConfig | None
    labels: dict[str, tuple[str, float]]
    refused: dict[str, str]
    noise_off: dict[str, str]


def _candidates(bc: BenchConfig) -> list[tuple[str, Any, bool]]:
    """(stem, type, has an epsilon) of every agent to run; non-private agents are refused."""
    from dpbandit.agents import agent_class, hyperparameters

    out = []
    for agent in bc.agents or builtin_agents():
        cls = agent_class(agent)
        if not getattr(cls, "private", False):
            raise ValueError(f"agent {agent_stem(agent)!r} is not private: the bench scores private agents (uniform random "
                             "play is its reference)")
        out.append((agent_stem(agent), agent, "epsilon" in hyperparameters(agent)))
    return out


def _try(agent_type: Any, env: Any, params: dict) -> str:
    """'' when the agent builds on ``env`` with ``params``, else its one-line refusal."""
    from dpbandit.agents import make_agent

    try:
        make_agent(agent_type, env, **params)
    except (ValueError, TypeError) as exc:
        return " ".join(str(exc).split())
    return ""


def plan_cells(bc: BenchConfig, seeds_of) -> list[Cell]:
    """Every scenario's experiment, after building each agent once at its first epsilon and noise off (an agent
    that refuses a scenario is listed with its line, not run; one without a noise-off form runs without it)."""
    candidates = _candidates(bc)
    cells = []
    for name in bc.scenarios:
        sc = load_scenario(name)
        size = sc.size(bc.size)
        grid = bc.epsilons or size.epsilons
        env_spec = sc.env_spec(bc.size)
        env = make_env(env_spec.id, **env_spec.kwargs)
        specs, labels, refused, noise_off = [], {}, {}, {}
        try:
            for stem, agent_type, has_eps in candidates:
                params = dict(sc.agent_params.get(stem, {}))
                why = _try(agent_type, env, {**params, "epsilon": grid[0]} if has_eps else params)
                if why:
                    refused[stem] = why
                    continue
                off = _try(agent_type, env, {**params, "epsilon": math.inf}) if has_eps else \
                    "the agent has no epsilon hyperparameter"
                if off:
                    noise_off[stem] = off
                for spec in sc.agent_specs(stem, agent_type, grid if has_eps else (), noise_off=has_eps and not off):
                    specs.append(spec)
                    labels[spec.label] = (stem, float(spec.params.get("epsilon", math.nan)))
        finally:
            env.close()
        if not bc.reads_reference:
            specs += sc.agent_specs("random", "random", (), noise_off=False)
            labels["random"] = ("random", math.inf)
        config = None if not specs else ExperimentConfig(
            envs=(env_spec,), agents=tuple(specs), seeds=seeds_of(name, size.seeds), n_jobs=bc.n_jobs,
            checkpoints=CHECKPOINTS, name=name)
        cells.append(Cell(sc, config, labels, refused, noise_off))
    if all(c.config is None for c in cells):
        first = next(iter(cells[0].refused.values()), "") if cells else ""
        raise ValueError(f"every agent refused every scenario of the bench; first refusal: {first}")
    return cells


def reference_for(bc: BenchConfig):
    """The shipped reference a bench with ``agents`` reads (None without ``agents`` or with ``use_reference=False``);
    ``ValueError`` naming why and the command that regenerates it when it is stale or missing."""
    if not bc.reads_reference:
        return None
    problems = reference_problems(bc.size, missing_ok=True)
    if problems:
        raise ValueError(f"the shipped {bc.size} reference cannot be used: {'; '.join(problems)}; regenerate it with "
                         f"'{COMMAND.format(size=bc.size)}', or pass --no-reference to run uniform random play in "
                         "this run (without the built-in agents' rows)")
    return load_reference(bc.size)


def seeds_for(bc: BenchConfig, reference):
    """``seeds(scenario, default) -> n``: the seeds of a scenario (``bc.seeds`` or the size's), at most the
    reference's (``ValueError`` otherwise: its rows exist only for its seeds)."""
    def seeds(scenario: str, default: int) -> int:
        n = bc.seeds or default
        if reference is not None:
            have = int(reference.meta["scenarios"][scenario]["seeds"])
            if n > have:
                raise ValueError(f"--seeds {n}: the shipped {bc.size} reference of scenario {scenario!r} has {have} "
                                 "seeds; use at most that many, or --no-reference to run uniform random play here")
        return n
    return seeds


def plan_line(bc: BenchConfig, cells: list[Cell], reference) -> tuple[str, float | None]:
    """The planned work and its estimated time: CPU seconds per round from the shipped reference of this size (or
    the quick one, scaled by the rounds), for agents it has; others are timed for a few hundred rounds."""
    from dpbandit.experiment.planning import calibrate, duration

    ref = reference or load_reference(bc.size) or load_reference("quick")
    per_round = {}
    if ref is not None:
        f = ref.finals
        per_round = (f["cpu_seconds"] / f["horizon"]).groupby([f["scenario"], f["stem"]]).mean().to_dict()
    jobs = rounds = 0
    seconds, any_timed = 0.0, False
    for cell in cells:
        if cell.config is None:
            continue
        n, T = len(cell.config.seeds), int(cell.config.envs[0].kwargs["horizon"])
        jobs += len(cell.config.agents) * n
        rounds += len(cell.config.agents) * n * T
        timed = {}
        for a, spec in enumerate(cell.config.agents):
            stem = cell.labels[spec.label][0]
            if (cell.scenario.name, stem) not in per_round and stem not in timed:
                timed[stem], any_timed = calibrate(cell.config, 0, a, budget=0.3), True
            seconds += per_round.get((cell.scenario.name, stem), timed.get(stem, 0.0)) * n * T
    workers = max(1, bc.n_jobs)
    n_run = sum(c.config is not None for c in cells)
    line = (f"bench {suite_name()} {bc.size}: {n_run} scenario{'s' * (n_run > 1)}, {jobs:,} jobs, "
            f"{rounds:,} rounds; about {duration(seconds / workers)} of work with {workers} parallel "
            f"job{'s' * (workers > 1)} (time per round from "
            f"{', '.join(w for w, used in (('the shipped reference', per_round), ('timed rounds', any_timed)) if used)})")
    return line, seconds / workers


