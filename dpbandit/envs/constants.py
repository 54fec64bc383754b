"""The public constants of a bandit problem: what an agent may know before the first round.

Private agents read their sensitivity bounds from here (context norm bound, reward range), so calibration never
depends on the realised data. Nothing in this record reveals the unknown parameters.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass


@dataclass(frozen=True)
class BanditConstants:
    """Known constants of a generalized-linear contextual bandit.

    Attributes
    ----------
    n_arms, dim, horizon:
        K, d and T. The observation is a ``(K, d)`` array.
    structure:
        ``"disjoint"`` (one context x_t shared by all arms, one parameter theta_a per arm; every row of the
        observation equals x_t) or ``"shared"`` (per-arm feature vectors x_{t,a}, one parameter theta).
    link:
        ``"identity"`` (Gaussian reward noise), ``"logistic"`` or ``"probit"`` (Bernoulli rewards).
    context_norm, context_bound:
        Every feature vector satisfies ``||x||_{context_norm} <= context_bound`` (``"l2"`` or ``"linf"``).
    theta_norm, theta_bound, sparsity:
        Every parameter vector satisfies ``||theta||_{theta_norm} <= theta_bound`` and has at most ``sparsity``
        non-zero entries (``sparsity == dim`` for dense parameters).
    noise_std:
        Standard deviation of the Gaussian reward noise (identity link); 0 for Bernoulli links.
    reward_low, reward_high:
        Bounds on a realised reward (``-inf``/``inf`` for unclipped Gaussian noise; ``0, 1`` for Bernoulli links;
        ``-reward_clip, reward_clip`` when the environment clips rewards).
    mean_low, mean_high:
        Bounds on an expected reward ``mu(x^T theta)``, implied by the norm bounds above (Hoelder's inequality).
    """

    n_arms: int
    dim: int
    horizon: int
    structure: str
    link: str
    context_norm: str
    context_bound: float
    theta_norm: str
    theta_bound: float
    sparsity: int
    noise_std: float
    reward_low: float
    reward_high: float
    mean_low: float
    mean_high: float

    @property
    def reward_bound(self) -> float:
        """``max(|reward_low|, |reward_high|)``: the bound a private agent clips rewards to (may be inf)."""
        return max(abs(self.reward_low), abs(self.reward_high))

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)
