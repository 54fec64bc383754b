"""The shipped reference results of the built-in private agents, and whether they are still valid.

``references/<size>.csv`` holds, per (scenario, agent label, seed), the final row of the job (the runner's tidy
columns at t = T) and its CPU seconds: uniform random play and every built-in private agent at every epsilon of the
scenario's grid and at ``epsilon = inf``. ``references/<size>.json`` says what made them: the suite, the dpbandit
version, per scenario the config hash of the experiment that ran (:meth:`Scenario.experiment` with every built-in
private agent and random play, :func:`reference_experiment`), its seeds, the agents' privacy reports and the
agents each scenario refused (with the reason), the machine's load and the command.

``dpbandit bench --agent mypkg.mine:Mine`` runs only the new agent and reads the built-in rows from here: the same
seeds give the same users (common random numbers), so its ratios to random play are paired exactly as if random
play had run beside it. A reference is *stale* when the suite, a scenario's config hash or the dpbandit version no
longer match (:func:`reference_problems`; a test fails then); regenerate it with :data:`COMMAND`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

import pandas as pd

from dpbandit.files import _EXACT_CSV

from dpbandit.experiment.bench.suite import load_scenario, scenario_names, suite_name

__all__ = ["COMMAND", "FINAL_COLUMNS", "Reference", "builtin_agents", "load_reference", "reference_experiment",
           "reference_problems"]

#: The one command that regenerates the shipped reference of a size.
COMMAND = "python -m dpbandit.experiment.bench.make_references --size {size}"
#: Columns of a reference table (and of a bench run's ``finals.csv``, which adds ``source``).
FINAL_COLUMNS = ("scenario", "agent", "stem", "epsilon", "seed", "horizon", "reward", "regret", "cumulative_reward",
                 "cumulative_regret", "cpu_seconds")


def builtin_agents() -> tuple[str, ...]:
    """The built-in private agents the suite scores by default: the registered private agents with an ``epsilon``
    to sweep whose guarantee type does not follow a learner (:func:`dpbandit.experiment.frontier.private_agents`;
    ``oco`` is scored with ``--agent oco``)."""
    from dpbandit.agents import AGENTS
    from dpbandit.experiment.frontier import private_agents

    return tuple(name for name in private_agents() if AGENTS[name].__module__.startswith("dpbandit."))


def reference_experiment(scenario: str, size: str):
    """The experiment whose results the reference of ``scenario`` at ``size`` holds (its config hash identifies it):
    every built-in private agent over the scenario's grid and noise off, and uniform random play."""
    return load_scenario(scenario).experiment({name: name for name in builtin_agents()}, size)


@dataclass(frozen=True)
class Reference:
    """A shipped reference: ``finals`` (:data:`FINAL_COLUMNS`) and ``meta`` (the JSON record)."""

    size: str
    finals: pd.DataFrame
    meta: dict

    @property
    def version(self) -> str:
        return str(self.meta.get("dpbandit"))

    def privacy(self) -> dict[str, Any]:
        """``"scenario / label"`` -> privacy report dict (None: not private)."""
        return dict(self.meta.get("privacy", {}))

    def refused(self) -> dict[str, str]:
        """``"scenario / agent"`` -> the line the agent refused the scenario with."""
        return dict(self.meta.get("refused", {}))


def _files(size: str):
    folder = resources.files(__package__).joinpath("references")
    return folder.joinpath(f"{size}.csv"), folder.joinpath(f"{size}.json")


def load_reference(size: str) -> Reference | None:
    """The shipped reference of ``size`` (None when none is shipped)."""
    table, record = _files(size)
    if not (table.is_file() and record.is_file()):
        return None
    with table.open("rb") as f:
        finals = pd.read_csv(f, **_EXACT_CSV)  # floats read back exactly
    return Reference(size, finals, json.loads(record.read_text(encoding="utf-8")))


def reference_problems(size: str, reference: Reference | None = None) -> list[str]:
    """Why the reference of ``size`` cannot be used (empty: it is current): missing, another suite, another
    dpbandit version, or a scenario whose experiment (config hash) changed or is missing."""
    from dpbandit import __version__

    reference = load_reference(size) if reference is None else reference
    if reference is None:
        return [f"no {size} reference is shipped"]
    meta, problems = reference.meta, []
    if meta.get("suite") != suite_name():
        problems.append(f"it was made for suite {meta.get('suite')!r}, this is {suite_name()!r}")
    if reference.version != __version__:
        problems.append(f"it was made by dpbandit {reference.version}, this is dpbandit {__version__}")
    recorded = meta.get("scenarios", {})
    for name in scenario_names():
        if name not in recorded:
            problems.append(f"scenario {name!r} is missing")
        elif recorded[name].get("config_hash") != reference_experiment(name, size).config_hash():
            problems.append(f"scenario {name!r} changed (config hash {str(recorded[name].get('config_hash'))[:12]} "
                            f"!= {reference_experiment(name, size).config_hash()[:12]})")
    return problems
