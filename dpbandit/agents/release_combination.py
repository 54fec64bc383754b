"""Combining every episode's noisy ridge release with public weights: the episodic ridge's mode ``"weighted"``
(``spec/episodic-part2-hard-problems.md`` §1; derivation ``docs/episodic-agents.md`` §6).

Episode k releases, per model m (one shared model, or one per arm), ``G~_k = G_k + Z_k`` (d, d) and
``b~_k = b_k + z_k`` (d,), with ``Z_k ~ SymmetricGaussianNoise(sigma_G)`` and ``z_k ~ N(0, sigma_b^2 I)`` independent
over k. The estimate after release l uses

    G_w = sum_k w_k G~_k,   b_w = sum_k w_k b~_k,   max_k w_k = 1,

whose noise is ``SymmetricGaussianNoise(sigma_G ||w||_2)`` and ``N(0, sigma_b^2 ||w||_2^2 I)``. Writing
``y - c = x^T theta + eta`` (Var eta <= v_y) and ``G_k ~ t_k Sigma`` (t_k = tr G_k / d), the error of
``theta_hat = (G_w + lam I)^{-1} b_w`` along a direction u with ``u^T Sigma u = 1`` has variance, to first order,

    sum_k w_k^2 (v_y t_k + tau^2) / (sum_k w_k t_k)^2,     tau^2 = sigma_b^2 + sigma_G^2 S_r^2,

(S_r a public bound on the ridge target's l2 norm) which is smallest at **w_k proportional to t_k / (v_y t_k +
tau^2)** (inverse-variance weighting of the per-episode estimates b_k / t_k; Cauchy–Schwarz). t_k is data; the rule
uses the released ``t^_k = max(tr G~_k, 0) / d`` (post-processing), so the combination is a function of released
arrays and public constants only and costs no privacy. The weight is computed as ``v_y t^ / (v_y t^ + tau^2)`` (in
[0, 1)), which is exactly 1 for every release with t^ > 0 when the noise is off (tau = 0): then ``G_w``, ``b_w`` are
the plain sums, and the estimate is ridge regression on every user so far. A release with t^ = 0 (a model no user
fed, or a negative noisy trace) gets weight 0.

State per model: the running weighted sums (d, d) and (d,), the largest weight and the sum of squared weights:
O(M d^2) memory whatever the number of releases (the releases themselves are not kept).
"""

from __future__ import annotations

import math

import numpy as np

from dpbandit.mapped import mapped_zeros
from dpbandit.validation import check_int, check_real

__all__ = ["ReleaseCombination", "combination_weights", "noise_regulariser", "pool_gram", "pooled_shares"]


def combination_weights(gram: np.ndarray, v_y: float, tau2: float) -> np.ndarray:
    """The weight of one release per model, ``v_y t^ / (v_y t^ + tau2)`` with ``t^ = max(tr gram, 0) / d``
    (module docstring): ``gram`` (M, d, d) released (noisy) Gram matrices -> (M,) in [0, 1]; 0 where t^ = 0."""
    d = gram.shape[-1]
    t_hat = np.maximum(np.trace(gram, axis1=-2, axis2=-1), 0.0) / d
    num = v_y * t_hat
    den = num + tau2
    return np.divide(num, den, out=np.zeros_like(num), where=den > 0)


def noise_regulariser(ridge: float, sigma_G: float, w_norm: np.ndarray, dim: int,
                      tail_alpha: float | None = None) -> np.ndarray:
    """``lam_w = ridge + sigma_G ||w||_2 (2 sqrt(d) [+ 2 sqrt(ln(1/tail_alpha))])`` per model ((M,) from ``w_norm``
    (M,)): the spectral edge of the combined symmetric noise (``docs/episodic-agents.md`` §3.5), so that
    ``G_w + lam_w I`` stays near ``sum_k w_k G_k + ridge I``. With ``tail_alpha`` the bound holds with probability
    >= 1 - tail_alpha (the UCB width needs it, §6.3); without, it is the edge ``2 sqrt(d)`` the existing modes use
    (``forget``: ||w|| = 1; ``sum``: ||w|| = sqrt(m)), and the eigenvalue floor at ``ridge`` covers the rest."""
    edge = 2.0 * math.sqrt(dim)
    if tail_alpha is not None:
        edge += 2.0 * math.sqrt(math.log(1.0 / tail_alpha))
    return ridge + sigma_G * np.asarray(w_norm, dtype=float) * edge


