"""LinUCB: optimism with ridge-regression confidence ellipsoids.

Score of arm a for the current user: ``x_a^T theta_hat + alpha * ||x_a||_{A^{-1}}``. The disjoint form keeps one
ridge model per arm (Li, Chu, Langford, Schapire 2010, *A contextual-bandit approach to personalized news article
recommendation*, Algorithm 1); the shared form keeps one model for all arms' features (the same paper's hybrid
model without per-arm parts; Chu, Li, Reyzin, Schapire 2011 analyse it) [recalled]. The state is
:class:`~dpbandit.agents.ridge.RidgeState`, disjoint or shared as ``constants.structure`` says.

This is the hot path of the throughput benchmark: an act is one batched product ``W @ x`` giving ``A_a^{-1} x_a``
and ``x_a^T theta_a`` for every arm (O(K d^2)), one quadratic form and the tie-broken argmax; an update is one
O(d^2) rank-one step.
"""

from __future__ import annotations

import numpy as np

from dpbandit.agents.base import Agent
from dpbandit.agents.baselines import argmax_random_tie, check_arm
from dpbandit.agents.ridge import RidgeState
from dpbandit.envs.constants import BanditConstants
from dpbandit.validation import check_real

__all__ = ["LinUCB"]


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
        d = self.dim
        R = self.ridge.products(observation)
        score = np.matmul(R[:, None, :d], observation[:, :, None])[:, 0, 0]  # x_a^T A^{-1} x_a per arm
        np.sqrt(score, out=score)
        score *= self.alpha
        score += R[:, d]
        return score

    def act(self, observation: np.ndarray) -> int:
        return argmax_random_tie(self.scores(observation), self.rng)

    def update(self, observation: np.ndarray, arm: int, reward: float, info: dict) -> None:
        arm = check_arm(arm, self.n_arms)
        self.ridge.update(observation[arm], reward, arm)
