"""A plain numpy LinUCB (disjoint, Sherman–Morrison), the reference line of ``linucb_benchmark.py``.

What a competent user would write by hand in numpy for the same algorithm as :class:`dpbandit.agents.LinUCB`:
K inverse Gram matrices ``A_a^{-1}`` updated by Sherman–Morrison, ``theta_a = A_a^{-1} b_a``, the score
``x^T theta_a + alpha ||x||_{A_a^{-1}}`` and the first-index argmax, with ties broken uniformly at random by
``rng`` exactly as :func:`dpbandit.agents.baselines.argmax_random_tie` does (so both play the same arms up to
floating-point near-ties). It runs over pre-drawn contexts and rewards: no environment, no bookkeeping.
"""

from __future__ import annotations

import numpy as np


def linucb_reference(
    contexts: np.ndarray, rewards: np.ndarray, rng: np.random.Generator, alpha: float = 1.0, lam: float = 1.0
) -> np.ndarray:
    """Arms played by disjoint LinUCB on contexts ``(T, d)`` with the realised rewards ``(T, K)`` of every arm."""
    T, d = contexts.shape
    K = rewards.shape[1]
    A_inv = np.repeat(np.eye(d)[None] / lam, K, axis=0)
    b = np.zeros((K, d))
    theta = np.zeros((K, d))
    arms = np.empty(T, dtype=np.int64)
    for t in range(T):
        x = contexts[t]
        U = A_inv @ x  # (K, d): A_a^{-1} x
        # einsum, not BLAS gemv, for the row products: equal rows give bitwise-equal values, so the first round's
        # K-way tie (every arm unplayed) is a tie here as in the agent
        score = theta @ x + alpha * np.sqrt(np.einsum("kd,d->k", U, x))
        a = int(score.argmax())
        ties = np.flatnonzero(score == score[a])
        if ties.size > 1:
            a = int(ties[rng.integers(ties.size)])
        u = U[a]
        A_inv[a] -= np.outer(u, u) / (1.0 + x @ u)
        b[a] += rewards[t, a] * x
        theta[a] = A_inv[a] @ b[a]
        arms[t] = a
    return arms
