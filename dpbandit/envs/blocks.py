"""The environment side of the block protocol: rounds handed over as arrays, and their compiled arithmetic.

An environment that pre-generates its rounds (the GLM bandits, :class:`~dpbandit.envs.glm.GLMBanditEnv`, and the
own-data bandits, :class:`~dpbandit.envs.tabular.TabularBanditEnv`) can hand the evaluation loop a block of them at
once, :meth:`~dpbandit.envs.glm.GLMBanditEnv.take_block`, instead of one ``step`` per round: a
:class:`RoundBlock` of n consecutive rounds (n >= 1), after which the episode stands n rounds later, exactly as if
``step`` had been called n times (whatever arms were played: every arm's reward is drawn for every round, so a round
never depends on earlier actions). An agent that plays blocks
(:meth:`~dpbandit.agents.base.Agent.play_block`) then plays them through a compiled kernel, and the loop
(:mod:`dpbandit.experiment.loop`) reads each round's reward and regret from the arrays. Nothing else changes: the
arrays are those ``step`` serves, so the block path and the ``step`` path give the same bits
(``tests/experiment/test_loop.py``).

:func:`linear_predictors` is the environments' one mean computation (blocks and ``expected_rewards`` alike): the
plain loop of ``x_{t,a} . theta_m`` in a fixed order, compiled without fast-math (``docs/ARCHITECTURE.md``,
"Compiled kernels").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpbandit.compiled import kernel

__all__ = ["RoundBlock", "linear_predictors"]


@dataclass(frozen=True)
class RoundBlock:
    """n consecutive rounds of one episode, read-only arrays.

    ``first``: the round number of the block's first round (1-based). ``obs`` (n, K, d): each round's observation
    (in the disjoint structure a broadcast view, stride 0 over the arms, of the (n, d) contexts). ``means`` (n, K):
    expected rewards. ``rewards`` (n, K): the realised reward of every arm (a bandit agent reads only the played
    arm's entry, after playing it). ``best`` (n,): the largest expected reward of each round. ``source``: the
    environment that produced the block when ``means`` are its ``expected_rewards`` of ``obs``, else None (an own-data
    bandit: rows with equal features may hold different rewards).
    """

    first: int
    obs: np.ndarray
    means: np.ndarray
    rewards: np.ndarray
    best: np.ndarray
    source: object = None

    @property
    def n(self) -> int:
        return self.means.shape[0]


@kernel
def linear_predictors(X, theta, out):
    """``out[t, a] = x_{t,a} . theta_m`` for features X (n, K, d) (any strides) and parameters theta (M, d), m = a
    when M = K (disjoint), else 0 (shared); out (n, K). Each dot product in four interleaved partial sums over
    j = 0, 4, 8, ... (+1, +2, +3), added as ``(s0 + s1) + (s2 + s3)``, then the tail: a fixed order, the same bits
    for a block and for one round."""
    n, K, d = X.shape
    M = theta.shape[0]
    if theta.shape[1] != d or (M != 1 and M != K) or out.shape[0] != n or out.shape[1] != K:
        raise ValueError("linear_predictors: X (n, K, d), theta (M, d) with M = 1 or K, out (n, K)")
    m4 = d - d % 4
    for t in range(n):
        for a in range(K):
            m = a if M > 1 else 0
            s0 = s1 = s2 = s3 = 0.0
            for j in range(0, m4, 4):
                s0 += X[t, a, j] * theta[m, j]
                s1 += X[t, a, j + 1] * theta[m, j + 1]
                s2 += X[t, a, j + 2] * theta[m, j + 2]
                s3 += X[t, a, j + 3] * theta[m, j + 3]
            for j in range(m4, d):
                s0 += X[t, a, j] * theta[m, j]
            out[t, a] = (s0 + s1) + (s2 + s3)
