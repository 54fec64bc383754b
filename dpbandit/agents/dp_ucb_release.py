"""DP-UCB's release and what the action rule computes from it (``dpbandit.agents.dp_ucb``).

:class:`DPUCBRelease` holds the lower Cholesky factors of V_t and theta_hat_t (read-only); :func:`factor` is the
Cholesky factorisation with the post-processing lift of a V_t that the noise made indefinite; :func:`ucb_scores` the
optimistic index ``x_a^T theta_hat + beta_t ||x_a||_{V_t^{-1}}`` of each arm for one user.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.linalg import lapack

__all__ = ["DPUCBRelease", "factor", "frozen", "ucb_scores"]


@dataclass(frozen=True)
class DPUCBRelease:
    """One publication of the DP-UCB curator (all arrays read-only and owned by the release).

    ``cholesky`` (M, d, d): lower factors C of ``V_t = C C^T``; ``theta`` (M, d): ``V_t^{-1}`` times the noisy
    response column; ``beta``: the width beta_t; ``t``: users served so far; M = 1 (shared) or K (disjoint).
    """

    t: int
    cholesky: np.ndarray
    theta: np.ndarray
    beta: float
    shared: bool


def frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def factor(V: np.ndarray, rho_min: float) -> np.ndarray:
    """Lower Cholesky factors (M, d, d) of the stack V (M, d, d), of which only the lower triangles are read.

    One batched LAPACK call (``numpy.linalg.cholesky``), or LAPACK ``potrf`` directly for a single matrix (numpy's
    batched wrapper costs more than a small factorisation). With probability <= alpha the noise exceeded the
    2 Upsilon margin and a V_t is not positive definite: that model's spectrum is lifted to
    ``lambda_min = rho_min`` (post-processing, no privacy cost).
    """
    if len(V) == 1:
        U, info = lapack.dpotrf(V[0].T, lower=0, clean=1)  # the upper triangle of the F-ordered V^T: no copy
        if info == 0:
            return U.T[None]
    else:
        try:
            return np.linalg.cholesky(V)
        except np.linalg.LinAlgError:
            pass
    out = np.empty_like(V)
    for k, lower in enumerate(V):
        sym = np.tril(lower) + np.tril(lower, -1).T
        C, info = lapack.dpotrf(sym, lower=1, clean=1)
        if info > 0:
            sym[np.diag_indices_from(sym)] += rho_min - np.linalg.eigvalsh(sym)[0]
            C, info = lapack.dpotrf(sym, lower=1, clean=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"Cholesky factorisation of V_t failed (LAPACK info {info})")
        out[k] = C
    return out


def ucb_scores(release: DPUCBRelease, observation: np.ndarray) -> np.ndarray:
    """``x_a^T theta_hat + beta_t ||x_a||_{V_t^{-1}}`` for the (K, d) features: (K,)."""
    X = np.asarray(observation, dtype=float)
    C, theta = release.cholesky, release.theta
    # ||x_a||_{V^{-1}} = ||C^{-1} x_a||_2 by triangular solves (C^T is the F-ordered upper factor: no copies);
    # shared: one multi-right-hand-side solve for all arms; disjoint: one vector solve per arm's factor
    if release.shared:
        W = lapack.dtrtrs(C[0].T, X.T, lower=0, trans=1)[0]
        widths = np.sqrt(np.einsum("dk,dk->k", W, W))
        means = X @ theta[0]
    else:
        widths = np.array([math.sqrt(w @ w) for w in (lapack.dtrtrs(C[k].T, x, lower=0, trans=1)[0]
                                                       for k, x in enumerate(X))])
        means = np.einsum("kd,kd->k", X, theta)
    return means + release.beta * widths
