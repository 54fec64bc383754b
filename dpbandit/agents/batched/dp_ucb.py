"""Batched DP-UCB: S seeds' curators and action rules advanced together, bit-identical per seed (issue 15).

Per seed, because it draws that seed's noise or has no bitwise-equal batched form: each curator's checks
(:meth:`~dpbandit.agents.dp_ucb.DPUCBCurator.stage`), each tree node's noise (drawn by the seed's
:class:`~dpbandit.privacy.tree.TreeNoise` from its own privacy stream), the shared form's LAPACK ``potrf`` and every
``trtrs`` solve, the BLAS rank-one updates of the exact Gram sums. Batched, with the same operations on a leading
seed axis: the noisy extended matrices (:func:`~dpbandit.agents.dp_ucb.noisy_extended`), the disjoint form's Cholesky
factorisations (one ``numpy.linalg.cholesky`` call on the (S, M, d, d) stack: numpy factorises matrix by matrix with
the same LAPACK call as the single path's (M, d, d) call; a stack that is not positive definite somewhere is refactored
seed by seed exactly as the single path does), the disjoint scores' dot products (one einsum, equal to the per-seed
one) and the tie-broken argmax. Each curator and agent holds its own release after every round, so
``privacy_report`` and any later single-seed step are those of a single-seed run.

Measured (``benchmarks/batch_benchmark.py --agents dp_ucb``, 16 seeds against one in the same run, load ~1):
2.03-2.05x on ``--env dpbandit/HanFigure51-K2-v0 --horizon 10000`` (the frontier's environment, K = 2, d = 50), 1.88x
on the default GLM workload (disjoint, K = 10, d = 20), where each seed's K node-noise draws, K factorisations and K
triangular solves per round stay per seed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.linalg import lapack

from dpbandit.agents.batched import BATCHED_FORMS, argmax_random_tie_rows
from dpbandit.agents.private import CONTEXT_RTOL
from dpbandit.agents.dp_ucb import DPUCB, add_outer, noisy_extended
from dpbandit.agents.dp_ucb_release import DPUCBRelease, frozen, ucb_scores
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
        # stacked state that each seed's curator views: exact sums, extended matrices, [x; y], the noise paths
        self.gram = np.stack([c._gram for c in curators])  # (S, M, d+1, d+1)
        self.extended = np.stack([c._extended for c in curators])
        self.v = np.stack([c._v for c in curators])  # (S, d+1)
        for s, c in enumerate(curators):
            c._gram, c._extended, c._v = self.gram[s], self.extended[s], self.v[s]
        self.trees = TreeNoiseStack([c._noise for c in curators]) if self.noisy else None
        self.rows = np.arange(len(agents))
        # the disjoint scores' right-hand sides [x_a | u_a] of every seed and arm, (S, K, 2, d)
        self.rhs = np.empty((len(agents), agents[0].n_arms, 2, cal.dim))
        if cal.n_models > 1:
            self.rhs[:, :, 1] = [c._release.response for c in curators]
        self.scatter = curators[0]._scatter

    @classmethod
    def build(cls, agents: Sequence[DPUCB]) -> "BatchedDPUCB | None":
        first = agents[0]
        if any(a.cal != first.cal or a.curator.t != first.curator.t for a in agents):
            return None
        return cls(agents)

    def act(self, obs: np.ndarray) -> np.ndarray:
        releases = [a._release for a in self.agents]
        if self.cal.n_models == 1:
            scores = np.stack([ucb_scores(r, x) for r, x in zip(releases, obs)])
        else:
            self.rhs[:, :, 0] = obs
            scores = disjoint_scores(releases, self.rhs)
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
        curators, cal, d = self.curators, self.cal, self.cal.dim
        reals = self.stage(obs, arms, rewards)
        for c, real in zip(curators, reals):
            add_outer(c._gram[real], c._v)
        noise = self.trees.add() if self.noisy else None  # every seed's node noise from its own stream
        extended = noisy_extended(self.gram, noise, self.extended, self.scatter)
        chols = None
        if self.noisy and cal.n_models > 1:  # every model refactored every round: one stacked call
            try:
                chols = frozen(np.linalg.cholesky(extended[:, :, :d, :d]))
            except np.linalg.LinAlgError:  # some V_t not positive definite: the single path's per-seed fallback
                pass
        if chols is None:
            chols = [frozen(c.factors(c.changed(real), c._release, ext[:, :d, :d]))
                     for c, real, ext in zip(curators, reals, extended)]
        responses = frozen(extended[:, :, d, :d].copy())
        self.rhs[:, :, 1] = responses  # the releases' response columns, for the disjoint scores
        t, beta, shared = curators[0].t, cal.beta(curators[0].t), cal.n_models == 1
        for agent, c, chol, u in zip(self.agents, curators, chols, responses):
            c._release = agent._release = DPUCBRelease(t, chol, u, beta, shared)


def disjoint_scores(releases: Sequence, rhs: np.ndarray) -> np.ndarray:
    """:func:`~dpbandit.agents.dp_ucb_release.ucb_scores` of the disjoint form for every seed: (S, K), from the
    right-hand sides ``rhs`` (S, K, 2, d) ``[x_a | u_a]`` of every seed and arm. The same per-arm LAPACK solves;
    their dot products in one einsum over the seeds (equal bit for bit to the per-seed ``"kd,kd->k"``); the releases
    share one round, hence one beta."""
    S, K, _, d = rhs.shape
    W = np.stack([lapack.dtrtrs(c.T, b.T, lower=0, trans=1)[0]
                  for r, Bs in zip(releases, rhs) for c, b in zip(r.cholesky, Bs)]).reshape(S, K, d, 2)
    widths = np.sqrt(np.einsum("skd,skd->sk", W[..., 0], W[..., 0]))
    means = np.einsum("skd,skd->sk", W[..., 0], W[..., 1])
    return means + releases[0].beta * widths


BATCHED_FORMS[DPUCB] = BatchedDPUCB.build
