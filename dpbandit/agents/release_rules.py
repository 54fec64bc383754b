"""Optimistic (UCB) and Thompson-sampling action rules from an episodic ridge release, with widths that account for
the released noise (``spec/episodic-part2-hard-problems.md`` §2; derivation ``docs/episodic-agents.md`` §6.3–6.4).

Both are post-processing: their inputs are the release (theta_hat, V = G_w + lam_w I floored, the combination's
||w||_2) and public constants, and the action for a user uses the latest release and that user's own rows only.

**UCB** (Abbasi-Yadkori et al. 2011 with the private-OFUL noise terms, cf. Shariff & Sheffet 2018; Azize & Basu
2024): with ``sigma_Gw = sigma_G ||w||``, ``sigma_bw = sigma_b ||w||``, ``a = ln(3 / alpha)``, the regulariser
``lam_w = ridge + sigma_Gw (2 sqrt(d) + 2 sqrt(a))`` and N the users so far (public: the schedule), on an event of
probability >= 1 - alpha, ``||theta_hat - theta||_V <= beta`` with

    beta = R sqrt(2 a + d ln(1 + N L^2 / (d ridge)))
           + [sigma_bw (sqrt(d) + sqrt(2 a)) + S (sigma_Gw (sqrt(d + 1) + 2 sqrt(a)) + lam_w)] / sqrt(ridge)

(R: sub-Gaussian proxy of the centred reward, (hi - lo)/2 for rewards clipped to [lo, hi]; S: the l2 bound on theta).
Score ``x_a^T theta_hat_m + beta_m ||x_a||_{V_m^{-1}}``.

**Thompson**: the first-order law of theta given the release is N(theta_hat, R^2 V^{-1} + tau_w^2 V^{-2}),
``tau_w^2 = sigma_bw^2 + sigma_Gw^2 ||theta_hat||^2``; with ``V = U diag(e) U^T`` a draw is
``theta~ = theta_hat + U diag(sqrt(R^2/e + tau_w^2/e^2)) xi``, ``xi ~ N(0, I_d)`` from the **exploration** stream
(never the privacy stream), one draw per model per user; the action is greedy on theta~. The release gives the
factor ``V^{-1} C`` of the floored V (``C C^T = R^2 V + tau_w^2 I``, two Cholesky factorisations instead of an
eigendecomposition: :mod:`~dpbandit.agents.floored_ridge`) with unit sds: the same law.

The release itself (:class:`EpisodicRidgeRelease`) and the rules' scores (:func:`ridge_scores`, greedy and UCB)
are here too, beside the rules that read them.

Shapes: M models (1 shared, K disjoint), d features, observation X (K, d).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["RULES", "EpisodicRidgeRelease", "ridge_scores", "thompson_scale", "thompson_scores", "ucb_radius",
           "ucb_scores"]

#: The action rules of an episodic ridge release.
RULES: tuple[str, ...] = ("greedy", "ucb", "thompson")


def ucb_radius(*, R: float, S: float, L: float, dim: int, ridge: float, n_users: int, sigma_G: float,
               sigma_b: float, w_norm: np.ndarray, lam_w: np.ndarray, alpha: float) -> np.ndarray:
    """beta (M,) of the module docstring, from public constants and the combination's ``w_norm`` / ``lam_w``
    (M,)."""
    d, a = dim, math.log(3.0 / alpha)
    w_norm = np.asarray(w_norm, dtype=float)
    sampling = R * math.sqrt(2.0 * a + d * math.log1p(n_users * L * L / (d * ridge)))
    moment_noise = sigma_b * w_norm * (math.sqrt(d) + math.sqrt(2.0 * a))
    gram_noise = S * (sigma_G * w_norm * (math.sqrt(d + 1.0) + 2.0 * math.sqrt(a)) + np.asarray(lam_w))
    return sampling + (moment_noise + gram_noise) / math.sqrt(ridge)


def thompson_scale(evals: np.ndarray, R: float, tau2_w: np.ndarray) -> np.ndarray:
    """The per-eigendirection sd ``sqrt(R^2 / e + tau_w^2 / e^2)`` ((M, d)) of the Thompson draw, from V's
    (floored) eigenvalues ``evals`` (M, d) and ``tau2_w`` (M,)."""
    return np.sqrt(R * R / evals + np.asarray(tau2_w)[:, None] / (evals * evals))


def ucb_scores(theta: np.ndarray, v_inv: np.ndarray, beta: np.ndarray, shared: bool, X: np.ndarray) -> np.ndarray:
    """``x_a^T theta_m + beta_m ||x_a||_{V_m^{-1}}`` for X (K, d): (K,); model m = 0 (shared) or a."""
    if shared:
        return X @ theta[0] + beta[0] * np.sqrt(np.einsum("kd,de,ke->k", X, v_inv[0], X))
    return np.einsum("kd,kd->k", X, theta) + beta * np.sqrt(np.einsum("kd,kde,ke->k", X, v_inv, X))


def thompson_scores(theta: np.ndarray, basis: np.ndarray, scale: np.ndarray, shared: bool, X: np.ndarray,
                    rng: np.random.Generator) -> np.ndarray:
    """Scores ``x_a^T theta~_m`` with one draw ``theta~_m = theta_m + U_m (scale_m * xi_m)`` per model, ``xi``
    (M, d) standard normal from ``rng`` (the exploration stream): (K,)."""
    xi = rng.standard_normal(theta.shape)
    draw = theta + np.einsum("mij,mj->mi", basis, scale * xi)
    return X @ draw[0] if shared else np.einsum("kd,kd->k", X, draw)


@dataclass(frozen=True)
class EpisodicRidgeRelease:
    """One publication (read-only arrays). M = 1 (shared) or K (disjoint).

    ``gram`` (M, d, d) and ``moment`` (M, d): the noisy statistics the estimate uses (the last release, the sum of
    ``n_summed`` releases in mode "sum", or their weighted sum in mode "weighted"; None when kept by Sherman-Morrison
    with the noise off); ``theta`` (M, d); ``v_inv`` (M, d, d): ``V^{-1}`` for a UCB width (``rule="ucb"`` or
    ``ucb_alpha > 0``), else None; ``ucb_alpha``;
    ``episode``: releases so far. The action ``rule`` ("greedy", "ucb", "thompson") and its public arrays: ``beta``
    (M,) the UCB radius; ``basis`` (M, d, d) and ``scale`` (M, d) the Thompson draw ``theta + basis (scale * xi)``,
    ``basis diag(scale^2) basis^T = R^2 V^{-1} + tau^2 V^{-2}``: ``V^{-1} C`` and ones (:mod:`~dpbandit.agents.
    floored_ridge`), or eigenvectors and sds (V = lam I before any data; the full-eigendecomposition fallback;
    :mod:`~dpbandit.agents.release_rules`).
    """

    gram: np.ndarray | None
    moment: np.ndarray | None
    theta: np.ndarray
    v_inv: np.ndarray | None
    ucb_alpha: float
    shared: bool
    episode: int
    n_summed: int
    rule: str = "greedy"
    beta: np.ndarray | None = None
    basis: np.ndarray | None = None
    scale: np.ndarray | None = None
    row_clip: float = math.inf


def ridge_scores(theta: np.ndarray, v_inv: np.ndarray, ucb_alpha: float, shared: bool,
                 X: np.ndarray) -> np.ndarray:
    """The scores of the action rule, ``x_a^T theta_hat_m (+ ucb_alpha ||x_a||_{V_m^{-1}})``: ``theta`` (..., M, d),
    ``v_inv`` (..., M, d, d) (read only when ``ucb_alpha > 0``), ``X`` (..., K, d) -> (..., K); model m = 0
    (``shared``) or m = a. Leading axes (seeds, in the batched form :mod:`dpbandit.agents.batched.episodic`) are
    independent: each row's result is bit for bit the single one."""
    if shared:
        # one seed: its matrix-vector product (what the stacked matmul runs per seed)
        scores = X @ theta[0] if theta.ndim == 2 else np.matmul(X, theta[..., 0, :, None])[..., 0]
        if ucb_alpha > 0:
            scores = scores + ucb_alpha * np.sqrt(np.einsum("...kd,...de,...ke->...k", X, v_inv[..., 0, :, :], X))
    else:
        scores = np.einsum("...kd,...kd->...k", X, theta)
        if ucb_alpha > 0:
            scores = scores + ucb_alpha * np.sqrt(np.einsum("...kd,...kde,...ke->...k", X, v_inv, X))
    return scores
