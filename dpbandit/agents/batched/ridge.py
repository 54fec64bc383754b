"""Batched LinUCB and greedy: S seeds' ridge states stacked into (S, M, d+1, d) buffers (issue 15).

Each seed's :class:`~dpbandit.agents.ridge.RidgeState` is re-pointed at its slice of the stacked buffers, so the agent
objects stay the live state. The scores and every ridge update run the single path's compiled kernels over the
seed axis (:func:`~dpbandit.agents.linucb.ucb_scores_stack`, :func:`_means_stack`,
:func:`~dpbandit.agents.ridge.sherman_morrison_stack`), hence the same floating-point results; ties are broken with
each seed's own round uniform (:mod:`dpbandit.agents.draws`, taken every round as the single path does). Anything a
check could refuse goes seed by seed through the single path, with its errors. Large models decline
(:data:`_SEQUENTIAL_ABOVE`). This form serves environments that do not hand out blocks: on the GLM bandits LinUCB
and greedy play blocks (:mod:`dpbandit.experiment.loop`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpbandit.agents.baselines import Greedy, check_arm
from dpbandit.agents.batched import BATCHED_FORMS
from dpbandit.agents.draws import choose_tie
from dpbandit.agents.linucb import LinUCB, ucb_scores_stack
from dpbandit.agents.ridge import ridge_means, sherman_morrison_stack
from dpbandit.compiled import kernel

__all__ = ["BatchedRidge"]

#: Agents whose ridge buffers hold more floats than this (d >~ 55 at K = 10) run seed by seed: their round is
#: O(K d^2) per seed either way, and lockstep only streams every seed's buffers through the cache (measured 0.5x
#: at d = 200, ``benchmarks/batch_benchmark.py``).
_SEQUENTIAL_ABOVE = 2**15


class BatchedRidge:
    """LinUCB (``alpha`` of the agents) or greedy (scores: the ridge prediction) over S seeds."""

    def __init__(self, agents: Sequence[LinUCB | Greedy]):
        self.agents = list(agents)
        self.linucb = isinstance(agents[0], LinUCB)
        self.alpha = agents[0].alpha if self.linucb else 0.0
        S, K, d = len(agents), agents[0].n_arms, agents[0].dim
        self.shape = (S, K, d)
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
        u = [a.draws.next()[0] for a in self.agents]  # every seed's uniform of the round, used on a tie
        if self.linucb:
            ucb_scores_stack(self.W, X, self.alpha, self.scores, self.best, self.ties)
        else:
            _means_stack(self.W, X, self.scores, self.best, self.ties)
        arms = self.best.copy()
        counts = self.ties.tolist()
        if counts.count(1) != len(counts):  # (a Python count: the common case, no tie, costs no numpy call)
            for s in np.flatnonzero(self.ties != 1):
                arms[s] = choose_tie(self.scores[s], int(self.best[s]), counts[s], u[s])
        return arms

    def update(self, obs: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        """:meth:`RidgeState.update` of every seed: model ``m[s]`` of seed s gets ``(obs[s, arms[s]], rewards[s])``."""
        if not (obs.shape == self.shape and obs.dtype == np.float64 and arms.dtype.kind in "iu"
                and rewards.dtype == np.float64 and sherman_morrison_stack(self.W, self.B, self.C, obs, arms, rewards)):
            for arm in arms.tolist():  # the single path's errors, before any seed learns
                check_arm(arm, self.shape[1])
            for a, x, arm, r in zip(self.agents, obs, arms.tolist(), rewards.tolist()):
                a.update(x, arm, r, {})


@kernel
def _means_stack(W, X, out, best, ties):
    """:func:`~dpbandit.agents.ridge.ridge_means` of every seed: W (S, M, d+1, d), X (S, K, d), out (S, K); each
    seed's ``(best, ties)`` into ``best`` and ``ties`` (S,)."""
    for s in range(W.shape[0]):
        best[s], ties[s] = ridge_means(W[s], X[s], out[s])


BATCHED_FORMS[LinUCB] = BatchedRidge.build
BATCHED_FORMS[Greedy] = BatchedRidge.build
