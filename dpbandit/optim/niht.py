"""N-IHT: noisy iterative hard thresholding on one batch of data (the fit of FLIPHAT, Chakraborty, Roy, Basu 2024,
arXiv:2405.14038; ``spec/episodic-private-agents.md`` §1-2; user guide ``docs/episodic-agents.md``).

Given ``X`` (n, d), rewards ``y`` (n,) clipped to ``[low, high]``, a **public** normaliser ``n_tilde`` > 0 (a noisy
count, or n when n is public) and a GLM link with mean function mu, N-IHT runs M iterations from ``theta^0 = 0``::

    v       = theta^m - (eta / n_tilde) * X^T (mu(X theta^m) - y)        # gradient step on sum_i l(x_i, y_i)
    u       = peel_s(v)                                                  # private top-s (dpbandit.privacy.peeling)
    theta^{m+1} = Proj_{||.||_1 <= C}(u)                                 # l1 projection (optim.projections)

with the GLM loss ``l(z, y) = b(z) - y z`` (identity: ``(z - y)^2/2``; logistic: ``log(1 + e^z) - y z``), whose
gradient is ``x (mu(x^T theta) - y)``. Cost O(n d) per iteration (two matrix-vector products), O(M n d) per fit.

**Sensitivity** [derived]. One user contributes ``g(x, y) = x (mu(x^T theta) - y)`` to the sum. With
``||x||_inf <= x_max`` and ``||theta||_1 <= r`` the mean ``mu(x^T theta)`` lies in ``[mu(-x_max r), mu(x_max r)]``
(Hoelder), the reward in ``[low, high]``, so every coordinate obeys ``|g_j| <= x_max G(r)``,
``G(r) = max(mu(x_max r) - low, high - mu(-x_max r))`` (identity with ``[low, high] = [-R, R]``:
``G = x_max r + R``; logistic with rewards in [0, 1]: ``G <= 1``). Hence, with theta^m and n_tilde public:

* **replace one user** (same fit): ``||v - v'||_inf <= (eta/n_tilde) 2 x_max G(r) =: Delta``;
* **add or remove one user** (a user moved to another fit): ``(eta/n_tilde) x_max G(r) = Delta/2``.

``r`` is C (the paper's bound, valid for every iterate: each iterate lies in the C ball) or, with
``iterate_sensitivity=True``, the public ``||theta^m||_1`` of the current iterate (0 at the first step, so the first
peeling needs noise for ``G(0) = max(mu(0) - low, high - mu(0))`` only).

**Privacy.** Each iteration is one peeling of an l_inf-sensitivity-Delta vector; theta^m is the post-processed
output of the earlier peelings, so the M peelings compose adaptively: with the noise scale
``b_m = Delta_m sqrt(c M s/rho)`` (c = 2.5 Laplace, 1 Gumbel; :func:`~dpbandit.privacy.peeling.peeling_scale`) the fit
is rho-zCDP for replace-one neighbours and rho/4-zCDP for add/remove ones (half the sensitivity). ``rho = inf``:
exact hard thresholding to the top s of |v| (no noise).

:func:`published_peeling_scale` is the FLIPHAT code's scale (defect D-F1: lambda = eta B instead of the sensitivity,
4 x_max times too little noise), kept only for the labelled NOT-PRIVATE comparison of ``dpbandit reproduce fliphat``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from dpbandit.optim.projections import project_l1_ball
from dpbandit.privacy.peeling import SELECTIONS, gumbel_top_s, laplace_peeling, peeling_scale
from dpbandit.validation import check_choice, check_delta, check_epsilon, check_generator, check_int, check_real

__all__ = ["LINKS", "NIHTConfig", "NIHTFit", "gradient_bound", "iht_steps", "mean_at_zero", "niht", "niht_gradient",
           "published_peeling_scale", "rows_gradient"]

#: Links with a GLM loss here (mean functions: identity, logistic sigmoid).
LINKS: tuple[str, ...] = ("identity", "logistic")


def _mean(link: str, z):
    return z if link == "identity" else expit(z)


def mean_at_zero(link: str) -> float:
    """mu(0) of the link (0 identity, 1/2 logistic): the summed gradient at theta = 0 is ``sum_i x_i (mu(0) - y_i)``."""
    return float(_mean(check_choice("link", link, LINKS), 0.0))


def gradient_bound(link: str, x_max: float, theta_l1: float, reward_low: float, reward_high: float) -> float:
    """``x_max G(r)``: the bound on every coordinate of one user's gradient term ``x (mu(x^T theta) - y)`` for
    ``||x||_inf <= x_max``, ``||theta||_1 <= theta_l1`` and ``y`` in ``[reward_low, reward_high]`` (module
    docstring). The replace-one l_inf sensitivity of the step is ``(eta/n_tilde)`` times twice this."""
    check_choice("link", link, LINKS)
    x_max = check_real("x_max", x_max, low=0.0, low_inclusive=False)
    theta_l1 = check_real("theta_l1", theta_l1, low=0.0)
    low, high = check_real("reward_low", reward_low), check_real("reward_high", reward_high)
    if low > high:
        raise ValueError(f"reward_low must be <= reward_high, got [{low}, {high}]")
    z = x_max * theta_l1
    return x_max * max(float(_mean(link, z)) - low, high - float(_mean(link, -z)))


@dataclass(frozen=True)
class NIHTConfig:
    """Public hyperparameters of one N-IHT fit (all validated).

    ``sparsity`` s >= 1 (coordinates kept per iteration), ``step`` eta > 0 (the step is ``eta/n_tilde``),
    ``iterations`` M >= 1, ``radius`` C > 0 (l1 projection), ``x_max`` > 0 (the l_inf context bound),
    ``reward_low <= reward_high`` (the clip), ``link`` in :data:`LINKS`, ``selection`` in ``("laplace", "gumbel")``,
    ``iterate_sensitivity``: use ``||theta^m||_1`` instead of C in the sensitivity (module docstring).
    """

    sparsity: int
    step: float
    iterations: int
    radius: float
    x_max: float
    reward_low: float
    reward_high: float
    link: str = "identity"
    selection: str = "laplace"
    iterate_sensitivity: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "sparsity", check_int("sparsity", self.sparsity, low=1))
        object.__setattr__(self, "step", check_real("step", self.step, low=0.0, low_inclusive=False))
        object.__setattr__(self, "iterations", check_int("iterations", self.iterations, low=1))
        object.__setattr__(self, "radius", check_real("radius", self.radius, low=0.0, low_inclusive=False))
        object.__setattr__(self, "x_max", check_real("x_max", self.x_max, low=0.0, low_inclusive=False))
        check_choice("link", self.link, LINKS)
        check_choice("selection", self.selection, SELECTIONS)
        if not isinstance(self.iterate_sensitivity, bool):
            raise TypeError(f"iterate_sensitivity must be a bool, got {self.iterate_sensitivity!r}")
        gradient_bound(self.link, self.x_max, self.radius, self.reward_low, self.reward_high)  # checks the clip

    def sensitivity(self, n_tilde: float, theta_l1: float | None = None) -> float:
        """Replace-one l_inf sensitivity ``(eta/n_tilde) 2 x_max G(r)`` of one gradient step, ``r = theta_l1``
        (default C)."""
        r = self.radius if theta_l1 is None else min(theta_l1, self.radius)
        g = gradient_bound(self.link, self.x_max, r, self.reward_low, self.reward_high)
        return self.step / n_tilde * 2.0 * g


@dataclass(frozen=True)
class NIHTFit:
    """Result of :func:`niht`: ``theta`` (d,) read-only, and per iteration the ``sensitivities`` Delta_m and noise
    ``scales`` b_m (M,) used (0 with the noise off)."""

    theta: np.ndarray
    sensitivities: np.ndarray
    scales: np.ndarray


def niht(X: np.ndarray, y: np.ndarray, n_tilde: float, config: NIHTConfig, rho: float, rng: np.random.Generator,
         *, scale_factor: float = 1.0, start: np.ndarray | None = None) -> NIHTFit:
    """One N-IHT fit (module docstring): rho-zCDP for replace-one neighbours at the calibrated scale.

    ``X`` (n, d) rows with ``||x||_inf <= x_max`` (the caller checks the bound), ``y`` (n,) already clipped (checked
    here), ``n_tilde`` > 0 the public normaliser, ``rho`` > 0 or ``inf`` (no noise). ``scale_factor`` multiplies the
    calibrated noise scale; values below 1 break the guarantee and exist only for audits that must catch them.
    ``start`` is a **public** first iterate (default 0) in the C ball: audits start a fit there to reach the full
    sensitivity ``G(C)`` (on the l1 boundary), which no data set reaches from 0 (``docs/auditor.md``).
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"X must be (n, d) and y (n,), got {X.shape} and {y.shape}")
    if np.any(y < config.reward_low) or np.any(y > config.reward_high):
        raise ValueError(f"y must be clipped to [{config.reward_low:g}, {config.reward_high:g}] before the fit")
    return niht_gradient(rows_gradient(X, y, config.link), X.shape[1], n_tilde, config, rho, rng,
                         scale_factor=scale_factor, start=start)


