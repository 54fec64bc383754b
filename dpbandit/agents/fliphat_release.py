"""FLIPHAT's public half (``spec/episodic-private-agents.md`` §1-2): what the curator releases, the greedy scores
the action rule computes from it, and the public l1 radius C the fits project on. The curator and agent are
:mod:`dpbandit.agents.fliphat`.

Shapes: ``theta`` (K, d) disjoint or (d,) shared; observations (K, d); scores (K,).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dpbandit.agents.private import require_finite_theta_bound
from dpbandit.envs.constants import BanditConstants

__all__ = ["FLIPHATRelease", "block_scores", "default_radius", "greedy_scores"]


def default_radius(constants: BanditConstants) -> float:
    """C: the public l1 bound on theta implied by the environment's constants (``theta_bound`` for an l1 bound;
    ``sqrt(s)`` or ``s`` times it for l2 / l_inf bounds on s-sparse vectors). Never the realised parameter. An
    infinite ``theta_bound`` (own-data and replay environments, unless stated) is refused in one line naming
    ``theta_bound`` and FLIPHAT's ``radius``: the l1 projection needs a bounded ball."""
    bound = require_finite_theta_bound(constants, "fliphat", "the l1 projection radius C of N-IHT", "radius=C")
    factor = {"l1": 1.0, "l2": math.sqrt(constants.sparsity), "linf": float(constants.sparsity)}[constants.theta_norm]
    return bound * factor


def block_scores(release: FLIPHATRelease, X: np.ndarray) -> np.ndarray:
    """The greedy scores of one release on rows ``X`` (..., K, d) with leading round axes -> (..., K): each round's
    bit for bit :func:`greedy_scores` of its own (K, d) rows (a disjoint theta is broadcast over the rounds, so the
    same einsum runs; a shared theta is one stacked matrix-vector product)."""
    theta = release.theta
    return greedy_scores(np.broadcast_to(theta, X.shape) if 2 == theta.ndim < X.ndim else theta, X)


def greedy_scores(theta: np.ndarray, observation: np.ndarray) -> np.ndarray:
    """The scores of the action rule, ``x_a^T theta_a`` (disjoint: ``theta`` (..., K, d)) or ``x_a^T theta``
    (shared: ``theta`` (..., d)), for ``observation`` (..., K, d) -> (..., K). Leading axes (seeds, in the batched
    form :mod:`dpbandit.agents.batched.episodic`) are independent: each row's result is bit for bit the single one."""
    if theta.ndim == observation.ndim:
        return np.einsum("...kd,...kd->...k", observation, theta)
    if theta.ndim == 1:
        return observation @ theta  # one seed: its matrix-vector product (what the stacked matmul runs per seed)
    return np.matmul(observation, theta[..., None])[..., 0]


@dataclass(frozen=True)
class FLIPHATRelease:
    """What the curator publishes: ``theta`` (K, d) for the disjoint structure or (d,) for the shared one
    (read-only), the noisy per-arm counts ``counts`` (K,) the disjoint fits were normalised by (read-only; ``None``
    for the shared structure, whose normaliser is the public episode length), and the number of releases so far."""

    theta: np.ndarray
    counts: np.ndarray | None
    releases: int
    #: Rows are scored as they are (FLIPHAT checks contexts against x_max, it does not clip them): what the block
    #: path (:mod:`dpbandit.agents.episodic_blocks`) reads.
    row_clip: ClassVar[float] = math.inf
