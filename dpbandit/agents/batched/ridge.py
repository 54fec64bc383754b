"""Batched LinUCB and greedy: S seeds' ridge states stacked into (S, M, d+1, d) buffers (issue 15).

Each seed's :class:`~dpbandit.agents.ridge.RidgeState` is re-pointed at its slice of the stacked buffers, so the agent
objects stay the live state. Scoring and the ridge update run batched with the same per-matrix calls and operand
layouts as :meth:`LinUCB.scores` / :meth:`RidgeState.update`, hence the same floating-point results; the rank-one
step is :func:`~dpbandit.agents.ridge.subtract_outer`'s numpy form over the seeds (the single path uses it for
models of up to ``NUMPY_OUTER_MAX`` floats, BLAS ``dger`` above, which has no bitwise-equal numpy form). Models whose
buffers hold more than ``_SEQUENTIAL_ABOVE`` floats (about d > 55 at K = 10) decline: their round is O(K d^2) per
seed and lockstep only streamed every seed's buffers through the cache (measured slower at d = 200,
``benchmarks/batch_benchmark.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpbandit.agents.baselines import Greedy
from dpbandit.agents.batched import BATCHED_FORMS, argmax_random_tie_rows
from dpbandit.agents.linucb import LinUCB
from dpbandit.agents.ridge import NUMPY_OUTER_MAX

__all__ = ["BatchedRidge"]

#: Largest (d+1) d for which the played models' buffers are gathered into one batched product in the update.
_GATHER_LIMIT = 64 * 64
#: Most floats of stacked ridge buffers scored by one batched call (1 MB: stays in cache).
_CHUNK_ELEMENTS = 2**17
#: Agents whose ridge buffers hold more floats than this (d >~ 55 at K = 10) run seed by seed.
_SEQUENTIAL_ABOVE = 2**15


class BatchedRidge:
    """LinUCB (``alpha`` of the agents) or greedy (alpha = 0 scoring by the ridge prediction) over S seeds."""

    def __init__(self, agents: Sequence[LinUCB | Greedy]):
        self.rngs = [a.rng for a in agents]
        self.linucb = isinstance(agents[0], LinUCB)
        self.alpha = agents[0].alpha if self.linucb else 0.0
        self.d = agents[0].dim
        self.disjoint = agents[0].constants.structure == "disjoint"
        # (S, M, d+1, d) buffers, (S, M, d) response sums, (S, M) counts; each agent's ridge state views its slice
        self.W, self.B, self.C = (np.stack([getattr(a.ridge, n) for a in agents]) for n in ("W", "_b", "counts"))
        for s, a in enumerate(agents):
            a.ridge.W, a.ridge._b, a.ridge.counts = self.W[s], self.B[s], self.C[s]
        self.rows = np.arange(len(agents))

    @classmethod
    def build(cls, agents) -> "BatchedRidge | None":
        return None if agents[0].ridge.W.size > min(_SEQUENTIAL_ABOVE, NUMPY_OUTER_MAX) else cls(agents)

    def act(self, obs: np.ndarray) -> np.ndarray:
        W, d = self.W, self.d
        chunk = max(1, _CHUNK_ELEMENTS // W[0].size)  # chunks of seeds whose buffers stay in cache (same results)
        if chunk >= len(W):
            scores = self._scores(W, obs, d)
        else:
            scores = np.concatenate([self._scores(W[lo: lo + chunk], obs[lo: lo + chunk], d)
                                     for lo in range(0, len(W), chunk)])
        return argmax_random_tie_rows(scores, self.rngs)

    def _scores(self, W: np.ndarray, O: np.ndarray, d: int) -> np.ndarray:
        """:meth:`LinUCB.scores` / :meth:`RidgeState.predict` of every seed: W (S, M, d+1, d), O (S, K, d) -> (S, K)."""
        if not self.linucb:
            if self.disjoint:
                return np.einsum("skd,skd->sk", O, W[:, :, d, :])
            return np.stack([o @ w[0, d] for o, w in zip(O, W)])  # per seed: the single path's product
        R = np.matmul(W, O[..., None])[..., 0] if self.disjoint else O @ W[:, 0].transpose(0, 2, 1)
        score = np.matmul(R[..., None, :d], O[..., None])[..., 0, 0]
        np.sqrt(score, out=score)
        score *= self.alpha
        score += R[..., d]
        return score

    def update(self, obs: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        """:meth:`RidgeState.update` of every seed: model ``m[s]`` of seed s gets ``(obs[s, arms[s]], rewards[s])``."""
        W, d, rows = self.W, self.d, self.rows
        X, y = obs[rows, arms], rewards
        models = arms if self.disjoint else np.zeros_like(arms)
        if W.shape[2] * W.shape[3] <= _GATHER_LIMIT:  # small models: gather the played ones, one batched product
            r = np.matmul(W[rows, models], X[:, :, None])[..., 0]
        else:  # large ones: the same product per seed, in place (a gather would copy S (d+1) d floats per round)
            r = np.empty((len(X), d + 1))
            for s, m in enumerate(models):
                np.matmul(W[s, m], X[s][:, None], out=r[s][:, None])
        u = r[:, :d]
        scale = 1.0 / (1.0 + np.matmul(X[:, None, :], u[:, :, None])[:, 0, 0])
        c = r * scale[:, None]
        c[:, d] = (r[:, d] - y) * scale
        # subtract_outer's numpy form for every seed at once (built only for models of <= NUMPY_OUTER_MAX floats)
        W[rows, models] -= c[:, :, None] * u[:, None, :]
        self.B[rows, models] += y[:, None] * X
        self.C[rows, models] += 1


BATCHED_FORMS[LinUCB] = BatchedRidge.build
BATCHED_FORMS[Greedy] = BatchedRidge.build