def rows_gradient(X: np.ndarray, y: np.ndarray, link: str) -> Callable[[np.ndarray], np.ndarray]:
    """``theta -> X^T (mu(X theta) - y)`` (d,): the summed GLM gradient of the rows ``X`` (n, d), rewards ``y`` (n,)."""
    return lambda theta: X.T @ (_mean(link, X @ theta) - y)


def niht_gradient(gradient: Callable[[np.ndarray], np.ndarray], dim: int, n_tilde: float, config: NIHTConfig,
                  rho: float, rng: np.random.Generator, *, scale_factor: float = 1.0,
                  start: np.ndarray | None = None) -> NIHTFit:
    """:func:`niht` given the summed gradient ``theta -> sum_i x_i (mu(x_i^T theta) - y_i)`` (d,) of the data as a
    function, e.g. from an episode's sums (:mod:`dpbandit.agents.episode_sums`: ``G theta - b`` for the identity
    link, or the gradient at ``theta^0 = 0`` alone when M = 1). The caller guarantees what :func:`niht` checks on
    rows: ``||x||_inf <= x_max`` and rewards clipped to ``[reward_low, reward_high]``; the sensitivity, noise and
    guarantee are :func:`niht`'s. ``dim`` is d."""
    d = check_int("dim", dim, low=1)
    n_tilde = check_real("n_tilde", n_tilde, low=0.0, low_inclusive=False)
    rho = check_real("rho", rho, low=0.0, low_inclusive=False, allow_inf=True)
    scale_factor = check_real("scale_factor", scale_factor, low=0.0, low_inclusive=False)
    check_generator(rng)
    c = config
    s = min(c.sparsity, d)
    theta = np.zeros(d) if start is None else _check_start(start, d, c.radius)
    sens, scales = np.zeros(c.iterations), np.zeros(c.iterations)
    for m in range(c.iterations):
        v = theta - (c.step / n_tilde) * gradient(theta)
        sens[m] = c.sensitivity(n_tilde, float(np.abs(theta).sum()) if c.iterate_sensitivity else None)
        if math.isinf(rho):
            u = _top_s(v, s)
        else:
            scales[m] = scale_factor * peeling_scale(sens[m], s, rho, c.selection, repeats=c.iterations)
            peel = laplace_peeling if c.selection == "laplace" else gumbel_top_s
            u, _ = peel(rng, v, s, scales[m])
        theta = project_l1_ball(u, c.radius)
    theta.setflags(write=False)
    return NIHTFit(theta, sens, scales)


