"""Batched forms of agents: the agents of S seeds advanced in lockstep, bit-identical per seed (issue 15).

A batched form drives the S per-seed instances of one agent class (each built for its seed's environment and reset
with its seed, so each holds its own exploration and privacy streams) as one policy::

    policy = batched_form(agents)            # None: no batched form (run the seeds one by one)
    arms = policy.act(obs)                   # obs (S, K, d) float64 -> (S,) intp
    policy.update(obs, arms, rewards)        # the round just played; rewards (S,) float64

The contract, checked by ``tests/agents/test_batched.py`` for every form: for each seed s, the arm chosen and the
state reached are *bit for bit* those of ``agents[s].act(obs[s])`` and ``agents[s].update(obs[s], arms[s],
rewards[s], info)`` (so :func:`~dpbandit.experiment.batch.simulate_batch` reproduces ``simulate`` exactly), every
random number is drawn from seed s's own generators in the single-seed order, and after the run ``agents[s]`` holds
the state and privacy ledger a single-seed run leaves (``agents[s].privacy_report()`` is unchanged). What is batched
is array work with the same per-matrix operations and operand layouts; whatever has no bitwise-equal batched numpy
form stays per seed.

While a form drives them, the per-seed agents are the form's: step them only through it. A form may keep what
``act`` reads stacked and give each agent its own copy only at the horizon (DP-UCB and DP-HDB do).

``obs`` may be a read-only broadcast view (disjoint environments show one context on every arm, stride 0) and stays
valid after the environments move on. Bandit forms never see ``info``: the batched agents are bandit agents.

Forms are registered by the agent's exact class in :data:`BATCHED_FORMS` (subclasses change behaviour and are
refused). A form's ``build(agents)`` may return None where lockstep does not pay (e.g. models too large to stay in
cache): the seeds then run one by one, with the same results.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from dpbandit.agents.base import Agent
from dpbandit.agents.baselines import argmax_random_tie

__all__ = ["BatchedPolicy", "BATCHED_FORMS", "batched_form", "has_batched_form", "argmax_random_tie_rows",
           "choose_rows"]


class BatchedPolicy(Protocol):
    """S seeds' agents as one policy (see the module docstring for the contract)."""

    def act(self, obs: np.ndarray) -> np.ndarray:
        """(S, K, d) -> (S,) arms."""

    def update(self, obs: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        """Learn from the round just played."""


#: Agent class -> builder of its batched form from the per-seed agents (None: run seed by seed).
BATCHED_FORMS: dict[type, Callable[[Sequence[Agent]], BatchedPolicy | None]] = {}


def _register_forms() -> None:
    from dpbandit.agents.batched import (
        dp_hdb,  # noqa: F401
        dp_ucb,  # noqa: F401
        episodic,  # noqa: F401
        ridge,  # noqa: F401  (each module registers its forms)
    )


def has_batched_form(cls: type) -> bool:
    """Whether agents of exactly this class have a batched form."""
    _register_forms()
    return cls in BATCHED_FORMS


def batched_form(agents: Sequence[Agent]) -> BatchedPolicy | None:
    """The batched form of ``agents`` (one class, one instance per seed, already reset), or None when the class has
    none or its form declines (then run the seeds one by one)."""
    if not agents:
        raise ValueError("agents must hold at least one agent")
    cls = type(agents[0])
    if any(type(a) is not cls for a in agents):
        raise TypeError("agents must all be instances of one class")
    _register_forms()
    build = BATCHED_FORMS.get(cls)
    return None if build is None else build(agents)


def argmax_random_tie_rows(scores: np.ndarray, rngs: Sequence[np.random.Generator]) -> np.ndarray:
    """:func:`~dpbandit.agents.baselines.argmax_random_tie` row by row: (S, K) -> (S,) intp; the generator of a row
    is consumed only when that row has a tie (as in the single-seed call)."""
    best = scores.argmax(axis=1)
    ties = (scores == scores[np.arange(len(best)), best][:, None]).sum(axis=1)  # 0 for a row with a NaN
    return choose_rows(scores, best, ties, rngs)


def choose_rows(scores: np.ndarray, best: np.ndarray, ties: np.ndarray,
                rngs: Sequence[np.random.Generator]) -> np.ndarray:
    """The arms (S,) from a kernel's per-row ``best`` and ``ties`` (:func:`~dpbandit.agents.baselines.best_and_ties`)
    of ``scores`` (S, K): ``best`` where it is the only largest score, else the single path's
    :func:`~dpbandit.agents.baselines.argmax_random_tie` with the row's own generator (ties at random, NaN refused)."""
    arms = best.copy()
    counts = ties.tolist()
    if counts.count(1) != len(counts):  # (a Python count: the common case, no tie, costs no numpy call)
        for s in np.flatnonzero(ties != 1):
            arms[s] = argmax_random_tie(scores[s], rngs[s])
    return arms
