"""Incremental ridge regression for linear bandit agents.

For each model (one per arm in the disjoint structure, a single one in the shared structure) the state is

    A = lam * I + sum_s x_s x_s^T,   b = sum_s y_s x_s,   theta = A^{-1} b,

and only ``A^{-1}`` is stored. A new sample (x, y) updates it with the Sherman–Morrison formula

    u = A^{-1} x,   A^{-1} <- A^{-1} - u u^T / (1 + x^T u),
    theta <- theta + u (y - x^T theta) / (1 + x^T u),

the second line being the recursive-least-squares form of ``theta = A^{-1} b`` (no per-round inversion, no
per-round solve; O(d^2) per update).

Shapes (K arms, dimension d):

* disjoint: ``A_inv`` (K, d, d), ``b`` and ``theta`` (K, d); row a of an observation is arm a's feature vector
  (in dpbandit's disjoint environments every row equals the shared context x_t);
* shared: ``A_inv`` (d, d), ``b`` and ``theta`` (d,); row a of an observation is the per-arm feature x_{t,a}.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg.blas import dger

from dpbandit.validation import check_choice, check_int, check_real

__all__ = ["RidgeState", "STRUCTURES"]

#: The two parameter structures of :class:`~dpbandit.envs.constants.BanditConstants`.
STRUCTURES: tuple[str, ...] = ("disjoint", "shared")


def _subtract_outer_numpy(W: np.ndarray, c: np.ndarray, u: np.ndarray) -> None:
    np.subtract(W, np.multiply.outer(c, u), out=W)


def _subtract_outer_blas(W: np.ndarray, c: np.ndarray, u: np.ndarray) -> None:
    # BLAS dger on the Fortran-ordered transpose updates the C-ordered W in place, without the (d+1, d)
    # temporary of the numpy form (about 5x faster at d = 200).
    dger(-1.0, u, c, a=W.T, overwrite_a=1)


def _blas_updates_in_place() -> bool:
    """Whether this scipy build's ``dger`` really overwrites its argument (checked once, at import)."""
    W = np.arange(6.0).reshape(3, 2)
    _subtract_outer_blas(W, np.ones(3), np.ones(2))
    return bool(np.array_equal(W, np.arange(6.0).reshape(3, 2) - 1.0))


_BLAS_IN_PLACE = _blas_updates_in_place()

#: Models of at most this many floats take the numpy rank-one update, whose form over a leading seed axis has the
#: same bits (``dpbandit.agents.batched.ridge`` batches exactly these); larger ones BLAS ``dger``.
NUMPY_OUTER_MAX = 2**15


def subtract_outer(W: np.ndarray, c: np.ndarray, u: np.ndarray) -> None:
    """``W -= outer(c, u)`` in place for a C-contiguous float64 matrix W: numpy up to :data:`NUMPY_OUTER_MAX`
    floats, BLAS ``dger`` (no temporary) above."""
    if W.size <= NUMPY_OUTER_MAX or not _BLAS_IN_PLACE:
        _subtract_outer_numpy(W, c, u)
    else:
        _subtract_outer_blas(W, c, u)


