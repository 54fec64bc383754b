"""Noise samplers of the privacy mechanisms: one class per noise law, plus report-noisy-max and the local randomiser.

Every sampler takes an explicit ``numpy.random.Generator`` and is vectorised: ``sample(rng, shape)`` draws all
the noise of a call at once. The contract shared with the continual-release trees (``tree.py``, ``window.py``):

* ``Noise.sample(rng, shape)`` returns a float64 array of ``shape``.
  - iid scalar noises (:class:`GaussianNoise`, :class:`LaplaceNoise`) are elementwise;
  - vector noises (:class:`GammaNormNoise`, :class:`GeneralizedGaussianNoise`) treat the **last axis** as the
    event: one d-vector per leading index, ``d = shape[-1]``;
  - :class:`SymmetricGaussianNoise` treats the **last two axes** (square) as the event.
* ``Noise.describe()`` returns a JSON-able dict (name and scale parameters) for privacy reports.

Gaussian vectors are drawn coordinate by coordinate (``standard_normal``), never through an SVD-based
multivariate normal, so results do not depend on the BLAS build (``spec/design-anchors.md`` §2,
``spec/dp-testing-and-accounting.md`` §6).

These are float samplers: they are fit for measuring privacy–utility trade-offs in simulation, not an FP-safe DP
implementation (``spec/dp-testing-and-accounting.md`` §6, Mironov 2012). The guarantees stated below are those of
the ideal real-valued mechanisms.
"""

from __future__ import annotations

import abc
import functools
import math
import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpbandit.compiled import kernel
from dpbandit.validation import check_choice, check_generator, check_real

__all__ = [
    "Noise",
    "GaussianNoise",
    "LaplaceNoise",
    "GammaNormNoise",
    "GeneralizedGaussianNoise",
    "SymmetricGaussianNoise",
    "report_noisy_max",
    "local_laplace",
]


def _check_shape(shape: Any, *, min_ndim: int = 0) -> tuple[int, ...]:
    """``shape`` as a tuple of non-negative ints with at least ``min_ndim`` axes (an int counts as ``(n,)``)."""
    if type(shape) is tuple and len(shape) >= min_ndim and all(type(n) is int and n >= 0 for n in shape):
        return shape  # the common case, checked cheaply (trees call samplers once per round)
    if isinstance(shape, numbers.Integral) and not isinstance(shape, (bool, np.bool_)):
        shape = (int(shape),)
    if not isinstance(shape, tuple) or not all(
        isinstance(n, numbers.Integral) and not isinstance(n, (bool, np.bool_)) for n in shape
    ):
        raise TypeError(f"shape must be a tuple of integers, got {shape!r}")
    if any(n < 0 for n in shape):
        raise ValueError(f"shape must have non-negative entries, got {shape!r}")
    if len(shape) < min_ndim:
        raise ValueError(f"shape must have at least {min_ndim} axes for this noise, got {shape!r}")
    return tuple(int(n) for n in shape)