def iht_steps(gradient: Callable[[np.ndarray], np.ndarray], start: np.ndarray, n_tilde: float,
              config: NIHTConfig) -> np.ndarray:
    """The noise-off fit of :func:`niht_gradient` (``rho = inf``) from ``start`` (d,), returned read-only: the same
    operations and bits, without the per-call checks and sensitivity bookkeeping (a caller that fits after every user
    checks its inputs once: noise-off FLIPHAT, :mod:`dpbandit.agents.fliphat_noise_off`)."""
    c, theta = config, np.array(start, dtype=float)
    s = min(c.sparsity, theta.shape[0])
    for _ in range(c.iterations):
        theta = project_l1_ball(_top_s(theta - (c.step / n_tilde) * gradient(theta), s), c.radius)
    theta.setflags(write=False)
    return theta


def _top_s(v: np.ndarray, s: int) -> np.ndarray:
    """v with all but its s largest |v_j| set to 0 (exact selection: the noise-off peeling); of equal magnitudes the
    lowest indices are kept. A stable sort makes that choice on every machine: ``np.argpartition`` breaks ties by
    the CPU's SIMD level (it picked other coordinates with AVX-512 disabled), and clipped or discrete contexts make
    ties common (the first user's gradient ``x y`` ties wherever x is clipped)."""
    u = np.zeros(v.shape[0])
    keep = np.argsort(-np.abs(v), kind="stable")[:s]
    u[keep] = v[keep]
    return u


def _check_start(start, d: int, radius: float) -> np.ndarray:
    theta = np.array(start, dtype=float)
    if theta.shape != (d,) or not np.all(np.isfinite(theta)):
        raise ValueError(f"start must be a finite vector of shape ({d},), got shape {theta.shape}")
    if np.abs(theta).sum() > radius * (1.0 + 1e-12):
        raise ValueError(f"start must lie in the l1 ball of radius C = {radius:g}, has ||start||_1 = "
                         f"{np.abs(theta).sum():g}")
    return theta


def published_peeling_scale(step: float, n_tilde: float, B: float, sparsity: int, iterations: int, epsilon: float,
                            delta: float) -> float:
    """The FLIPHAT code's Laplace scale (``SparseBandit/utils.py``: ``peel`` at ``(epsilon/M, delta/M)`` with
    ``lambda = eta B``), in this module's parametrisation (the code steps ``eta_code 2 (G theta - c)``, so
    ``eta_code = step/(2 n_tilde)``): ``xi = eta_code B 2 sqrt(3 s ln(M/delta)) M/epsilon``.

    NOT PRIVATE (spec D-F1): lambda = eta B is not the sensitivity of the step (the correct one is
    ``4 x_max eta_code B``), so this noise is 4 x_max times too small. Used only by the labelled comparison.
    """
    check_epsilon(epsilon)
    check_delta(delta, allow_zero=False)
    eta_code = step / (2.0 * n_tilde)
    m = check_int("iterations", iterations, low=1)
    return eta_code * B * 2.0 * math.sqrt(3.0 * sparsity * math.log(m / delta)) * m / epsilon
