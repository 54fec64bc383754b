"""LinUCB: optimism with ridge-regression confidence ellipsoids.

Score of arm a for the current user: ``x_a^T theta_hat + alpha * ||x_a||_{A^{-1}}``. The disjoint form keeps one
ridge model per arm (Li, Chu, Langford, Schapire 2010, *A contextual-bandit approach to personalized news article
recommendation*, Algorithm 1); the shared form keeps one model for all arms' features (the same paper's hybrid
model without per-arm parts; Chu, Li, Reyzin, Schapire 2011 analyse it) [recalled]. The state is
:class:`~dpbandit.agents.ridge.RidgeState`, disjoint or shared as ``constants.structure`` says.

This is the hot path of the throughput benchmark: an act is one compiled pass (:func:`ucb_scores`) computing
``A_a^{-1} x_a`` and ``x_a^T theta_a`` for every arm from the ridge buffer (O(K d^2)), the quadratic forms and the
first largest score with its ties (broken with the round's uniform, :mod:`dpbandit.agents.draws`); an update is one
O(d^2) rank-one step (:func:`~dpbandit.agents.ridge.sherman_morrison`). :meth:`LinUCB.play_block` runs a block of
rounds through one kernel (:func:`play_linucb_block`: the same arithmetic in the same order, the update reusing the
played arm's products from its score); the batched form runs the single path's kernels over the seeds.
"""

from __future__ import annotations

import math

import numpy as np

from dpbandit.agents.base import Agent
from dpbandit.agents.baselines import check_arm
from dpbandit.agents.draws import best_and_ties, choose_tie, pick_tie
from dpbandit.agents.ridge import RidgeState, ucb_scores
from dpbandit.compiled import kernel
from dpbandit.envs.blocks import RoundBlock
from dpbandit.envs.constants import BanditConstants
from dpbandit.validation import check_real

__all__ = ["LinUCB", "ucb_scores", "ucb_scores_stack"]


@kernel
def ucb_scores_stack(W, X, alpha, out, best, ties):
    """:func:`ucb_scores` for each seed of a stack: W (S, M, d+1, d), X (S, K, d), out (S, K); each seed's
    ``(best, ties)`` into ``best`` and ``ties`` (S,)."""
    S = W.shape[0]
    if X.shape[0] != S or out.shape[0] != S or best.shape[0] != S or ties.shape[0] != S:
        raise ValueError("ucb_scores_stack: W, X, out, best and ties must have one seed axis S")
    for s in range(S):
        best[s], ties[s] = ucb_scores(W[s], X[s], alpha, out[s])


@kernel
def play_linucb_block(W, B, C, obs, rewards, alpha, u, arms):
    """LinUCB's n rounds of a block: round t plays the largest of :func:`ucb_scores` (ties by
    :func:`~dpbandit.agents.draws.pick_tie` with ``u[t]``), then adds ``(obs[t, arm], rewards[t, arm])`` to model m by
    :func:`~dpbandit.agents.ridge.sherman_morrison` and ``C[m] += 1`` (m = arm when M = K, else 0): ``act`` and
    ``update`` round by round, bit for bit: every sum in the same order (``A^{-1} x`` four j per pass over it, a
    quarter of rows_times' loads and stores of it), and the update reuses the played arm's ``A^{-1} x``,
    ``x^T theta`` and ``x^T A^{-1} x`` from its score (the same sums of the same W and x). W (M, d+1, d),
    B (M, d), C (M,), obs (n, K, d), rewards (n, K), tie uniforms u and arms (n,). Returns n, or the round whose
    scores hold a NaN (nothing played from it on)."""
    n, K, d = obs.shape
    M = W.shape[0]
    if W.shape[1] != d + 1 or W.shape[2] != d or (M != 1 and M != K) or B.shape[0] != M or B.shape[1] != d \
            or C.shape[0] != M or rewards.shape[0] != n or rewards.shape[1] != K or u.shape[0] != n \
            or arms.shape[0] != n:
        raise ValueError("play_linucb_block: W (M, d+1, d) with M = 1 or K, B (M, d), C (M,), obs (n, K, d), "
                         "rewards (n, K), u and arms (n,)")
    U = np.empty((K, d))
    quad, mean, scores = np.empty(K), np.empty(K), np.empty(K)
    d4 = d - d % 4
    for t in range(n):
        X = obs[t]
        for a in range(K):
            m = a if M > 1 else 0
            x, r = X[a], U[a]
            # r = A_m^{-1} x: rows_times' sums (each entry over j in index order from 0.0), four j per pass over r
            for i in range(d):
                r[i] = 0.0
            for j in range(0, d4, 4):
                x0, x1, x2, x3 = x[j], x[j + 1], x[j + 2], x[j + 3]
                for i in range(d):
                    acc = r[i]
                    acc += W[m, j, i] * x0
                    acc += W[m, j + 1, i] * x1
                    acc += W[m, j + 2, i] * x2
                    acc += W[m, j + 3, i] * x3
                    r[i] = acc
            for j in range(d4, d):
                xj = x[j]
                for i in range(d):
                    r[i] += W[m, j, i] * xj
            q = mu = 0.0
            for i in range(d):
                q += r[i] * x[i]
                mu += W[m, d, i] * x[i]
            quad[a], mean[a] = q, mu
            scores[a] = mu + alpha * math.sqrt(q)
        best, ties = best_and_ties(scores)
        arm = pick_tie(scores, best, ties, u[t])
        if arm < 0:
            return t
        arms[t] = arm
        m = arm if M > 1 else 0
        y = rewards[t, arm]
        s = 1.0 / (1.0 + quad[arm])
        for i in range(d):
            c = U[arm, i] * s
            for j in range(d):
                W[m, i, j] -= c * U[arm, j]
        c = (mean[arm] - y) * s
        for j in range(d):
            W[m, d, j] -= c * U[arm, j]
        for j in range(d):
            B[m, j] += y * X[arm, j]
        C[m] += 1
    return n