def _as_float_array(name: str, value: Any) -> np.ndarray:
    """``value`` as a float64 array; a ``TypeError`` naming ``name`` if it is not numeric."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a real number or an array of real numbers, got {value!r}") from None
    if np.asarray(value).dtype == bool:
        raise TypeError(f"{name} must be real numbers, got booleans")
    return arr


def _check_scale(name: str, value: Any) -> float:
    return check_real(name, value, low=0.0, low_inclusive=False)


class Noise(abc.ABC):
    """A noise law with a vectorised sampler (see the module docstring for the shape contract)."""

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """Short identifier, e.g. ``"gaussian"`` or ``"generalized-gaussian(l3)"``."""

    @abc.abstractmethod
    def sample(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        """A float64 array of ``shape`` drawn from this law with ``rng``."""

    @abc.abstractmethod
    def describe(self) -> dict:
        """JSON-able description (``name`` plus the scale parameters) for privacy reports."""

    def draw(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        """:meth:`sample` for callers that validated ``rng`` and ``shape`` once (the trees, per node); the same
        law and the same draws. Laws override it to skip the per-call checks."""
        return self.sample(rng, shape)


@dataclass(frozen=True)
class GaussianNoise(Noise):
    """iid ``N(0, sigma^2)`` per entry.

    With ``sigma`` from ``calibrate.gaussian_sigma_analytic(epsilon, delta, s)`` the release ``f + noise`` of a map
    with l2-sensitivity ``s`` is (epsilon, delta)-DP (Balle & Wang 2018; ``spec/dp-testing-and-accounting.md`` §1.1).
    """

    sigma: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", _check_scale("sigma", self.sigma))

    @property
    def name(self) -> str:
        return "gaussian"

    def sample(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        check_generator(rng)
        shape = _check_shape(shape)
        return self.sigma * rng.standard_normal(shape)

    def draw(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        # one pass: numpy's normal(0, sigma) is 0 + sigma * standard_normal, the bits of sample()'s product
        return rng.normal(0.0, self.sigma, shape)

    def describe(self) -> dict:
        return {"name": self.name, "sigma": self.sigma}


@dataclass(frozen=True)
class LaplaceNoise(Noise):
    """iid Laplace with density ``exp(-|z|/scale)/(2 scale)`` per entry (variance ``2 scale^2``).

    With ``scale = Delta_1/epsilon`` (``calibrate.laplace_scale``) the release is epsilon-DP for l1-sensitivity
    ``Delta_1`` (``spec/private-oco-learners.md`` §1).
    """

    scale: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", _check_scale("scale", self.scale))

    @property
    def name(self) -> str:
        return "laplace"

    def sample(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        check_generator(rng)
        shape = _check_shape(shape)
        return rng.laplace(0.0, self.scale, shape)

    def describe(self) -> dict:
        return {"name": self.name, "scale": self.scale}


@dataclass(frozen=True)
class GammaNormNoise(Noise):
    """The "l2-Laplace" (K-norm) noise on R^d with density proportional to ``exp(-||z||_2 / scale)``.

    Sampling (``spec/private-oco-learners.md`` §1): radius ``||z||_2 ~ Gamma(shape=d, scale=scale)``, direction
    uniform on the unit sphere (a normalised standard Gaussian vector). ``E||z|| = d scale``,
    ``E||z||^2 = d(d+1) scale^2``. With ``scale = Delta_2/epsilon`` (``calibrate.gamma_norm_scale``) the release is
    epsilon-DP for l2-sensitivity ``Delta_2``, for every epsilon > 0.

    The last axis of ``shape`` is the dimension d.
    """

    scale: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", _check_scale("scale", self.scale))

    @property
    def name(self) -> str:
        return "gamma-norm"

    def sample(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        check_generator(rng)
        shape = _check_shape(shape, min_ndim=1)
        d = shape[-1]
        if d == 0:
            return np.zeros(shape)
        radius = rng.gamma(d, self.scale, shape[:-1])
        g = rng.standard_normal(shape)
        return (radius / np.linalg.norm(g, axis=-1))[..., None] * g

    def describe(self) -> dict:
        return {"name": self.name, "scale": self.scale}


@dataclass(frozen=True)
class GeneralizedGaussianNoise(Noise):
    """Generalized Gaussian ``GG_{l_r}(0, sigma^2)`` on R^d: density proportional to ``exp(-||z||_r^2 / (2 sigma^2))``.

    Sampler: ``spec/han-frank-wolfe.md`` §4 (Algorithm 4, correct version; Lemma 3.1 for the radius):

    1. ``||z||_r^2 ~ Gamma(shape=d/2, scale=2 sigma^2)``;
    2. ``x_i = s_i * gamma_i^(1/r)`` with ``gamma_i ~ Gamma(1/r, 1)`` and uniform signs ``s_i`` (density of
       ``x_i`` proportional to ``exp(-|x_i|^r)``);
    3. ``z = ||z||_r * x / ||x||_r`` (the direction follows the cone measure of the l_r ball).

    It avoids both defects of the published sampler (``spec/han-frank-wolfe.md`` §9 D1: radius scale ``2 sigma``;
    §9 D2: a ``+1/r`` shift of the direction). For ``r = 2`` the law is exactly ``N(0, sigma^2 I_d)``.

    Privacy (``spec/errata.md`` E1): in a kappa-regular space with ``||.||_+ = l_r`` (``calibrate.
    kappa_regular_constants``), ``f + z`` is rho-zCDP with ``rho <= kappa s^2/(2 sigma^2)`` for ``||.||``-
    sensitivity ``s`` (Correction 2, every epsilon); ``calibrate.gg_sigma_zcdp`` inverts it.

    The last axis of ``shape`` is the dimension d. ``r`` must be finite and ``>= 1``.
    """

    sigma: float
    r: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", _check_scale("sigma", self.sigma))
        object.__setattr__(self, "r", check_real("r", self.r, low=1.0))

    @property
    def name(self) -> str:
        return f"generalized-gaussian(l{self.r:g})"

    def sample(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        check_generator(rng)
        shape = _check_shape(shape, min_ndim=1)
        d = shape[-1]
        if d == 0:
            return np.zeros(shape)
        radius = np.sqrt(rng.gamma(d / 2.0, 2.0 * self.sigma**2, shape[:-1]))
        gamma = rng.gamma(1.0 / self.r, 1.0, shape)
        signs = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
        x = signs * gamma ** (1.0 / self.r)
        norm_x = np.sum(gamma, axis=-1) ** (1.0 / self.r)  # ||x||_r^r = sum_i gamma_i
        return (radius / norm_x)[..., None] * x

    def describe(self) -> dict:
        return {"name": self.name, "sigma": self.sigma, "r": self.r}


@functools.lru_cache(maxsize=32)
def _upper_triangle(k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Flat indices of the entries on and above the diagonal of a k x k matrix and of their mirror images (int32
    where k^2 fits), and the positions of the diagonal among them (their noise scale is sqrt(2), 1 off it)."""
    rows, cols = np.triu_indices(k)
    dtype = np.int32 if k * k < 2**31 else np.int64
    upper, lower = (rows * k + cols).astype(dtype), (cols * k + rows).astype(dtype)
    diagonal = np.flatnonzero(rows == cols)
    for array in (upper, lower, diagonal):
        array.flags.writeable = False
    return upper, lower, diagonal