class RidgeState:
    """Ridge estimates of ``theta`` with Sherman–Morrison updates of the inverse Gram matrix.

    Internally every model is a slice ``W[m]`` of one buffer of shape (M, d+1, d), M = K (disjoint) or 1
    (shared): its first d rows hold ``A_m^{-1}`` and its last row ``theta_m``, so one matrix product with a feature
    vector yields both ``A^{-1} x`` and ``x^T theta``, and one rank-one update changes both.

    Parameters
    ----------
    n_arms, dim:
        K and d.
    structure:
        ``"disjoint"`` (one model per arm) or ``"shared"`` (one model for all arms).
    lam:
        Regulariser lam > 0 (the initial Gram matrix is ``lam * I``).

    Attributes
    ----------
    A_inv:
        Inverse Gram matrices, (K, d, d) disjoint or (d, d) shared (a view into ``W``).
    theta:
        Ridge estimates ``A^{-1} b``, (K, d) disjoint or (d,) shared (a view into ``W``).
    b:
        Response sums ``sum_s y_s x_s``, (K, d) disjoint or (d,) shared.
    counts:
        Number of samples per model, (K,) disjoint or (1,) shared.
    """

    def __init__(self, n_arms: int, dim: int, structure: str, lam: float = 1.0):
        self.n_arms = check_int("n_arms", n_arms, low=1)
        self.dim = check_int("dim", dim, low=1)
        self.structure = check_choice("structure", structure, STRUCTURES)
        self.lam = check_real("lam", lam, low=0.0, low_inclusive=False)
        self.disjoint = self.structure == "disjoint"
        n_models, d = (self.n_arms if self.disjoint else 1), self.dim
        self.W = np.empty((n_models, d + 1, d))
        self._b = np.empty((n_models, d))
        self.counts = np.empty(n_models, dtype=np.int64)
        self._numpy_outer = (d + 1) * d <= NUMPY_OUTER_MAX or not _BLAS_IN_PLACE
        self.reset()

    # Views without the model axis in the shared structure; properties (not stored views) so that copies and
    # pickles of the state stay consistent.
    @property
    def A_inv(self) -> np.ndarray:
        return self.W[:, : self.dim, :] if self.disjoint else self.W[0, : self.dim, :]

    @property
    def theta(self) -> np.ndarray:
        return self.W[:, self.dim, :] if self.disjoint else self.W[0, self.dim, :]

    @property
    def b(self) -> np.ndarray:
        return self._b if self.disjoint else self._b[0]

    def reset(self) -> None:
        """Back to the prior: ``A^{-1} = I / lam``, ``b = theta = 0``."""
        self.A_inv[...] = np.eye(self.dim) / self.lam
        self.theta.fill(0.0)
        self.b.fill(0.0)
        self.counts.fill(0)

    # ------------------------------------------------------------------ queries
    def products(self, observation: np.ndarray) -> np.ndarray:
        """``R[a] = (A_a^{-1} x_a, x_a^T theta_a)`` for every arm; (K, d) -> (K, d+1).

        ``R[:, :d]`` holds ``A^{-1} x_a`` (A^{-1} is symmetric) and ``R[:, d]`` the estimated means.
        """
        if self.disjoint:
            return np.matmul(self.W, observation[:, :, None])[:, :, 0]
        return observation @ self.W[0].T

    def predict(self, observation: np.ndarray) -> np.ndarray:
        """Estimated means ``x_a^T theta_hat_a`` (disjoint) or ``x_a^T theta_hat`` (shared); (K, d) -> (K,)."""
        if self.disjoint:
            return np.einsum("kd,kd->k", observation, self.theta)
        return observation @ self.theta

    def widths(self, observation: np.ndarray) -> np.ndarray:
        """Confidence widths ``||x_a||_{A^{-1}} = sqrt(x_a^T A^{-1} x_a)`` per arm; (K, d) -> (K,)."""
        U = self.products(observation)[:, : self.dim]
        return np.sqrt(np.einsum("kd,kd->k", U, observation))

    # ------------------------------------------------------------------ learning
    def update(self, x: np.ndarray, y: float, arm: int = 0) -> None:
        """Add the sample ``(x, y)`` to arm ``arm``'s model (the only model when shared); x has shape (d,).

        Sherman–Morrison on ``A^{-1}`` and the recursive-least-squares step on ``theta`` together, as one
        rank-one update of ``W``: O(d^2).
        """
        if not 0 <= arm < self.n_arms:
            raise ValueError(f"arm must be an integer in [0, {self.n_arms - 1}], got {arm!r}")
        d = self.dim
        m = arm if self.disjoint else 0
        W = self.W[m]
        # (A^{-1} x, x^T theta). matmul with a (d, 1) column and a (1, d) x (d, 1) product, not ``W @ x`` and
        # ``x @ u``: the seed-batched path (dpbandit.experiment.batch) makes the same per-matrix calls on stacks and
        # gets bitwise-equal results
        r = np.matmul(W, x[:, None])[:, 0]
        u = r[:d]
        scale = 1.0 / (1.0 + np.matmul(x[None, :], u[:, None])[0, 0])
        c = r * scale
        c[d] = (r[d] - y) * scale
        if self._numpy_outer:  # subtract_outer, inlined (its numpy form)
            np.subtract(W, np.multiply.outer(c, u), out=W)
        else:
            _subtract_outer_blas(W, c, u)
        self._b[m] += y * x
        self.counts[m] += 1

    # ------------------------------------------------------------------ reference
    def gram(self) -> np.ndarray:
        """The Gram matrices ``A`` (K, d, d) or (d, d), rebuilt by inversion (for tests and inspection only)."""
        return np.linalg.inv(self.A_inv)
