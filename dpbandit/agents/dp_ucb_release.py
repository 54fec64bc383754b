"""DP-UCB's release and what the action rule computes from it (``dpbandit.agents.dp_ucb``).

:class:`DPUCBRelease` holds the lower Cholesky factors C of V_t and the noisy response column u (read-only), from
which ``theta_hat_t = V_t^{-1} u``; :func:`factor` is the Cholesky factorisation with the post-processing lift of a
V_t that the noise made indefinite; :func:`ucb_scores` the optimistic index ``x_a^T theta_hat + beta_t
||x_a||_{V_t^{-1}}`` of each arm for one user, from one triangular solve per model: with ``w = C^{-1} x`` and
``r = C^{-1} u``, ``x^T theta_hat = w . r`` and ``||x||_{V^{-1}} = ||w||_2``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import lapack

__all__ = ["DPUCBRelease", "factor", "frozen", "ucb_scores"]


@dataclass(frozen=True)
class DPUCBRelease:
    """One publication of the DP-UCB curator (all arrays read-only and owned by the release).

    ``cholesky`` (M, d, d): lower factors C of ``V_t = C C^T``; ``response`` (M, d): the noisy response columns u;
    ``beta``: the width beta_t; ``t``: users served so far; M = 1 (shared) or K (disjoint).
    """

    t: int
    cholesky: np.ndarray
    response: np.ndarray
    beta: float
    shared: bool

    @property
    def theta(self) -> np.ndarray:
        """``theta_hat_t = V_t^{-1} u`` per model, (M, d): a fresh read-only array (LAPACK ``potrs``; C^T is the
        F-ordered upper factor, so no copy is made)."""
        return frozen(np.array([lapack.dpotrs(C.T, u, lower=0)[0] for C, u in zip(self.cholesky, self.response)]))


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
    """``x_a^T theta_hat + beta_t ||x_a||_{V_t^{-1}}`` for the (K, d) features: (K,).

    One LAPACK ``trtrs`` per model solves ``C [w | r] = [x | u]`` (shared: every arm's x and u in one call; disjoint:
    arm a's x_a and u_a against its factor C_a); C^T is the F-ordered upper factor and the right-hand sides are
    C-ordered rows, so LAPACK reads both without copies.
    """
    X = np.asarray(observation, dtype=float)
    C, u = release.cholesky, release.response
    if release.shared:
        W = lapack.dtrtrs(C[0].T, np.concatenate((X, u)).T, lower=0, trans=1)[0]  # (d, K + 1)
        widths = np.sqrt(np.einsum("dk,dk->k", W[:, :-1], W[:, :-1]))
        means = W[:, -1] @ W[:, :-1]
    else:
        B = np.stack((X, u), axis=1)  # (K, 2, d): arm a's right-hand sides [x_a | u_a] as B[a].T
        W = np.stack([lapack.dtrtrs(c.T, b.T, lower=0, trans=1)[0] for c, b in zip(C, B)])  # (K, d, 2)
        widths = np.sqrt(np.einsum("kd,kd->k", W[..., 0], W[..., 0]))
        means = np.einsum("kd,kd->k", W[..., 0], W[..., 1])
    return means + release.beta * widths