class ReleaseCombination:
    """Running optimally weighted sums of released (G~, b~) (module docstring). Receives only released arrays.

    Args:
        n_models, dim: M and d.
        v_y: public bound on the (centred) reward's variance, ``(hi - lo)^2 / 4`` for rewards clipped to [lo, hi].
        tau2: ``sigma_b^2 + sigma_G^2 S_r^2`` (0 with the noise off).
    """

    def __init__(self, n_models: int, dim: int, v_y: float, tau2: float) -> None:
        M, d = check_int("n_models", n_models, low=1), check_int("dim", dim, low=1)
        self.v_y = check_real("v_y", v_y, low=0.0, low_inclusive=False)
        self.tau2 = check_real("tau2", tau2, low=0.0)
        self._gram, self._moment = mapped_zeros((M, d, d)), np.zeros((M, d))
        self._w_max, self._w_sq = np.zeros(M), np.zeros(M)
        self.n_releases = 0

    def add(self, gram: np.ndarray, moment: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Fold in one release (``gram`` (M, d, d), ``moment`` (M, d)) and return the combination of all so far:
        ``G_w`` (M, d, d), ``b_w`` (M, d) (weights normalised to max 1 per model) and ``||w||_2`` (M,)."""
        self.fold(gram, moment)
        return self.combined()

    def fold(self, gram: np.ndarray, moment: np.ndarray) -> None:
        """The first half of :meth:`add` (the release's arrays may then be dropped before :meth:`combined`)."""
        w = combination_weights(gram, self.v_y, self.tau2)
        product = mapped_zeros(gram.shape[1:])
        for m, G in enumerate(gram):  # model by model: one (d, d) product at a time
            self._gram[m] += np.multiply(w[m], G, out=product)
        self._moment += w[:, None] * moment
        self._w_max = np.maximum(self._w_max, w)
        self._w_sq += w * w
        self.n_releases += 1

    def combined(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The combination of every release folded in so far (new arrays; :meth:`add`)."""
        scale = np.divide(1.0, self._w_max, out=np.zeros_like(self._w_max), where=self._w_max > 0)
        gram = np.multiply(self._gram, scale[:, None, None], out=mapped_zeros(self._gram.shape))
        return gram, self._moment * scale[:, None], np.sqrt(self._w_sq) * scale


def pool_gram(gram: np.ndarray, w_norm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The disjoint structure's pooled-shape Gram matrices (``docs/episodic-agents.md`` §6.7): ``gram`` (K, d, d) the
    per-arm combined releases -> ``G_a = c_a sum_b G~_b`` with ``c_a = t^_a / sum_b t^_b`` (released traces,
    ``t^ = max(tr, 0)``), and the noise scale of the result, ``||w|| c_a sqrt(K)`` per arm (the sum of K independent
    symmetric noises has sd ``sqrt(K)`` times one). Post-processing of released arrays; it assumes the arms' second
    moments share one shape, and trades that bias for a sqrt(K)-fold signal-to-noise ratio of the Gram matrix."""
    c, w_norm = pooled_shares(gram, w_norm)
    return c[:, None, None] * gram.sum(axis=0), w_norm


def pooled_shares(gram: np.ndarray, w_norm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`pool_gram` without its matrices: ``(c (K,), the noise scale (K,))``, arm a's pooled matrix being
    ``c[a] * sum_b G~_b`` (formed one arm at a time where memory counts:
    :class:`~dpbandit.agents.floored_ridge.FlooredRidge` with ``scales``)."""
    K = gram.shape[0]
    traces = np.maximum(np.trace(gram, axis1=1, axis2=2), 0.0)
    total = traces.sum()
    c = traces / total if total > 0 else np.zeros(K)
    return c, np.asarray(w_norm, dtype=float) * c * np.sqrt(K)
