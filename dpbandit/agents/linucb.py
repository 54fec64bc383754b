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
rounds through one kernel (:func:`~dpbandit.agents.ridge.play_ridge_block`); the batched form runs the same kernels
over the seeds.
"""

from __future__ import annotations

import numpy as np

from dpbandit.agents.base import Agent
from dpbandit.agents.baselines import check_arm
from dpbandit.agents.draws import choose_tie
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
        """The block's rounds through one kernel (:meth:`RidgeState.play_block`): the same arms and state as
        ``act`` and ``update`` round by round."""
        return self.ridge.play_block(block.obs, block.rewards, *self.draws.take(block.n), alpha=self.alpha)

    def update(self, observation: np.ndarray, arm: int, reward: float, info: dict) -> None:
        arm = check_arm(arm, self.n_arms)
        self.ridge.update(observation[arm], reward, arm)