@kernel
def _add_symmetric(target, values, scale, diagonal_scale):
    """``target`` (k, k) += the symmetric matrix whose upper triangle, row by row, is ``values`` (k(k+1)/2,) times
    ``scale`` off the diagonal and ``diagonal_scale`` on it (each product rounded once, as numpy's)."""
    k = target.shape[0]
    p = 0
    for i in range(k):
        target[i, i] += values[p] * diagonal_scale
        p += 1
        for j in range(i + 1, k):
            z = values[p] * scale
            target[i, j] += z
            target[j, i] += z
            p += 1


@dataclass(frozen=True)
class SymmetricGaussianNoise(Noise):
    """Symmetric Gaussian matrix noise ``Z = (Z' + Z'^T)/sqrt(2)``, ``Z'_jk`` iid ``N(0, sigma^2)``.

    The DP-UCB node noise of ``spec/han-frank-wolfe.md`` §7.4 with the variances of ``spec/errata.md`` E5:
    off-diagonal entries ``N(0, sigma^2)``, diagonal entries ``N(0, 2 sigma^2)``. A change ``Delta`` of a symmetric
    statistic has Mahalanobis norm ``||Delta||_F / (sqrt(2) sigma)`` (E5).

    The last two axes of ``shape`` are the (square) matrix. Only the k(k+1)/2 entries on and above the diagonal
    are drawn (off-diagonal ``sigma * z``, diagonal ``sqrt(2) sigma * z``) and mirrored: exactly the law of
    ``(Z' + Z'^T)/sqrt(2)`` at half the draws.
    """

    sigma: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", _check_scale("sigma", self.sigma))

    @property
    def name(self) -> str:
        return "symmetric-gaussian"

    def sample(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        shape, upper, lower, values = self._draw(rng, shape)
        out = np.empty((*shape[:-2], shape[-1] ** 2))
        out[..., upper] = values
        out[..., lower] = values
        return out.reshape(shape)

    def add_sample(self, rng: np.random.Generator, target: np.ndarray) -> None:
        """``target += sample(rng, target.shape)``, in place: the same draws (one ``standard_normal`` call of
        (..., k(k+1)/2) values, row by row over the upper triangle), scaled and added entry by entry by a compiled
        loop (:func:`_add_symmetric`: the same products and sums), without a whole sample or index arrays (a
        release's Gram noise at d = 1000 is 8 MB a model)."""
        if not isinstance(target, np.ndarray) or target.dtype != np.float64 or target.ndim < 2:
            raise TypeError("target must be a float64 numpy array of at least two dimensions")
        shape = self._check_square(rng, target.shape)
        k = shape[-1]
        values = rng.standard_normal((*shape[:-2], k * (k + 1) // 2))
        for index in np.ndindex(shape[:-2]):
            _add_symmetric(target[index], values[index], self.sigma, self.sigma * math.sqrt(2.0))

    @staticmethod
    def _check_square(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[int, ...]:
        check_generator(rng)
        shape = _check_shape(shape, min_ndim=2)
        if shape[-1] != shape[-2]:
            raise ValueError(f"shape must end in a square matrix (..., k, k) for symmetric noise, got {shape!r}")
        return shape

    def _draw(self, rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[tuple[int, ...], np.ndarray, np.ndarray,
                                                                            np.ndarray]:
        """The checked shape, the flat upper and lower indices of its k x k matrices and the scaled draws
        (..., k(k+1)/2) of the entries on and above the diagonal."""
        shape = self._check_square(rng, shape)
        upper, lower, diagonal = _upper_triangle(shape[-1])
        values = rng.standard_normal((*shape[:-2], upper.size))
        on_diagonal = values[..., diagonal] * (self.sigma * math.sqrt(2.0))  # (the same product as a scale array's)
        values *= self.sigma  # in place: no second (..., k(k+1)/2) array
        values[..., diagonal] = on_diagonal
        return shape, upper, lower, values

    def describe(self) -> dict:
        return {"name": self.name, "sigma": self.sigma}


def report_noisy_max(
    rng: np.random.Generator, scores: Any, scale: float, *, form: str = "laplace"
) -> int | np.ndarray:
    """Index of ``argmax(scores + noise)``, one independent noise draw per candidate.

    ``scores`` has shape ``(..., k)``; the last axis holds the candidates. Returns an ``int`` for 1-D ``scores``,
    otherwise an int64 array of the leading shape (one independent selection per leading index).

    * ``form="laplace"``: noise ``Laplace(scale)``. For scores of sensitivity Delta (not necessarily monotone) the
      selection is ``2 Delta/scale``-DP (Dwork–Roth Claim 3.9; ``spec/han-frank-wolfe.md`` §5), hence
      ``(2 Delta/scale)^2/2``-zCDP (``spec/errata.md`` E4 item 3).
    * ``form="gumbel"``: noise ``Gumbel(scale)``; this samples ``P(i) proportional to exp(scores_i / scale)``
      exactly (the exponential mechanism), which is ``2 Delta/scale``-DP and, being bounded-range,
      ``(2 Delta/scale)^2/8``-zCDP (``spec/errata.md`` E4 item 4).

    ``calibrate.noisy_max_epsilon`` / ``noisy_max_rho`` compute these guarantees. To minimise a loss, pass its
    negation as ``scores``.
    """
    check_generator(rng)
    form = check_choice("form", form, ("laplace", "gumbel"))
    scale = _check_scale("scale", scale)
    s = _as_float_array("scores", scores)
    if s.ndim == 0 or s.shape[-1] == 0:
        raise ValueError(f"scores must have at least one candidate on the last axis, got shape {s.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError("scores must be finite (no NaN or inf)")
    noise = rng.laplace(0.0, scale, s.shape) if form == "laplace" else rng.gumbel(0.0, scale, s.shape)
    choice = np.argmax(s + noise, axis=-1)
    return int(choice) if s.ndim == 1 else choice.astype(np.int64)


def local_laplace(rng: np.random.Generator, x: Any, tau: Any) -> np.ndarray:
    """van der Hoeven's local Laplace randomiser: ``x + xi`` with ``xi_j`` density proportional to
    ``exp(-tau_j |xi_j| / 2)``, i.e. per-coordinate Laplace with scale ``2/tau_j``
    (``spec/private-oco-learners.md`` §6, "Local randomisers"; paper notation ``tau_{t,j}``).

    Shapes: ``x`` is ``(..., d)`` (one report per leading index), ``tau`` a scalar or a ``(d,)`` array of values in
    ``(0, inf]``. ``tau_j = inf`` adds no noise to coordinate j, which then is **not protected**.

    Guarantee (paper, Lemma 1): for reports with ``|x_j| <= 1`` the randomiser is ``sum_j tau_j``-LDP per report
    (``calibrate.local_laplace_epsilon``); it is enforced here: entries of ``x`` outside ``[-1, 1]`` raise
    ``ValueError`` (clip gradients first, e.g. the Huber clip of §7). Each coordinate's noise variance is
    ``2 (2/tau_j)^2 = 8/tau_j^2``.
    """
    check_generator(rng)
    x = _as_float_array("x", x)
    if x.ndim == 0:
        raise ValueError("x must have at least one axis (..., d)")
    if not np.all(np.isfinite(x)):
        raise ValueError("x must be finite (no NaN or inf)")
    if np.any(np.abs(x) > 1.0):
        raise ValueError(
            f"x must lie in [-1, 1] coordinatewise for the local Laplace guarantee, got max |x| = {np.max(np.abs(x))!r}"
        )
    tau = _as_float_array("tau", tau)
    if tau.ndim > 1 or (tau.ndim == 1 and tau.shape[0] != x.shape[-1]):
        raise ValueError(f"tau must be a scalar or have shape ({x.shape[-1]},), got shape {tau.shape}")
    if np.any(np.isnan(tau)) or np.any(tau <= 0):
        raise ValueError(f"tau must contain numbers in (0, inf], got {tau.tolist()!r}")
    scale = np.broadcast_to(2.0 / tau, x.shape[-1:])
    return x + scale * rng.laplace(0.0, 1.0, x.shape)
