"""Batched DP-UCB: S seeds' curators and action rules advanced together, bit-identical per seed (issue 15).

The per-round work of every seed is the single path's compiled kernels (:mod:`dpbandit.agents.dp_ucb_kernels`),
run over a leading seed axis in one call each: ``load_items`` (the items ``[x; clipped y]`` and the context norms
for the check), ``publish_stack`` (the exact sums' rank-one updates, the noisy V_t and u, the Cholesky
factorisations) and ``scores_stack`` (the index of every arm, the best arm and its ties). Per seed, in Python: each
tree node's noise, drawn by the seed's :class:`~dpbandit.privacy.tree_noise.TreeNoise` from its own privacy stream
(the sums over the stack, :class:`~dpbandit.privacy.tree_noise.TreeNoiseStack`), the tie breaks, and the lift of a
V_t that is not positive definite, as the single path does them. Data a check could refuse (or a context norm
within rounding of the bound) goes seed by seed through the single path's own ``stage``; a refused round counts no
seed's user.

The releases live stacked (``chol``, ``response``); each seed's curator and agent get their own
:class:`~dpbandit.agents.dp_ucb_release.DPUCBRelease` (views of the stack) at the horizon, as the batched contract
has it (:mod:`dpbandit.agents.batched`), so that ``privacy_report`` and the agents' state are those of single-seed
runs.

Since DP-UCB plays blocks (``DPUCB.play_block``, issue 25), ``simulate_batch`` runs it by blocks, seed after seed,
wherever the environments hand out blocks; this form serves lockstep units on environments that do not.
``benchmarks/batch_benchmark.py --agents dp_ucb`` prints its speedup beside the block path's
(``batched_form_speedup``; at d = 20 it is below the block path's single seed).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpbandit.agents import dp_ucb_kernels as kernels
from dpbandit.agents.batched import BATCHED_FORMS, choose_rows
from dpbandit.agents.dp_ucb import DPUCB
from dpbandit.agents.dp_ucb_release import DPUCBRelease, frozen, lift
from dpbandit.agents.private import CONTEXT_RTOL
from dpbandit.privacy.tree_noise import TreeNoiseStack

__all__ = ["BatchedDPUCB"]


class BatchedDPUCB:
    """DP-UCB over S seeds (module docstring); the agents must share one calibration and be at the same round."""

    def __init__(self, agents: Sequence[DPUCB]):
        self.agents = list(agents)
        self.curators = curators = [a.curator for a in agents]
        self.rngs = [a.rng for a in agents]
        self.cal = cal = agents[0].cal
        self.t = curators[0].t
        self.noisy = cal.sigma_n > 0
        S, K, d = len(curators), agents[0].n_arms, cal.dim
        # the fast check passes a context norm only within bound (1 + rtol) (1 - 1e-12): a norm a few ulps off the
        # single path's cannot pass a row the single path refuses
        self.fast_bound = cal.context_bound * (1.0 + CONTEXT_RTOL) * (1.0 - 1e-12)
        # stacked state that each seed's curator views: exact sums, V_t, [x; y], failure flags, the noise paths
        self.gram = np.stack([c._gram for c in curators])  # (S, M, d+1, d+1)
        self.V = np.stack([c._V for c in curators])  # (S, M, d, d)
        self.v = np.stack([c._v for c in curators])  # (S, d+1)
        self.failed = np.stack([c._failed for c in curators])  # (S, M)
        for s, c in enumerate(curators):
            c._gram, c._V, c._v, c._failed = self.gram[s], self.V[s], self.v[s], self.failed[s]
        self.trees = TreeNoiseStack([c._noise for c in curators]) if self.noisy else None
        self.no_noise, self.no_previous = np.empty((S, 0)), frozen(np.empty((S, 0, d, d)))
        self.scores, self.best, self.ties = np.empty((S, K)), np.empty(S, dtype=np.intp), np.empty(S, dtype=np.intp)
        self.shared_models = np.zeros(S, dtype=np.intp)  # the model of every seed's real item, shared form
        self.chol = frozen(np.stack([a._release.cholesky for a in agents]))
        self.response = frozen(np.stack([a._release.response for a in agents]))
        self.beta = agents[0]._release.beta

    @classmethod
    def build(cls, agents: Sequence[DPUCB]) -> "BatchedDPUCB | None":
        first = agents[0]
        if any(a.cal != first.cal or a.curator.t != first.curator.t for a in agents):
            return None
        return cls(agents)

    def _materialise(self) -> None:
        """Give every seed's curator and agent its release from the stack."""
        shared = self.cal.n_models == 1
        for s, (agent, c) in enumerate(zip(self.agents, self.curators)):
            c._release = agent._release = DPUCBRelease(self.t, self.chol[s], self.response[s], self.beta, shared)

    def act(self, obs: np.ndarray) -> np.ndarray:
        X = np.ascontiguousarray(obs, dtype=float)
        if X.shape != (*self.scores.shape, self.cal.dim):  # the single path's error
            self._materialise()
            return np.array([a.act(x) for a, x in zip(self.agents, X)], dtype=np.intp)
        kernels.scores_stack(self.chol, self.response, X, self.beta, self.scores, self.best, self.ties)
        return choose_rows(self.scores, self.best, self.ties, self.rngs)

    def stage(self, obs: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> np.ndarray:
        """Every curator's :meth:`~dpbandit.agents.dp_ucb.DPUCBCurator.stage` (the models that get the real items):
        the items and the checks over the stack in one kernel; data a check could refuse goes seed by seed through
        the single path's own ``stage``, so its error, or its acceptance, is the single path's (a refusal un-counts
        the seeds staged before it)."""
        cal, curators = self.cal, self.curators
        K, d = curators[0].n_arms, cal.dim
        fast = (obs.shape == (len(curators), K, d) and curators[0].t < cal.horizon and obs.dtype == np.float64
                and arms.dtype.kind in "iu" and rewards.dtype == np.float64)
        if fast:
            worst = kernels.load_items(obs, arms, rewards, cal.clip.low, cal.clip.high, cal.context_norm == "linf",
                                       self.v)
            fast = worst <= self.fast_bound
        if not fast:
            staged = []
            try:
                for c, x, a, r in zip(curators, obs, arms.tolist(), rewards.tolist()):
                    staged.append(c.stage(x, a, r))
            except Exception:
                for c in curators[:len(staged)]:
                    c._t -= 1
                raise
            return np.array(staged)
        for c in curators:
            c._t += 1
        return arms if cal.n_models > 1 else self.shared_models

    def update(self, obs: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        cal = self.cal
        models = self.stage(obs, arms, rewards)
        if self.noisy:  # every seed's node noise from its own stream; every model is refactored
            noise, previous = self.trees.add(), self.no_previous
        else:
            noise, previous = self.no_noise, self.chol
        chol, u = np.zeros(self.V.shape), np.empty(self.V.shape[:3])
        if kernels.publish_stack(self.gram, self.v, models, noise, self.V, u, chol, previous, self.failed):
            for s in np.flatnonzero(self.failed.any(axis=1)):  # the single path's lift, seed by seed
                lift(chol[s], self.V[s], self.failed[s], cal.rho_min)
        self.chol, self.response = frozen(chol), frozen(u)
        self.t += 1
        self.beta = cal.beta(self.t)
        if self.t == cal.horizon:
            self._materialise()


BATCHED_FORMS[DPUCB] = BatchedDPUCB.build
