"""The floored ridge matrix of an episodic ridge release and what its estimate and action rules need, by Cholesky
factorisation of V, lifted to the floor by its few eigenpairs below it where the floor acts (issue 25; ``spec/episodic-part2-hard-problems.md`` §1.2,
§2.1-2.2; ``docs/episodic-agents.md`` §3, §6).

Per model m (one shared, or one per arm) a release publishes, from released arrays only (post-processing),

    V = S + lam I   with every eigenvalue floored at ``ridge``:  V_floor = U diag(max(e, ridge)) U^T,

(S (d, d) the combined noisy Gram matrix, lam >= ridge the regulariser; ``V = U diag(e) U^T``), and from it
``theta_hat = V_floor^{-1} b``, ``V_floor^{-1}`` (the UCB widths) and a factor F with
``F F^T = R^2 V_floor^{-1} + tau^2 V_floor^{-2}`` (the Thompson draw ``theta_hat + F xi``).

**When the floor is inactive** — every eigenvalue of V is at least ``ridge``, i.e. ``V - ridge I = S + (lam - ridge) I``
is positive definite — ``V_floor = V`` exactly, and none of this needs V's eigenvectors. The test is itself a Cholesky
factorisation of ``V - ridge I`` (it succeeds if and only if that matrix is positive definite, up to rounding of the
order of the matrix's unit roundoff, where flooring would change eigenvalues by that much only). ``psd=True`` states
that S is positive semi-definite by construction (the noise is off: S is a non-negative combination of Gram sums),
so V >= lam I >= ridge I and no test is needed. Then, with ``V = L L^T`` (LAPACK ``dpotrf``, d^3/3 flops; V is
``V_floor`` below when the floor acts):

* ``theta_hat = V^{-1} b`` by two triangular solves (``dpotrs``, 2 d^2);
* ``V^{-1}`` by ``dpotri`` (2 d^3 / 3), only when a rule needs it;
* ``F = V^{-1} C`` with ``C C^T = R^2 V + tau^2 I`` (one more ``dpotrf`` and ``dpotrs`` with d right-hand sides):
  ``F F^T = V^{-1} (R^2 V + tau^2 I) V^{-1} = R^2 V^{-1} + tau^2 V^{-2}``, the law of spec §2.2 (another square
  root of the same covariance than ``U diag(sqrt(R^2/e + tau^2/e^2))``: same distribution of the draw, other
  realisations from the same xi).

Against ``np.linalg.eigh`` (about 9 d^3 flops, 0.17 s at d = 1000 on one core) and the ``U diag(1/e) U^T`` product
(2 d^3), the greedy rule's release costs two ``dpotrf`` (2 d^3 / 3: about 20 ms at d = 1000).

**When the floor acts** (k eigenvalues of V at or below ``ridge``, found by the failed test) only those eigenpairs
are computed (LAPACK ``dsyevr`` on the range ``(-inf, ridge]``: V's tridiagonal form, about 4 d^3 / 3 flops, and k
eigenvectors; 55 ms at d = 1000 against 170 ms for all of them) and V is lifted exactly as the floor prescribes,
``V_floor = V + U_k diag(ridge - e_k) U_k^T`` (the other eigenpairs are untouched), then factorised like an
unfloored V. Only if that factorisation fails (``ridge`` below V's rounding error) is the full eigendecomposition
used: ``V^{-1} = (U / e) U^T``, ``theta_hat = V^{-1} b``, Thompson basis U and sds ``sqrt(R^2/e + tau^2/e^2)`` —
the arithmetic of the releases before this module. A model whose S is zero (nothing released yet) has
``V = lam I``: ``theta_hat = b / lam``, no factorisation.

Shapes: ``shape`` (M, d, d) symmetric, ``lam`` (M,), ``b`` (M, d).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
from scipy.linalg import lapack

from dpbandit.agents.release_rules import thompson_scale

__all__ = ["FlooredRidge"]


class FlooredRidge:
    """``V = shape + lam I`` per model with eigenvalues floored at ``ridge`` (module docstring): Cholesky factors of
    V where the floor is inactive, of V lifted to the floor where it acts.

    Args:
        shape: (M, d, d) symmetric released (combined) Gram matrices.
        lam: (M,) regularisers, each >= ``ridge``.
        ridge: the eigenvalue floor, > 0.
        psd: whether every ``shape[m]`` is positive semi-definite by construction (noise off); no floor test then.
        draws: whether :meth:`draw_factor` will be asked for (it keeps each V, M d^2 floats, until then).
    """

    def __init__(self, shape: np.ndarray, lam: np.ndarray, ridge: float, psd: bool = False,
                 draws: bool = True) -> None:
        M, d = shape.shape[0], shape.shape[-1]
        self.ridge, self.dim = float(ridge), d
        #: per model: "scalar" (V = e I), "cholesky" (floor inactive), "lifted" (the floor acts: V lifted, then
        #: factorised) or "eigen" (the lifted V could not be factorised: the full eigendecomposition)
        self.kinds: list[str] = []
        self._parts: list[tuple] = []  # (e,), (L, V_floor) or (e floored, U)
        for m in range(M):
            if not shape[m].any():  # V = lam I (nothing released yet): floored at ridge, no factorisation
                self._add("scalar", max(float(lam[m]), self.ridge))
                continue
            V = shape[m].copy()
            V.reshape(-1)[:: d + 1] += lam[m]  # S + lam I, the same floats as S + lam * eye(d)
            kind = "cholesky" if psd or self._above_floor(V) else "lifted"
            if kind == "lifted":
                V = self._lift(V)
            L, info = lapack.dpotrf(V, lower=1, clean=1)
            if info == 0:
                self._add(kind, L, V if draws else None)
                continue
            evals, evecs = np.linalg.eigh(V)  # ridge below V's rounding: the floor at full cost
            self._add("eigen", np.maximum(evals, self.ridge), evecs)

    def _add(self, kind: str, *part) -> None:
        self.kinds.append(kind)
        self._parts.append(part)

    def _above_floor(self, V: np.ndarray) -> bool:
        """Whether ``V - ridge I`` is positive definite (its Cholesky factorisation succeeds)."""
        A = V.copy()
        A.reshape(-1)[:: self.dim + 1] -= self.ridge
        return lapack.dpotrf(A.T, lower=1, clean=0, overwrite_a=1)[1] == 0  # A.T: the same matrix, F-ordered

    def _lift(self, V: np.ndarray) -> np.ndarray:
        """``V_floor = V + U_k diag(ridge - e_k) U_k^T`` over the k eigenpairs of V with ``e_k <= ridge`` (LAPACK
        ``dsyevr`` on that range only: V's tridiagonal form and k eigenvectors, not all d)."""
        e, U = scipy.linalg.eigh(V, subset_by_value=(-np.inf, self.ridge), driver="evr")
        return V + (U * (self.ridge - e)) @ U.T

    @staticmethod
    def _eigen_inverse(evals: np.ndarray, evecs: np.ndarray) -> np.ndarray:
        return (evecs / evals[None, :]) @ evecs.T  # U diag(1/e) U^T by BLAS-3 matmul

    def inverse(self) -> np.ndarray:
        """``V_floor^{-1}`` (M, d, d), symmetric."""
        out = []
        for kind, part in zip(self.kinds, self._parts):
            if kind == "scalar":
                out.append(np.eye(self.dim) / part[0])
            elif kind == "eigen":
                out.append(self._eigen_inverse(*part))
            else:
                inv, info = lapack.dpotri(part[0], lower=1)  # the lower triangle of V^{-1}
                if info != 0:  # pragma: no cover - a successful dpotrf has a non-singular factor
                    raise np.linalg.LinAlgError(f"dpotri failed (info = {info})")
                out.append(np.tril(inv) + np.tril(inv, -1).T)
        return np.stack(out)

    def solve(self, b: np.ndarray, inverse: np.ndarray | None = None) -> np.ndarray:
        """``theta_hat = V_floor^{-1} b`` (M, d) for ``b`` (M, d); ``inverse`` (from :meth:`inverse`) is reused by
        the eigendecomposition path when given."""
        out = np.empty_like(b, dtype=float)
        for m, (kind, part) in enumerate(zip(self.kinds, self._parts)):
            if kind == "scalar":
                out[m] = b[m] * (1.0 / part[0])  # (I / e) b, as the product with a diagonal inverse computes it
            elif kind == "eigen":
                v_inv = inverse[m] if inverse is not None else self._eigen_inverse(*part)
                out[m] = np.einsum("ij,j->i", v_inv, b[m])
            else:
                out[m], info = lapack.dpotrs(part[0], b[m], lower=1)
                if info != 0:  # pragma: no cover - arguments are checked above
                    raise np.linalg.LinAlgError(f"dpotrs failed (info = {info})")
        return out

    def draw_factor(self, R: float, tau2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The Thompson draw's ``(basis (M, d, d), scale (M, d))`` with ``basis diag(scale^2) basis^T =
        R^2 V_floor^{-1} + tau2_m V_floor^{-2}`` (``tau2`` (M,)): ``V_floor^{-1} C`` and ones where V_floor is
        factorised (module docstring); eigenvectors and the per-direction sds where V = lam I or in the
        eigendecomposition fallback."""
        bases, scales = [], []
        for m, (kind, part) in enumerate(zip(self.kinds, self._parts)):
            if kind in ("cholesky", "lifted"):
                L, V = part
                if V is None:
                    raise ValueError("draw_factor needs a FlooredRidge built with draws=True")
                C = (R * R) * V + tau2[m] * np.eye(self.dim)
                C, info = lapack.dpotrf(C, lower=1, clean=1)
                if info == 0:
                    bases.append(lapack.dpotrs(L, C, lower=1)[0])
                    scales.append(np.ones(self.dim))
                    continue
                evals, evecs = np.linalg.eigh(V)  # R = tau = 0 only: the draw is theta_hat (scale 0)
                evals = np.maximum(evals, self.ridge)
            elif kind == "scalar":
                evals, evecs = np.full(self.dim, part[0]), np.eye(self.dim)
            else:
                evals, evecs = part
            bases.append(evecs)
            scales.append(thompson_scale(evals[None, :], R, np.asarray([tau2[m]]))[0])
        return np.stack(bases), np.stack(scales)
