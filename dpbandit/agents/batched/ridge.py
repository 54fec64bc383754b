"""Batched LinUCB and greedy: S seeds' ridge states stacked into (S, M, d+1, d) buffers (issue 15).

Each seed's :class:`~dpbandit.agents.ridge.RidgeState` is re-pointed at its slice of the stacked buffers, so the agent
objects stay the live state. LinUCB's scores and every ridge update run the single path's compiled kernels over the
seed axis (:func:`~dpbandit.agents.linucb.ucb_scores_stack`,
:func:`~dpbandit.agents.ridge.sherman_morrison_stack`), greedy's scores the single path's numpy products over the
stack, hence the same floating-point results. Anything a check could refuse goes seed by seed through the single
path, with its errors. Large models decline (:data:`_SEQUENTIAL_ABOVE`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpbandit.agents.baselines import Greedy, check_arm
from dpbandit.agents.batched import BATCHED_FORMS, argmax_random_tie_rows, choose_rows
from dpbandit.agents.linucb import LinUCB, ucb_scores_stack
from dpbandit.agents.ridge import sherman_morrison_stack

__all__ = ["BatchedRidge"]

#: Agents whose ridge buffers hold more floats than this (d >~ 55 at K = 10) run seed by seed: their round is
#: O(K d^2) per seed either way, and lockstep only streams every seed's buffers through the cache (measured 0.5x
#: at d = 200, ``benchmarks/batch_benchmark.py``).
_SEQUENTIAL_ABOVE = 2**15


class BatchedRidge:
    """LinUCB (``alpha`` of the agents) or greedy (scores: the ridge prediction) over S seeds."""

    def __init__(self, agents: Sequence[LinUCB | Greedy]):
        self.agents = list(agents)
        self.rngs = [a.rng for a in agents]
        self.linucb = isinstance(agents[0], LinUCB)
        self.alpha = agents[0].alpha if self.linucb else 0.0
        S, K, d = len(agents), agents[0].n_arms, agents[0].dim
        self.shape, self.d = (S, K, d), d
        self.disjoint = agents[0].constants.structure == "disjoint"
        # (S, M, d+1, d) buffers, (S, M, d) response sums, (S, M) counts; each agent's ridge state views its slice
        self.W, self.B, self.C = (np.stack([getattr(a.ridge, n) for a in agents]) for n in ("W", "_b", "counts"))
        for s, a in enumerate(agents):
            a.ridge.W, a.ridge._b, a.ridge.counts = self.W[s], self.B[s], self.C[s]
        self.scores, self.best, self.ties = np.empty((S, K)), np.empty(S, dtype=np.intp), np.empty(S, dtype=np.intp)

    @classmethod
    def build(cls, agents) -> "BatchedRidge | None":
        return None if agents[0].ridge.W.size > _SEQUENTIAL_ABOVE else cls(agents)

    def act(self, obs: np.ndarray) -> np.ndarray:
        X = np.asarray(obs, dtype=float)
        if X.shape != self.shape:  # the single path's error
            return np.array([a.act(x) for a, x in zip(self.agents, X)], dtype=np.intp)
        if not self.linucb:
            return argmax_random_tie_rows(self._predictions(X), self.rngs)
        ucb_scores_stack(self.W, X, self.alpha, self.scores, self.best, self.ties)
        return choose_rows(self.scores, self.best, self.ties, self.rngs)

    def _predictions(self, X: np.ndarray) -> np.ndarray:
        """:meth:`RidgeState.predict` of every seed: X (S, K, d) -> (S, K)."""
        d = self.d
        if self.disjoint:
            return np.einsum("skd,skd->sk", X, self.W[:, :, d, :])
        return np.stack([x @ w[0, d] for x, w in zip(X, self.W)])  # per seed: the single path's product

    def update(self, obs: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        """:meth:`RidgeState.update` of every seed: model ``m[s]`` of seed s gets ``(obs[s, arms[s]], rewards[s])``."""
        if not (obs.shape == self.shape and obs.dtype == np.float64 and arms.dtype.kind in "iu"
                and rewards.dtype == np.float64 and sherman_morrison_stack(self.W, self.B, self.C, obs, arms, rewards)):
            for arm in arms.tolist():  # the single path's errors, before any seed learns
                check_arm(arm, self.shape[1])
            for a, x, arm, r in zip(self.agents, obs, arms.tolist(), rewards.tolist()):
                a.update(x, arm, r, {})


BATCHED_FORMS[LinUCB] = BatchedRidge.build
BATCHED_FORMS[Greedy] = BatchedRidge.build