class LinUCB(Agent):
    """LinUCB with ridge regulariser ``lam`` and exploration multiplier ``alpha``.

    Parameters
    ----------
    alpha:
        Width multiplier, alpha >= 0 (alpha = 0 is greedy on the ridge estimate).
    lam:
        Ridge regulariser, lam > 0.
    """

    name = "linucb"

    def __init__(self, constants: BanditConstants, alpha: float = 1.0, lam: float = 1.0):
        self.alpha = check_real("alpha", alpha, low=0.0)
        self.lam = check_real("lam", lam, low=0.0, low_inclusive=False)
        super().__init__(constants)

    def memory_estimate(self) -> int:
        """The ridge state: ``(d + 1, d)`` and ``(d,)`` arrays per model (RidgeState), plus a work copy."""
        return 8 * 2 * self.n_arms * (self.dim + 2) * self.dim

    def _reset_state(self) -> None:
        self.ridge = RidgeState(self.n_arms, self.dim, self.constants.structure, self.lam)

    def scores(self, observation: np.ndarray) -> np.ndarray:
        """UCB scores ``x_a^T theta_hat + alpha * sqrt(x_a^T A^{-1} x_a)``; (K, d) -> (K,)."""
        return self._index(observation)[0]

    def _index(self, observation: np.ndarray) -> tuple[np.ndarray, int, int]:
        X = np.asarray(observation, dtype=float)
        if X.shape != (self.n_arms, self.dim):
            raise ValueError(f"observation must have shape (K, d) = {(self.n_arms, self.dim)}, got {X.shape}")
        out = np.empty(self.n_arms)
        return out, *ucb_scores(self.ridge.W, X, self.alpha, out)

    def act(self, observation: np.ndarray) -> int:
        scores, best, ties = self._index(observation)
        return choose_tie(scores, best, ties, self.draws.next()[0])

    def play_block(self, block: RoundBlock) -> np.ndarray:
        """The block's rounds through one kernel (:func:`play_linucb_block`): the same arms and state as ``act``
        and ``update`` round by round."""
        n, ridge = block.n, self.ridge
        arms = np.empty(n, dtype=np.intp)
        played = play_linucb_block(ridge.W, ridge.b.reshape(-1, self.dim), ridge.counts, block.obs, block.rewards,
                                   self.alpha, *self.draws.take(n), arms)
        if played < n:
            raise ValueError(f"cannot choose an arm: the scores contain NaN (round {played + 1} of the block)")
        return arms

    def update(self, observation: np.ndarray, arm: int, reward: float, info: dict) -> None:
        arm = check_arm(arm, self.n_arms)
        self.ridge.update(observation[arm], reward, arm)
