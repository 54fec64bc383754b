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

from dpbandit.validation import check_choice, check_int, check_real

__all__ = ["RidgeState", "STRUCTURES"]

#: The two parameter structures of :class:`~dpbandit.envs.constants.BanditConstants`.
STRUCTURES: tuple[str, ...] = ("disjoint", "shared")


class RidgeState:
    """Ridge estimates of ``theta`` with Sherman–Morrison updates of the inverse Gram matrix.

    Parameters
    ----------
    n_arms, dim:
        K and d.
    structure:
        ``"disjoint"`` (one model per arm) or ``"shared"`` (one model for all arms).
    lam:
        Regulariser lam > 0 (the initial Gram matrix is ``lam * I``).
    """

    def __init__(self, n_arms: int, dim: int, structure: str, lam: float = 1.0):
        self.n_arms = check_int("n_arms", n_arms, low=1)
        self.dim = check_int("dim", dim, low=1)
        self.structure = check_choice("structure", structure, STRUCTURES)
        self.lam = check_real("lam", lam, low=0.0, low_inclusive=False)
        self.disjoint = self.structure == "disjoint"
        models = (self.n_arms,) if self.disjoint else ()
        self.A_inv = np.empty(models + (self.dim, self.dim))
        self.b = np.empty(models + (self.dim,))
        self.theta = np.empty(models + (self.dim,))
        #: Number of samples per model: (K,) disjoint, (1,) shared.
        self.counts = np.empty(self.n_arms if self.disjoint else 1, dtype=np.int64)
        self.reset()

    def reset(self) -> None:
        """Back to the prior: ``A^{-1} = I / lam``, ``b = theta = 0``."""
        self.A_inv[...] = np.eye(self.dim) / self.lam
        self.b.fill(0.0)
        self.theta.fill(0.0)
        self.counts.fill(0)

    # ------------------------------------------------------------------ queries
    def predict(self, observation: np.ndarray) -> np.ndarray:
        """Estimated means ``x_a^T theta_hat_a`` (disjoint) or ``x_a^T theta_hat`` (shared); (K, d) -> (K,)."""
        if self.disjoint:
            return np.einsum("kd,kd->k", observation, self.theta)
        return observation @ self.theta

    def widths(self, observation: np.ndarray) -> np.ndarray:
        """Confidence widths ``||x_a||_{A^{-1}} = sqrt(x_a^T A^{-1} x_a)`` per arm; (K, d) -> (K,)."""
        return np.sqrt(self._quadratic_forms(observation)[0])

    def _quadratic_forms(self, observation: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(x_a^T A^{-1} x_a for each a, U)`` with ``U[a] = A_a^{-1} x_a``, shape ((K,), (K, d))."""
        if self.disjoint:
            U = np.matmul(self.A_inv, observation[:, :, None])[:, :, 0]
        else:
            U = observation @ self.A_inv  # A^{-1} is symmetric: row a is A^{-1} x_a
        return np.einsum("kd,kd->k", U, observation), U

    # ------------------------------------------------------------------ learning
    def update(self, x: np.ndarray, y: float, arm: int = 0) -> None:
        """Add the sample ``(x, y)`` to arm ``arm``'s model (the only model when shared); x has shape (d,)."""
        if not 0 <= arm < self.n_arms:
            raise ValueError(f"arm must be an integer in [0, {self.n_arms - 1}], got {arm!r}")
        m = arm if self.disjoint else 0
        A_inv = self.A_inv[m] if self.disjoint else self.A_inv
        u = A_inv @ x
        self._rank_one(m, A_inv, x, float(y), u)

    def _rank_one(self, m: int, A_inv: np.ndarray, x: np.ndarray, y: float, u: np.ndarray) -> None:
        """Sherman–Morrison step for model ``m`` given ``u = A_inv @ x`` (in-place, O(d^2))."""
        theta = self.theta[m] if self.disjoint else self.theta
        b = self.b[m] if self.disjoint else self.b
        scale = 1.0 / (1.0 + x @ u)
        residual = y - x @ theta
        A_inv -= np.multiply.outer(u * scale, u)
        theta += u * (residual * scale)
        b += y * x
        self.counts[m] += 1

    # ------------------------------------------------------------------ reference
    def gram(self) -> np.ndarray:
        """The Gram matrices ``A`` (K, d, d) or (d, d), rebuilt by inversion (for tests and inspection only)."""
        return np.linalg.inv(self.A_inv)
