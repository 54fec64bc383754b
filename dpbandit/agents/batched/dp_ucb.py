"""Batched DP-UCB: S seeds' curators and action rules advanced together, bit-identical per seed (issue 15).

Per seed, because it draws that seed's noise or has no bitwise-equal batched form: each curator's checks
(:meth:`~dpbandit.agents.dp_ucb.DPUCBCurator.stage`), each tree node's noise (drawn by the tree's own noise from the
seed's own privacy stream, inside :class:`~dpbandit.privacy.tree.TreeStack`), the LAPACK ``potrs`` / ``trtrs``
solves and their dot products. Batched, with the same operations on a leading seed axis: the packed items
(:meth:`~dpbandit.privacy.packed.PackedLayout.pack_outers`), the trees' path sums (``TreeStack``), the unpacking of
the releases into V_t (:func:`~dpbandit.agents.dp_ucb.unpack_gram`), the disjoint form's Cholesky factorisations
(one ``numpy.linalg.cholesky`` call on the (S M, d, d) stack: numpy factorises matrix by matrix with the same LAPACK
call as the single path's (M, d, d) call; a stack that is not positive definite somewhere is refactored seed by seed
exactly as the single path does), the disjoint means (one einsum, equal to the per-seed one) and the tie-broken
argmax. One-matrix factorisations (the shared form; the noise-off disjoint form refactors only the played arm) call
LAPACK ``potrf`` directly in the single path and stay per seed. Each curator and agent holds its own release after
every round, so ``privacy_report`` and any later single-seed step are those of a single-seed run.

Measured (``benchmarks/batch_benchmark.py --agents dp_ucb --env dpbandit/HanFigure51-K2-v0 --horizon 10000``, 16
seeds, load ~1): 1.9x the single seed's rounds per second; what stays is mostly inherent per seed: K (d+1)(d+2)/2
normal draws and K Cholesky factorisations per round.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.linalg import lapack

from dpbandit.agents.batched import BATCHED_FORMS, argmax_random_tie_rows
from dpbandit.agents.dp_ucb import DPUCB, unpack_gram
from dpbandit.agents.dp_ucb_release import factor, ucb_scores
from dpbandit.privacy.tree import TreeStack

__all__ = ["BatchedDPUCB"]


class BatchedDPUCB:
    """DP-UCB over S seeds (module docstring); the agents must share one calibration and be at the same round."""

    def __init__(self, agents: Sequence[DPUCB]):
        self.agents = list(agents)
        self.curators = [a.curator for a in agents]
        self.rngs = [a.rng for a in agents]
        self.cal = cal = agents[0].cal
        self.batch_factor = cal.n_models > 1 and cal.sigma_n > 0  # every model refactored every round
        S, d, M = len(agents), cal.dim, cal.n_models
        # stacked state that each seed's curator views: V_t's lower triangles, the staged tree items, the tree paths
        self.V = np.stack([c._V for c in self.curators])  # (S, M, d, d)
        self.items = np.stack([c._item for c in self.curators])  # (S, M, P)
        self.v = np.stack([c._v for c in self.curators])  # (S, d+1): each user's [x; clipped y]
        for s, c in enumerate(self.curators):
            c._V, c._item, c._v = self.V[s], self.items[s], self.v[s]
        self.rows = np.arange(S)
        self.trees = TreeStack([c._tree for c in self.curators])
        self.stack = self.V.reshape(S * M, d, d)
        self.layout = self.curators[0]._layout

    @classmethod
    def build(cls, agents: Sequence[DPUCB]) -> "BatchedDPUCB | None":
        first = agents[0]
        if any(a.cal != first.cal or a.curator._t != first.curator._t for a in agents):
            return None
        return cls(agents)

    def act(self, obs: np.ndarray) -> np.ndarray:
        releases = [a._release for a in self.agents]
        if self.cal.n_models == 1:
            scores = np.stack([ucb_scores(r, x) for r, x in zip(releases, obs)])
        else:
            scores = disjoint_scores(releases, obs)
        return argmax_random_tie_rows(scores, self.rngs)

    def update(self, obs: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        curators, cal = self.curators, self.cal
        reals = [c.stage(x, a, r, pack=False) for c, x, a, r in zip(curators, obs, arms.tolist(), rewards.tolist())]
        self.items[self.rows, reals] = self.layout.pack_outers(self.v)
        self.trees.add(self.items.reshape(len(curators), -1))  # every seed's node noise from its own stream
        changed = [c.staged(real) for c, real in zip(curators, reals)]
        released = self.trees.release().reshape(self.items.shape).copy()
        us = unpack_gram(released, self.V, self.layout, cal.shift)
        if self.batch_factor:
            try:
                chols = list(np.linalg.cholesky(self.stack).reshape(self.V.shape))
            except np.linalg.LinAlgError:  # some V_t not positive definite: the single path's per-seed fallback
                chols = [factor(c._V, cal.rho_min) for c in curators]
        elif len(changed[0]) == cal.n_models:  # the shared form: one matrix, LAPACK potrf per seed
            chols = [factor(c._V, cal.rho_min) for c in curators]
        else:  # noise off, disjoint: only the played arm's model is refactored (per seed, as the single path)
            chols = [None] * len(curators)
        for agent, c, ch, u, chol in zip(self.agents, curators, changed, us, chols):
            c._release = agent._release = c.release_from(ch, c._release, u, chol)


def disjoint_scores(releases: Sequence, obs: np.ndarray) -> np.ndarray:
    """:func:`~dpbandit.agents.dp_ucb_release.ucb_scores` of the disjoint form for every seed: (S, K). The widths
    are the same per-arm LAPACK solves and dot products; the means one einsum over the seeds (equal bit for bit to
    the per-seed ``"kd,kd->k"``, ``tests/agents/test_batched.py``); the releases share one round, hence one beta."""
    S, K, _ = obs.shape
    X = np.asarray(obs, dtype=float)
    widths = np.array([math.sqrt(w @ w) for w in (lapack.dtrtrs(C.T, x, lower=0, trans=1)[0]
                                                  for r, Xs in zip(releases, X) for C, x in zip(r.cholesky, Xs))])
    means = np.einsum("skd,skd->sk", X, np.stack([r.theta for r in releases]))
    return means + releases[0].beta * widths.reshape(S, K)


BATCHED_FORMS[DPUCB] = BatchedDPUCB.build
