"""PQFTL: private quadratic follow-the-leader for online linear regression (Jain–Kothari–Thakurta 2012, §3.5;
``spec/private-oco-learners.md`` §5.4 [derived]).

Losses ``f_t(theta) = s (x_t^T theta - y_t)^2 + mu/2 ||theta||^2`` (a :class:`~dpbandit.optim.losses.SquaredLoss`
of scale s; s = 1/2 is the spec's ``1/2 (y - v^T x)^2``) on the l2 ball of ``radius``. Follow-the-leader plays the
minimiser of the cumulative loss, a quadratic in the statistics ``V_t = sum x x^T`` (d, d) and ``u_t = sum y x``
(d,). PQFTL releases both through binary trees sharing one clock (Dwork et al. 2010; ``spec/private-oco-
learners.md`` §2) and plays

    thetahat_{t+1} = argmin_{||theta|| <= R} 1/2 theta^T (2s (Vhat_t + gamma_t I) + mu t I) theta - 2s uhat_t^T theta,
    gamma_t = max(0, -lambda_min(Vhat_t))     (the smallest shift making Vhat_t + gamma_t I positive semi-definite)

(post-processing of the trees). With noise off this is exactly ridge-regularised FTL.

Computation (exact; no full eigendecomposition in the normal path). Per round:

1. gamma_t: a Cholesky factorisation of ``Vhat_t`` is attempted first; if it succeeds Vhat_t is positive definite and
   gamma_t = 0. Otherwise lambda_min(Vhat_t) alone is computed (:func:`psd_shift`: LAPACK ``?syevr`` for one
   eigenvalue, tridiagonal reduction plus bisection, about a quarter of a full ``eigh`` with vectors).
2. The step with ``A = 2s (Vhat_t + gamma_t I) + mu t I`` (positive definite, lambda_min(A) >= mu t > 0) and
   ``b = 2s uhat_t``: one Cholesky solve ``A^-1 b``; if it leaves the ball, the trust-region multiplier
   ``lam > 0`` with ``||(A + lam I)^-1 b|| = R`` by Newton's method on the secular equation
   ``1/||x(lam)|| = 1/R`` (Moré & Sorensen 1983; one Cholesky per iteration), started at the previous round's
   multiplier. ``1/||x(lam)||`` is concave and increasing on ``lam >= 0`` (A is positive definite, so the "hard
   case" cannot occur), hence a Newton step from any point lands at or left of the root, and from there the iterates
   increase monotonically to it and converge quadratically (:func:`ball_quadratic_minimiser`; kept at ``lam >= 0``,
   where ``lam = 0`` inside the ball ends the search). If it has not converged after a fixed number of iterations,
   the step falls back to one eigendecomposition and Brent's method (:func:`ball_quadratic_argmin`), so the result
   is always the exact minimiser (to floating-point precision).

The output law is that of the eigendecomposition form (same gamma_t, same minimiser to 1e-10; pinned against it in
``tests/optim/test_quadratic_ftl.py``). Cost per round: O(d^2) tree work and noise, one Cholesky attempt on Vhat_t
plus lambda_min when it fails (nearly always when the noise is on), one Cholesky solve, and when the ball binds a
few Newton steps (one Cholesky each; typically 3-5, fewer because each round starts from the previous multiplier).
Measured (``benchmarks/oco_benchmark.py`` workload, ``OPENBLAS_NUM_THREADS=1``, 2 shared cores), against one full
``eigh`` per round: d = 100 from 1,170 to 2,000 rounds/s, d = 1000 from 4.7 to 8.3 rounds/s (lambda_min alone is
about half of the d = 1000 time). With multi-threaded BLAS on busy cores both are several times slower.

Privacy: (epsilon, delta)-**DP**. Replace-one sensitivities with samples clipped to ``||x|| <= b``, ``|y| <= c``:
``||x x^T - x' x'^T||_F <= sqrt(2) b^2`` (``spec/errata.md`` E5; the spec's §5.4 bound 2 is looser) and
``||y x - y' x'||_2 <= 2 b c``. The V-tree's node noise is symmetric Gaussian (``Z = (Z' + Z'^T)/sqrt 2``, a change
D has Mahalanobis norm ``||D||_F/(sqrt(2) sigma_V)``, E5), the u-tree's iid Gaussian. Both trees get the same noise
multiplier z per unit sensitivity, so a user (who enters ``L = floor(log2 T) + 1`` nodes of each tree) faces one
Gaussian mechanism with ``mu = sqrt(2L)/z`` (``spec/dp-testing-and-accounting.md`` §1.1):
``z = sigma_analytic(epsilon, delta, sqrt(2L))``, ``sigma_V = z b^2``, ``sigma_u = 2 z b c``.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
import scipy.linalg
from scipy.optimize import brentq

from dpbandit.optim.gradient_descent import ConstrainedLearner, check_privacy, readonly
from dpbandit.optim.losses import Loss, SquaredLoss, make_loss
from dpbandit.privacy.calibrate import gaussian_sigma_analytic
from dpbandit.privacy.ledger import PrivacyLedger
from dpbandit.privacy.noise import GaussianNoise, SymmetricGaussianNoise
from dpbandit.privacy.report import PrivacyReport
from dpbandit.privacy.tree import TreeAggregator, tree_depth

__all__ = ["PQFTL", "ball_quadratic_argmin", "ball_quadratic_minimiser", "psd_shift"]

#: Newton iterations on the secular equation before the eigendecomposition fallback (quadratic convergence needs
#: a handful; the cap only guards against pathological inputs).
NEWTON_ITERATIONS = 50


def ball_quadratic_argmin(eigenvalues: np.ndarray, basis: np.ndarray, b: np.ndarray, radius: float) -> np.ndarray:
    """``argmin_{||theta|| <= radius} 1/2 theta^T A theta - b^T theta`` for ``A = basis diag(eigenvalues) basis^T``
    positive definite (eigenvalues (d,) > 0, basis (d, d) orthogonal, b (d,)).

    Inside the ball the answer is ``A^-1 b``; otherwise ``(A + lam I)^-1 b`` with the unique ``lam > 0`` at which
    its norm is ``radius`` (the norm decreases strictly in lam; bracket ``[0, ||b||/radius]``).
    """
    return _eigen_ball_step(eigenvalues, basis, b, radius)[0]


def _eigen_ball_step(eigenvalues: np.ndarray, basis: np.ndarray, b: np.ndarray,
                     radius: float) -> tuple[np.ndarray, float]:
    """:func:`ball_quadratic_argmin` and its multiplier lam (Brent's method on the eigenbasis norm)."""
    bq = basis.T @ b
    z = bq / eigenvalues
    if float(np.sqrt(z @ z)) <= radius:
        return basis @ z, 0.0

    def excess(lam: float) -> float:
        w = bq / (eigenvalues + lam)
        return float(np.sqrt(w @ w)) - radius

    lam = brentq(excess, 0.0, float(np.linalg.norm(bq)) / radius, xtol=1e-15, rtol=4 * np.finfo(float).eps)
    return basis @ (bq / (eigenvalues + lam)), lam


_POTRF, _POTRS, _TRTRS, _SYEVR = scipy.linalg.lapack.get_lapack_funcs(
    ("potrf", "potrs", "trtrs", "syevr"), dtype=np.float64)


def _lapack_ok(info: int, routine: str) -> bool:
    if info < 0:  # an illegal argument is a bug, never a property of the matrix
        raise RuntimeError(f"LAPACK {routine}: illegal value in argument {-info}")
    return info == 0


def _diagonal(a: np.ndarray) -> np.ndarray:
    """Writable view of the diagonal of a C-contiguous square matrix."""
    return a.reshape(-1)[:: a.shape[0] + 1]


def _cholesky(a: np.ndarray) -> np.ndarray | None:
    """Lower Cholesky factor (Fortran order, upper part unspecified) of the symmetric ``a`` (d, d), or None if
    ``a`` is not (numerically) positive definite. ``a.T`` is passed so that a C-ordered matrix is not copied; for a
    symmetric matrix it is the same matrix."""
    factor, info = _POTRF(a.T, lower=1, clean=0)
    return factor if _lapack_ok(info, "potrf") else None


def _cho_solve(factor: np.ndarray, b: np.ndarray) -> np.ndarray:
    x, info = _POTRS(factor, b, lower=1)
    _lapack_ok(info, "potrs")
    return x


def psd_shift(v: np.ndarray) -> float:
    """``gamma = max(0, -lambda_min(v))`` for a symmetric ``v`` (d, d): the smallest shift making ``v + gamma I``
    positive semi-definite. A successful Cholesky factorisation certifies ``v`` positive definite (gamma = 0);
    otherwise only lambda_min is computed (LAPACK ``?syevr``, eigenvalue index 1 of d, no eigenvectors)."""
    if _cholesky(v) is not None:
        return 0.0
    eigenvalues, _, _, _, info = _SYEVR(v.T, compute_v=0, range="I", il=1, iu=1, lower=1)
    if not _lapack_ok(info, "syevr"):
        raise np.linalg.LinAlgError(f"LAPACK syevr did not converge (info = {info})")
    return max(0.0, -float(eigenvalues[0]))


def ball_quadratic_minimiser(a: np.ndarray, b: np.ndarray, radius: float,
                             guess: float = 0.0) -> tuple[np.ndarray, float]:
    """``argmin_{||theta|| <= radius} 1/2 theta^T a theta - b^T theta`` for a symmetric positive definite ``a``
    (d, d) and ``b`` (d,), and its trust-region multiplier: ``(theta (d,), lam >= 0)``. The same minimiser as
    :func:`ball_quadratic_argmin`, without an eigendecomposition.

    The minimiser is ``x(lam) = (a + lam I)^-1 b`` (Cholesky solves) with ``lam = 0`` if ``||x(0)|| <= radius``, else
    the unique ``lam > 0`` with ``||x(lam)|| = radius``, found by Newton's method on the secular equation
    ``phi(lam) = 1/||x(lam)|| - 1/radius = 0`` (Moré & Sorensen 1983): step ``(||x||/||q||)^2 (||x|| - radius)/radius``
    with ``L L^T = a + lam I``, ``q = L^-1 x``, started at ``guess`` (e.g. the previous round's multiplier) and kept
    at ``lam >= 0``. For ``a`` positive definite phi is concave and increasing on ``lam >= 0`` (no "hard case"): a
    Newton step from any point lands at or left of the root, and from the left the iterates increase monotonically
    to it with quadratic convergence. Stop at ``| ||x|| - radius | <= 1e-13 radius``; the result is rescaled onto
    the sphere (a relative change below 1e-13). If Newton has not converged in :data:`NEWTON_ITERATIONS` steps or a
    factorisation fails, the eigendecomposition route of :func:`ball_quadratic_argmin` is taken.
    """
    shifted = a.copy()
    diagonal, shifted_diagonal = np.diagonal(a), _diagonal(shifted)
    lam = max(0.0, float(guess))
    for _ in range(NEWTON_ITERATIONS):
        np.add(diagonal, lam, out=shifted_diagonal)
        factor = _cholesky(shifted)
        if factor is None:
            break
        x = _cho_solve(factor, b)
        norm = math.sqrt(float(x @ x))
        if norm == 0.0 or (lam == 0.0 and norm <= radius):
            return x, 0.0
        if abs(norm - radius) <= 1e-13 * radius:
            return x * (radius / norm), lam
        q, info = _TRTRS(factor, x, lower=1)
        _lapack_ok(info, "trtrs")
        lam = max(0.0, lam + (norm * norm / float(q @ q)) * (norm - radius) / radius)
    return _eigen_ball_step(*np.linalg.eigh(a), b, radius)


class PQFTL(ConstrainedLearner):
    """Private quadratic FTL (module docstring). (epsilon, delta)-DP for every user; regret ``O(log^1.5 T)``-type
    (JKT's abstract; ``spec/private-oco-learners.md`` §5.4).

    Parameters: ``dim``, ``horizon``; ``mu > 0`` the ridge; ``loss`` a squared loss ("squared" or a
    :class:`~dpbandit.optim.losses.SquaredLoss`); ``radius`` of the l2-ball domain; ``x_bound``, ``y_bound`` the
    declared bounds (samples are clipped to them); ``epsilon`` (inf: noise off, guarantee "none"), ``delta`` in
    (0, 1); ``initial`` the first play (default 0); ``rng`` the privacy stream.
    Attributes: ``sigma_v``, ``sigma_u`` (per-node noise), ``noise_multiplier`` (z), ``sensitivity_v`` (Frobenius),
    ``sensitivity_u`` (l2).
    """

    name = "pqftl"
    guarantee = "DP"
    #: Bandit feeding (``spec/private-oco-learners.md`` §7 option 1; cf. ``spec/errata.md`` E6): a real (clipped)
    #: sample and the zero sample ``update(zeros(d), 0)`` (leaves ``0`` and ``0``) differ by
    #: ``||x x^T||_F = ||x||^2 <= b^2 = sensitivity_v/sqrt(2)`` and ``||y x|| <= b c = sensitivity_u/2``. The
    #: releases are Gaussian (mu^2 adds over the nodes, both trees at noise multiplier z), so a real <-> zero change
    #: costs ``L (1/2 + 1/4)/z^2 = (3/8) * 2L/z^2``, i.e. 3/8 of a replace-one change (``mu^2 = 2L/z^2``), and a user
    #: whose two versions play different arms (two learners, real <-> zero each) costs 3/4 of it: no more than one
    #: replace-one change. (Literally only the y x part halves; the flag states what the bandit adapter needs — two
    #: real <-> zero changes cost at most one replace-one change — which holds for this Gaussian accounting.)
    zero_sample_halves_sensitivity: ClassVar[bool] = True

    def __init__(self, dim: int, horizon: int, *, mu: float, loss: str | Loss = "squared", radius: float = 1.0,
                 x_bound: float = 1.0, y_bound: float = 1.0, epsilon: float = 1.0, delta: float = 1e-5,
                 initial: Any = None, rng: np.random.Generator | None = None):
        if not isinstance(make_loss(loss), SquaredLoss):
            raise ValueError(f"PQFTL is follow-the-leader for quadratic losses: loss must be 'squared', got {loss!r}")
        self.epsilon, self.delta, _ = check_privacy(epsilon, delta, "gaussian")
        self.private = math.isfinite(self.epsilon)
        self.needs_rng = self.private
        if not self.private:
            self.guarantee = "none"
        super().__init__(dim, horizon, mu=mu, loss=loss, domain="l2-ball", radius=radius, x_bound=x_bound,
                         y_bound=y_bound, initial=initial, rng=rng)

    def _calibrate(self, horizon: int) -> None:
        self.sensitivity_v = math.sqrt(2.0) * self.x_bound**2
        self.sensitivity_u = 2.0 * self.x_bound * self.y_bound
        self.depth = tree_depth(horizon)
        if self.private:
            self.noise_multiplier = gaussian_sigma_analytic(self.epsilon, self.delta, math.sqrt(2.0 * self.depth))
            self.sigma_v = self.noise_multiplier * self.sensitivity_v / math.sqrt(2.0)
            self.sigma_u = self.noise_multiplier * self.sensitivity_u
        else:
            self.noise_multiplier = self.sigma_v = self.sigma_u = 0.0

    def _reset_state(self) -> None:
        d, T = self.dim, self.horizon
        if self.private:
            self._v_tree = TreeAggregator((d, d), T, SymmetricGaussianNoise(self.sigma_v), self.rng)
            self._u_tree = TreeAggregator((d,), T, GaussianNoise(self.sigma_u), self.rng)
        else:
            self._v_tree = TreeAggregator((d, d), T)
            self._u_tree = TreeAggregator((d,), T)
        self.ledger = PrivacyLedger()
        self.ledger.add_tree(self._v_tree, self.sensitivity_v, mechanism="PQFTL tree of x x^T")
        self.ledger.add_tree(self._u_tree, self.sensitivity_u, mechanism="PQFTL tree of y x")
        self._x = self.initial.copy()
        self.gamma = 0.0
        self._multiplier = 0.0  # the last step's trust-region multiplier: Newton's starting point next round

    def predict(self) -> np.ndarray:
        return readonly(self._x)

    def update(self, x: Any, y: Any) -> None:
        x, y = self._sample(x, y)
        v_hat = self._v_tree.add_and_release(np.outer(x, x))
        u_hat = self._u_tree.add_and_release(y * x)
        self.gamma = psd_shift(v_hat)  # v_hat is exactly symmetric (symmetric leaves and node noise)
        s2 = 2.0 * self.loss.scale
        a = s2 * v_hat
        _diagonal(a)[:] += s2 * self.gamma + self.mu * self.t
        self._x, self._multiplier = ball_quadratic_minimiser(a, s2 * u_hat, self.domain.radius, guess=self._multiplier)

    @property
    def sensitivity_assumption(self) -> str:
        return (f"samples clipped to ||x||_2 <= {self.x_bound:g}, |y| <= {self.y_bound:g}; replace-one: "
                f"||x x^T - x' x'^T||_F <= {self.sensitivity_v:.6g} (E5, docs/derivations.md#e5), "
                f"||y x - y' x'||_2 <= {self.sensitivity_u:.6g}")

    def privacy_report(self) -> PrivacyReport:
        if not self.private:
            return self.ledger.report(0.0, guarantee="none", sensitivity_assumption=self.sensitivity_assumption)
        return self.ledger.report(self.delta, guarantee="DP", sensitivity_assumption=self.sensitivity_assumption)
