"""Private agents: a curator that touches data and an action rule that does not.

Joint differential privacy (JDP) in a contextual bandit rests on the billboard argument (Shariff & Sheffet 2018;
``spec/han-frank-wolfe.md`` §6, ``spec/private-oco-learners.md`` §7): if the parameters an agent publishes are
(ε, δ)-DP with respect to every user's data, and the action for user t is a function of the latest publication and
user t's *own* context only, then the actions of all other users are (ε, δ)-DP in user t's data.

dpbandit makes that structure explicit:

* :class:`Curator` sees the raw (observation, arm, reward) of each served user, owns the mechanisms and the privacy
  ledger, and publishes a *release* (read-only arrays) only through its mechanisms.
* ``PrivateAgent.action_rule`` is a **static** function of ``(release, observation, rng)``: it cannot reach the
  curator, the history or any other user's data, and ``rng`` is the exploration stream (never the privacy stream).

A private agent subclasses :class:`PrivateAgent`, implements ``_make_curator`` and the static ``action_rule``, and
reports its guarantee through ``privacy_report()``.
"""

from __future__ import annotations

import abc
import inspect
from typing import Any

import numpy as np

from dpbandit.agents.base import Agent
from dpbandit.seeding import stream

__all__ = ["Curator", "PrivateAgent", "check_context_bound"]


class Curator(abc.ABC):
    """The data-touching half of a private agent.

    ``observe`` receives one served user's data; ``release`` returns the latest published parameters, which must be
    a function of the mechanisms' noisy outputs only (post-processing) and must not alias mutable internal state.
    """

    @abc.abstractmethod
    def observe(self, observation: np.ndarray, arm: int, reward: float) -> None:
        """Take the data of the user just served: its (K, d) observation, the arm played and the reward."""

    @abc.abstractmethod
    def release(self) -> Any:
        """The latest publication (read-only arrays or an immutable record)."""

    @abc.abstractmethod
    def privacy_report(self):
        """The :class:`~dpbandit.privacy.report.PrivacyReport` of the whole release stream."""


class PrivateAgent(Agent):
    """An agent whose actions depend on data only through a curator's releases (JDP by construction).

    Subclasses implement ``_make_curator(privacy_rng)`` and a ``@staticmethod action_rule(release, observation,
    rng) -> int``.
    """

    private = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        rule = inspect.getattr_static(cls, "action_rule", None)
        if rule is not None and not isinstance(rule, staticmethod):
            raise TypeError(
                f"{cls.__name__}.action_rule must be a @staticmethod of (release, observation, rng): the action "
                "rule may not see the agent (and through it the curator's raw data)"
            )

    @abc.abstractmethod
    def _make_curator(self, privacy_rng: np.random.Generator) -> Curator:
        """A fresh curator drawing its noise from ``privacy_rng``."""

    @staticmethod
    @abc.abstractmethod
    def action_rule(release: Any, observation: np.ndarray, rng: np.random.Generator) -> int:
        """The arm for the current user, from the latest release and this user's own observation only."""

    def reset(self, seed: int | None = None) -> None:
        self._privacy_seed = seed
        super().reset(seed)

    def _reset_state(self) -> None:
        self.curator = self._make_curator(stream(getattr(self, "_privacy_seed", 0), "privacy"))
        self._release = self.curator.release()

    def act(self, observation: np.ndarray) -> int:
        return type(self).action_rule(self._release, observation, self.rng)

    def update(self, observation: np.ndarray, arm: int, reward: float, info: dict) -> None:
        self.curator.observe(observation, arm, reward)
        self._release = self.curator.release()

    def privacy_report(self):
        return self.curator.privacy_report()


def check_context_bound(observation: np.ndarray, norm: str, bound: float, *, rtol: float = 1e-9) -> None:
    """Raise ``ValueError`` if a row of ``observation`` exceeds the declared norm bound the calibration assumed."""
    obs = np.asarray(observation, dtype=float)
    norms = np.abs(obs).max(axis=-1) if norm == "linf" else np.sqrt((obs * obs).sum(axis=-1))
    worst = float(norms.max())
    if worst > bound * (1.0 + rtol):
        raise ValueError(
            f"observation has a feature vector with ||x||_{norm[1:]} = {worst:.6g} > context_bound = {bound:g}: the "
            "privacy calibration assumes the declared bound; clip contexts in the environment (normalize='clip')"
        )
