"""Batched DP-UCB: S seeds' curators and action rules advanced together, bit-identical per seed (issue 15).

The per-round work of every seed is the single path's compiled kernels (:mod:`dpbandit.agents.dp_ucb_kernels`),
run over a leading seed axis in one call: ``publish_stack`` (the exact sums' rank-one updates, the noisy V_t and u,
the Cholesky factorisations) and ``scores_stack`` (the index of every arm). Per seed, in Python: each tree node's
noise, drawn by the seed's :class:`~dpbandit.privacy.tree.TreeNoise` from its own privacy stream (the sums over the
stack, :class:`~dpbandit.privacy.tree.TreeNoiseStack`), and the lift of a V_t that is not positive definite, as the
single path does it. The checks run over the stack; data a check could refuse goes seed by seed through the single
path's own ``stage``. Each curator and agent holds its own release after every round (views of the stacked
factors), so ``privacy_report`` and any later single-seed step are those of a single-seed run.

Measured: ``benchmarks/batch_benchmark.py --agents dp_ucb`` (16 seeds against one in the same run); figures in the
CHANGELOG.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpbandit.agents import dp_ucb_kernels as kernels
from dpbandit.agents.batched import BATCHED_FORMS, argmax_random_tie_rows
from dpbandit.agents.dp_ucb import DPUCB, lift
from dpbandit.agents.dp_ucb_release import DPUCBRelease, frozen, ucb_index
from dpbandit.agents.private import CONTEXT_RTOL
from dpbandit.privacy.tree import TreeNoiseStack

__all__ = ["BatchedDPUCB"]


class BatchedDPUCB:
    """DP-UCB over S seeds (module docstring); the agents must share one calibration and be at the same round."""

    def __init__(self, agents: Sequence[DPUCB]):
        self.agents = list(agents)
        self.curators = curators = [a.curator for a in agents]
        self.rngs = [a.rng for a in agents]
        self.cal = cal = agents[0].cal
        self.noisy = cal.sigma_n > 0
        S, d = len(curators), cal.dim
        # stacked state that each seed's curator views: exact sums, V_t, [x; y], failure flags, the noise paths
        self.gram = np.stack([c._gram for c in curators])  # (S, M, d+1, d+1)
        self.V = np.stack([c._V for c in curators])  # (S, M, d, d)
        self.v = np.stack([c._v for c in curators])  # (S, d+1)
        self.failed = np.stack([c._failed for c in curators])  # (S, M)
        for s, c in enumerate(curators):
            c._gram, c._V, c._v, c._failed = self.gram[s], self.V[s], self.v[s], self.failed[s]
        self.trees = TreeNoiseStack([c._noise for c in curators]) if self.noisy else None
        self.no_noise, self.no_previous = np.empty((S, 0)), frozen(np.empty((S, 0, d, d)))
        self.rows = np.arange(S)
        self.scores = np.empty((S, agents[0].n_arms))
        self._stack([a._release for a in agents])

    def _stack(self, releases: list[DPUCBRelease]) -> None:
        """Keep the releases' factors and responses stacked for :meth:`act` (copies, when not made here)."""
        self.releases = releases
        self.chol = frozen(np.stack([r.cholesky for r in releases]))
        self.response = frozen(np.stack([r.response for r in releases]))

    @classmethod
    def build(cls, agents: Sequence[DPUCB]) -> "BatchedDPUCB | None":
        first = agents[0]
        if any(a.cal != first.cal or a.curator.t != first.curator.t for a in agents):
            return None
        return cls(agents)

    def act(self, obs: np.ndarray) -> np.ndarray:
        releases = [a._release for a in self.agents]
        if any(r is not p for r, p in zip(releases, self.releases)):  # a seed was stepped on its own
            self._stack(releases)
        X = np.ascontiguousarray(obs, dtype=float)
        if X.shape == (len(releases), *self.scores.shape[1:], self.cal.dim):
            scores = kernels.scores_stack(self.chol, self.response, X, releases[0].beta, self.scores)
        else:  # the single path's error
            scores = np.stack([ucb_index(r, x)[0] for r, x in zip(releases, X)])
        return argmax_random_tie_rows(scores, self.rngs)

    def stage(self, obs: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> list[int]:
        """Every curator's :meth:`~dpbandit.agents.dp_ucb.DPUCBCurator.stage` (the models that get the real items):
        the checks over the stack, then the same [x; clipped y] rows and counts. Data a check could refuse (or a
        context norm within rounding of the bound) goes seed by seed through the single path's own ``stage``, so
        its error, or its acceptance, is the single path's."""
        cal, curators = self.cal, self.curators
        K, d = curators[0].n_arms, cal.dim
        X = obs[self.rows, arms] if obs.shape == (len(curators), K, d) and arms.min() >= 0 and arms.max() < K else None
        if X is not None:
            worst = (np.abs(X).max() if cal.context_norm == "linf" else np.sqrt(np.einsum("sd,sd->s", X, X).max()))
            ok = (worst <= cal.context_bound * (1.0 + CONTEXT_RTOL) * (1.0 - 1e-12) and curators[0].t < cal.horizon
                  and np.isfinite(rewards).all())
        if X is None or not ok:
            return [c.stage(x, a, r) for c, x, a, r in zip(curators, obs, arms.tolist(), rewards.tolist())]
        self.v[:, :d] = X
        self.v[:, d] = np.clip(rewards, cal.clip.low, cal.clip.high)
        for c in curators:
            c._t += 1
        return arms.tolist() if cal.n_models > 1 else [0] * len(curators)

    def update(self, obs: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        curators, cal = self.curators, self.cal
        models = np.array(self.stage(obs, arms, rewards))
        if self.noisy:  # every seed's node noise from its own stream; every model is refactored
            noise, previous = self.trees.add(), self.no_previous
        else:
            noise, previous = self.no_noise, self.chol
        chol, u, failures = kernels.publish_stack(self.gram, self.v, models, noise, self.V, previous, self.failed)
        if failures:
            for s in np.flatnonzero(self.failed.any(axis=1)):  # the single path's lift, seed by seed
                lift(chol[s], self.V[s], self.failed[s], cal.rho_min)
        self.chol, self.response = frozen(chol), frozen(u)
        t = curators[0].t
        beta, shared = cal.beta(t), cal.n_models == 1
        self.releases = [DPUCBRelease(t, chol[s], u[s], beta, shared) for s in range(len(curators))]
        for agent, c, r in zip(self.agents, curators, self.releases):
            c._release = agent._release = r


BATCHED_FORMS[DPUCB] = BatchedDPUCB.build
