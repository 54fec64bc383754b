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
from dpbandit.mapped import mapped_zeros

__all__ = ["FlooredRidge"]


class FlooredRidge:
    """``V = shape + lam I`` per model with eigenvalues floored at ``ridge`` (module docstring): Cholesky factors of
    V where the floor is inactive, of V lifted to the floor where it acts.

    Args:
        shape: (M, d, d) symmetric released (combined) Gram matrices; or, with ``scales``, (K, d, d) matrices whose
            sum's multiple ``scales[m] * shape.sum(axis=0)`` is model m's (the pooled shapes of
            :func:`~dpbandit.agents.release_combination.pool_gram`, formed one model at a time, in place).
        lam: (M,) regularisers, each >= ``ridge``.
        ridge: the eigenvalue floor, > 0.
        psd: whether every ``shape[m]`` is positive semi-definite by construction (noise off); no floor test then.
        draws: whether :meth:`draw_factor` will be asked for (it keeps each V, M d^2 floats, until then).
        scales: (M,) or None (module docstring's ``shape[m]`` is ``shape`` itself).
        b: (M, d) or None: ``theta`` (M, d) = :meth:`solve` of it, computed model by model as V is factorised.
        keep: False (with ``b``): no factor is kept past its model's solve (:meth:`inverse`, :meth:`solve` and
            :meth:`draw_factor` are then refused).

    Memory: per model its factor (d^2 floats, V's own array, factorised in place; one at a time without ``keep``)
    and, with ``draws``, V; the lift's eigenvectors and their product while the floor acts.
    """

    def __init__(self, shape: np.ndarray, lam: np.ndarray, ridge: float, psd: bool = False,
                 draws: bool = True, scales: np.ndarray | None = None, b: np.ndarray | None = None,
                 keep: bool = True) -> None:
        M, d = shape.shape[0], shape.shape[-1]
        self.ridge, self.dim = float(ridge), d
        if not keep and b is None:
            raise ValueError("keep=False needs b: without factors only the solve of b is left")
        self.kept = keep
        self.theta = None if b is None else np.empty_like(b, dtype=float)
        self._b = b
        #: per model: "scalar" (V = e I), "cholesky" (floor inactive), "lifted" (the floor acts: V lifted, then
        #: factorised) or "eigen" (the lifted V could not be factorised: the full eigendecomposition)
        self.kinds: list[str] = []
        self._parts: list[tuple] = []  # (e,), (L, V_floor) or (e floored, U)
        for m in range(M):
            self._factorise(shape, scales, m, float(lam[m]), psd, draws)

    def _factorise(self, shape: np.ndarray, scales: np.ndarray | None, m: int, lam: float, psd: bool,
                   draws: bool) -> None:
        """Model m's factor (module docstring), added by :meth:`_add`; its work arrays die with this call."""
        d = self.dim
        V = mapped_zeros((d, d), order="F")  # F-ordered: LAPACK works on it in place
        if not self._form(V, shape, scales, m, None).any():  # V = lam I (nothing released yet): floored at ridge,
            self._add("scalar", max(lam, self.ridge))  # no factorisation
            return
        V.flat[:: d + 1] += lam  # S + lam I, the same floats as S + lam * eye(d)
        kind = "cholesky"
        if not psd:  # the floor test works in V's array; V is formed again after it
            kind = "cholesky" if self._above_floor(V) else "lifted"
            self._form(V, shape, scales, m, lam)
        if kind == "lifted":
            self._lift(V)
        kept = V.copy(order="F") if draws else None
        L, info = lapack.dpotrf(V, lower=1, clean=1, overwrite_a=1)  # in place: L is V's array
        if info == 0:
            self._add(kind, L, kept)
            return
        if kept is None:  # (the failed factorisation overwrote V) V formed again, for the rare fallback
            kept = self._form(V, shape, scales, m, lam)
            if kind == "lifted":
                self._lift(kept)
        evals, evecs = np.linalg.eigh(kept)  # ridge below V's rounding: the floor at full cost
        self._add("eigen", np.maximum(evals, self.ridge), evecs)

    def _add(self, kind: str, *part) -> None:
        m = len(self.kinds)
        self.kinds.append(kind)
        if self.theta is not None:
            self.theta[m] = self._solve_one(kind, part, self._b[m], None)
        self._parts.append(part if self.kept else ())

    def _above_floor(self, V: np.ndarray) -> bool:
        """Whether ``V - ridge I`` is positive definite (its Cholesky factorisation succeeds), for V (d, d) symmetric
        and F-ordered; V's array holds the test's work afterwards (one d x d matrix in memory instead of two)."""
        V.flat[:: self.dim + 1] -= self.ridge
        return lapack.dpotrf(V, lower=1, clean=0, overwrite_a=1)[1] == 0

    def _lift(self, V: np.ndarray) -> None:
        """``V <- V_floor = V + U_k diag(ridge - e_k) U_k^T`` in place, over the k eigenpairs of V with
        ``e_k <= ridge`` (LAPACK ``dsyevr`` on that range only: V's tridiagonal form and k eigenvectors, not all d)."""
        work = mapped_zeros(V.shape, order="F")  # (LAPACK's copy, in a mapping of its own)
        work[...] = V
        e, U = scipy.linalg.eigh(work, subset_by_value=(-np.inf, self.ridge), driver="evr", overwrite_a=True)
        V += np.matmul(U * (self.ridge - e), U.T, out=work.T)  # (work.T: C-ordered, as a new product's array)

    @staticmethod
    def _form(out: np.ndarray, shape: np.ndarray, scales: np.ndarray | None, m: int, lam: float | None) -> np.ndarray:
        """``out`` (d, d) <- model m's matrix ``shape[m]`` or ``scales[m] * shape.sum(axis=0)`` (the same floats
        as the pooled (K, d, d) array's: numpy sums an outer axis in index order, a test checks it), plus ``lam`` on
        the diagonal unless None; returns ``out``."""
        np.copyto(out, shape[m] if scales is None else shape[0])
        if scales is not None:
            for b in range(1, shape.shape[0]):
                out += shape[b]
            out *= scales[m]
        if lam is not None:
            out.flat[:: out.shape[0] + 1] += lam
        return out

    @staticmethod
    def _eigen_inverse(evals: np.ndarray, evecs: np.ndarray) -> np.ndarray:
        return (evecs / evals[None, :]) @ evecs.T  # U diag(1/e) U^T by BLAS-3 matmul

    def inverse(self) -> np.ndarray:
        """``V_floor^{-1}`` (M, d, d), symmetric."""
        self._check_kept()
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
        the eigendecomposition path when given (the same floats as without it)."""
        self._check_kept()
        out = np.empty_like(b, dtype=float)
        for m, (kind, part) in enumerate(zip(self.kinds, self._parts)):
            out[m] = self._solve_one(kind, part, b[m], None if inverse is None else inverse[m])
        return out

    def _solve_one(self, kind: str, part: tuple, b: np.ndarray, inverse: np.ndarray | None) -> np.ndarray:
        """One model's ``V_floor^{-1} b`` (d,)."""
        if kind == "scalar":
            return b * (1.0 / part[0])  # (I / e) b, as the product with a diagonal inverse computes it
        if kind == "eigen":
            return np.einsum("ij,j->i", inverse if inverse is not None else self._eigen_inverse(*part), b)
        theta, info = lapack.dpotrs(part[0], b, lower=1)
        if info != 0:  # pragma: no cover - arguments are checked above
            raise np.linalg.LinAlgError(f"dpotrs failed (info = {info})")
        return theta

    def _check_kept(self) -> None:
        if not self.kept:
            raise ValueError("this FlooredRidge kept no factors (keep=False): only its theta is known")

    def draw_factor(self, R: float, tau2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The Thompson draw's ``(basis (M, d, d), scale (M, d))`` with ``basis diag(scale^2) basis^T =
        R^2 V_floor^{-1} + tau2_m V_floor^{-2}`` (``tau2`` (M,)): ``V_floor^{-1} C`` and ones where V_floor is
        factorised (module docstring); eigenvectors and the per-direction sds where V = lam I or in the
        eigendecomposition fallback."""
        self._check_kept()
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
