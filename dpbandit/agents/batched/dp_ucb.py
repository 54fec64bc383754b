"""Batched DP-UCB: S seeds' curators and action rules advanced together, bit-identical per seed (issue 15).

What stays per seed, because it draws that seed's privacy noise or has no bitwise-equal batched form: each curator's
:meth:`~dpbandit.agents.dp_ucb.DPUCBCurator.ingest` (the checks, the item and the tree's new node with its noise
from the seed's own privacy stream), its :meth:`~dpbandit.agents.dp_ucb.DPUCBCurator.unpack` of the release, the
LAPACK ``potrs`` / ``trtrs`` solves and the scores (:func:`~dpbandit.agents.dp_ucb.ucb_scores`). What is batched:
the Cholesky factorisations of the disjoint form's M = K models of every seed, one ``numpy.linalg.cholesky`` call on
the (S M, d, d) stack of lower triangles (numpy's gufunc factorises matrix by matrix with the same LAPACK call as
the single path's (M, d, d) call: the same bits; a stack that is not positive definite somewhere is refactored seed
by seed exactly as the single path does), and the tie-broken argmax over the seeds' score rows. The single path's
one-matrix factorisations (the shared form; the noise-off disjoint form refactors only the played arm) call LAPACK
``potrf`` directly and stay per seed. Each seed's curator and agent hold their own release after every round, so
``privacy_report`` and any later single-seed step are those of a single-seed run.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpbandit.agents.batched import BATCHED_FORMS, argmax_random_tie_rows
from dpbandit.agents.dp_ucb import DPUCB
from dpbandit.agents.dp_ucb_release import factor, ucb_scores

__all__ = ["BatchedDPUCB"]


class BatchedDPUCB:
    """DP-UCB over S seeds (module docstring); the agents must share one calibration and be at the same round."""

    def __init__(self, agents: Sequence[DPUCB]):
        self.agents = list(agents)
        self.curators = [a.curator for a in agents]
        self.rngs = [a.rng for a in agents]
        cal = agents[0].cal
        self.batch_factor = cal.n_models > 1 and cal.sigma_n > 0  # every model refactored every round
        d, M = cal.dim, cal.n_models
        self.V = np.stack([c._V for c in self.curators])  # (S, M, d, d); each curator's V_t views its slice
        for s, c in enumerate(self.curators):
            c._V = self.V[s]
        self.stack = self.V.reshape(len(agents) * M, d, d)

    @classmethod
    def build(cls, agents: Sequence[DPUCB]) -> "BatchedDPUCB | None":
        first = agents[0]
        if any(a.cal != first.cal or a.curator._t != first.curator._t for a in agents):
            return None
        return cls(agents)

    def act(self, obs: np.ndarray) -> np.ndarray:
        scores = np.stack([ucb_scores(a._release, x) for a, x in zip(self.agents, obs)])
        return argmax_random_tie_rows(scores, self.rngs)

    def update(self, obs: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        curators = self.curators
        changed = [c.ingest(x, a, r) for c, x, a, r in zip(curators, obs, arms.tolist(), rewards.tolist())]
        us = [c.unpack() for c in curators]
        if self.batch_factor:
            try:
                chols = list(np.linalg.cholesky(self.stack).reshape(self.V.shape))
            except np.linalg.LinAlgError:  # some V_t not positive definite: the single path's per-seed fallback
                chols = [factor(c._V, c.cal.rho_min) for c in curators]
        elif len(changed[0]) == curators[0].cal.n_models:  # the shared form: one matrix, LAPACK potrf per seed
            chols = [factor(c._V, c.cal.rho_min) for c in curators]
        else:  # noise off, disjoint: only the played arm's model is refactored (per seed, as the single path)
            chols = [None] * len(curators)
        for agent, c, ch, u, chol in zip(self.agents, curators, changed, us, chols):
            c._release = agent._release = c.release_from(ch, c._release, u, chol)


BATCHED_FORMS[DPUCB] = BatchedDPUCB.build
