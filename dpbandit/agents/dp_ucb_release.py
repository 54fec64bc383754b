"""DP-UCB's release and what the action rule computes from it (``dpbandit.agents.dp_ucb``).

:class:`DPUCBRelease` holds the lower Cholesky factors C of V_t and the noisy response column u (read-only), from which
``theta_hat_t = V_t^{-1} u``; :func:`factor` is the post-processing lift of a V_t that the noise made indefinite
(:func:`lift` for the models a kernel could not factor); :func:`ucb_scores` the optimistic index ``x_a^T theta_hat +
beta_t ||x_a||_{V_t^{-1}}`` of each arm for one user, by forward substitution with the factors: with ``w = C^{-1} x``
and ``r = C^{-1} u``, ``x^T theta_hat = w . r`` and ``||x||_{V^{-1}} = ||w||_2``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import lapack

from dpbandit.agents.dp_ucb_kernels import scores

__all__ = ["DPUCBRelease", "factor", "frozen", "lift", "ucb_index", "ucb_scores"]


@dataclass(frozen=True, init=False)
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

    def __init__(self, t: int, cholesky: np.ndarray, response: np.ndarray, beta: float, shared: bool) -> None:
        # the fields in one dict: the generated __init__ of a frozen dataclass sets them one by one through
        # object.__setattr__, about 1 us of DP-UCB's ~12 us own work per round at d = 20 (issue 25, item 4)
        object.__setattr__(self, "__dict__", {"t": t, "cholesky": cholesky, "response": response, "beta": beta,
                                              "shared": shared})

    @property
    def theta(self) -> np.ndarray:
        """``theta_hat_t = V_t^{-1} u`` per model, (M, d): a fresh read-only array (LAPACK ``potrs``; C^T is the
        F-ordered upper factor, so no copy is made)."""
        return frozen(np.array([lapack.dpotrs(C.T, u, lower=0)[0] for C, u in zip(self.cholesky, self.response)]))


def frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def factor(V: np.ndarray, rho_min: float) -> np.ndarray:
    """Lower Cholesky factor (d, d) of the symmetric matrix V_t whose lower triangle V (d, d) holds, lifted to
    ``lambda_min = rho_min`` if V_t is not positive definite (post-processing, no privacy cost; with probability
    <= alpha the noise exceeds the 2 Upsilon margin). The curator's kernel factors V_t itself and calls this only
    for a V_t it could not factor (:func:`lift`).
    """
    sym = np.tril(V) + np.tril(V, -1).T
    C, info = lapack.dpotrf(sym, lower=1, clean=1)
    if info > 0:
        sym[np.diag_indices_from(sym)] += rho_min - np.linalg.eigvalsh(sym)[0]
        C, info = lapack.dpotrf(sym, lower=1, clean=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"Cholesky factorisation of V_t failed (LAPACK info {info})")
    return C


def ucb_scores(release: DPUCBRelease, observation: np.ndarray) -> np.ndarray:
    """``x_a^T theta_hat + beta_t ||x_a||_{V_t^{-1}}`` for the (K, d) features: (K,)."""
    return ucb_index(release, observation)[0]


def ucb_index(release: DPUCBRelease, observation: np.ndarray) -> tuple[np.ndarray, int, int]:
    """``(scores, best, ties)``: :func:`ucb_scores` with the first arm of largest score and the number of arms
    sharing it (compiled forward substitutions, :func:`~dpbandit.agents.dp_ucb_kernels.scores`)."""
    X = np.ascontiguousarray(observation, dtype=float)
    C = release.cholesky
    shape = X.shape
    if len(shape) != 2 or shape[1] != C.shape[2] or (len(C) > 1 and shape[0] != len(C)):
        raise ValueError(f"observation must have shape (K, d) with d = {C.shape[-1]}"
                         + ("" if len(C) == 1 else f" and K = {len(C)}") + f", got {X.shape}")
    out = np.empty(shape[0])
    best, ties = scores(C, release.response, X, release.beta, out)
    return out, best, ties


def lift(chol: np.ndarray, V: np.ndarray, failed: np.ndarray, rho_min: float) -> None:
    """Refactor into ``chol`` (M, d, d) the models where ``failed`` (M,) is set, their V_t (``V``, lower
    triangles) lifted to ``lambda_min = rho_min`` (:func:`factor`)."""
    for m in np.flatnonzero(failed):
        chol[m] = factor(V[m], rho_min)
