"""The shipped reference results of the built-in private agents, and whether they are still valid.

``references/<size>.csv`` holds, per (scenario, agent label, seed), the final row of the job (the runner's tidy
columns at t = T) and its CPU seconds: uniform random play and every built-in private agent at every epsilon of the
scenario's grid and at ``epsilon = inf``. ``references/<size>.json`` says what made them: the suite, the dpbandit
version, per scenario and agent the config hash of the experiment that made its rows (:func:`reference_experiment`),
the seeds, the agents' privacy reports and the
agents each scenario refused (with the reason), the machine's load and the command.

``dpbandit bench --agent mypkg.mine:Mine`` runs only the new agent and reads the built-in rows from here: the same
seeds give the same users (common random numbers), so its ratios to random play are paired exactly as if random
play had run beside it. A reference is *stale* when the suite, an agent's config hash or the dpbandit version no
longer match, or a built-in private agent is missing from it (:func:`reference_problems`; a test fails then);
regenerate it with :data:`COMMAND`. A bench with ``--agent`` reads a reference that lacks a newly registered
built-in agent (that agent's rows are simply absent), never one with a changed row.
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


def reference_experiment(scenario: str, size: str, agent: str = "random"):
    """The experiment whose results the reference holds for one ``agent`` of ``scenario`` at ``size`` (its config
    hash identifies them): a built-in private agent over the scenario's grid and noise off, or uniform random play
    (``"random"``). One hash per agent, so a newly registered built-in agent leaves the other rows valid."""
    sc = load_scenario(scenario)
    if agent == "random":
        return sc.experiment({}, size)
    return sc.experiment({agent: agent}, size, references=())


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


def reference_problems(size: str, reference: Reference | None = None, *, missing_ok: bool = False) -> list[str]:
    """Why the reference of ``size`` is not current (empty: it is): none shipped, another suite or dpbandit version,
    a scenario missing, an agent's experiment changed (config hash), or (unless ``missing_ok``) a built-in private
    agent it does not hold."""
    from dpbandit import __version__

    reference = load_reference(size) if reference is None else reference
    if reference is None:
        return [f"no {size} reference is shipped"]
    meta, problems = reference.meta, []
    if meta.get("suite") != suite_name():
        problems.append(f"it was made for suite {meta.get('suite')!r}, this is {suite_name()!r}")
    if reference.version != __version__:
        problems.append(f"it was made by dpbandit {reference.version}, this is dpbandit {__version__}")
    recorded, missing = meta.get("scenarios", {}), set()
    for name in scenario_names():
        hashes = recorded.get(name, {}).get("config_hashes")
        if not hashes or "random" not in hashes:
            problems.append(f"scenario {name!r} is missing")
            continue
        for agent, digest in hashes.items():
            now = reference_experiment(name, size, agent).config_hash()
            if digest != now:
                problems.append(f"scenario {name!r}, agent {agent!r} changed (config hash {str(digest)[:12]} != "
                                f"{now[:12]})")
        refused = {key.split(" / ", 1)[1] for key in reference.refused() if key.startswith(f"{name} / ")}
        missing |= set(builtin_agents()) - set(hashes) - refused
    if missing and not missing_ok:
        problems.append(f"built-in private agent(s) {sorted(missing)} are not in it")
    return problems
