"""Convex domains of the online learners and exact Euclidean projections onto them.

Projections (all vectorised over leading axes: ``v`` has shape ``(..., d)``, the result the same shape; exact up to
floating point; only the general l_p ball needs an iterative solver):

* :func:`project_l2_ball` — ``v min(1, R/||v||_2)``;
* :func:`project_simplex` — onto ``{w >= 0, sum w = s}`` by the sort-based algorithm (Held–Wolfe–Crowder 1974;
  Duchi, Shalev-Shwartz, Singer, Chandra 2008), ``O(d log d)``;
* :func:`project_l1_ball` — onto ``{||w||_1 <= R}``: identity inside, otherwise ``sign(v) * project_simplex(|v|, R)``
  (Duchi et al. 2008), ``O(d log d)``;
* :func:`project_box` — coordinatewise clipping onto ``[low, high]^d``;
* :func:`project_lp_ball` — onto ``{||w||_p <= R}``, ``p`` in [1, inf]: the three above for p = 1, 2, inf;
  otherwise the KKT system solved by safeguarded Newton iterations (:func:`_lp_ball_newton`), to float precision.

A :class:`Domain` bundles a set with its projection and the geometric constants the learners' calibrations and
step sizes need: the l2 diameter ``D = max ||x - y||_2`` (``spec/private-oco-learners.md``, Notation) and the
largest l2 norm of a point (which bounds ``|x^T theta| <= ||x||_2 max_norm``, hence the Lipschitz constant of a GLM
loss on the domain). Build one with :func:`make_domain`.
"""

from __future__ import annotations

import abc

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dpbandit.geometry import check_p, lp_norm
from dpbandit.validation import check_choice, check_int, check_real

__all__ = [
    "project_l2_ball",
    "project_simplex",
    "project_l1_ball",
    "project_box",
    "project_lp_ball",
    "Domain",
    "L2Ball",
    "L1Ball",
    "Simplex",
    "Box",
    "LpBall",
    "DOMAINS",
    "make_domain",
]


def _as_vectors(v: Any) -> np.ndarray:
    arr = np.asarray(v, dtype=float)
    if arr.ndim == 0:
        raise ValueError("v must have at least one axis (..., d)")
    return arr


def _positive(name: str, value: Any) -> float:
    return check_real(name, value, low=0.0, low_inclusive=False)


def project_l2_ball(v: Any, radius: float = 1.0) -> np.ndarray:
    """Euclidean projection of ``v`` (..., d) onto the l2 ball of ``radius``."""
    return _l2_ball(_as_vectors(v), _positive("radius", radius))


def _l2_ball(v: np.ndarray, radius: float) -> np.ndarray:
    if v.ndim == 1:  # the per-round case: no temporaries
        norm = math.sqrt(float(v @ v))
        return v * (radius / norm) if norm > radius else v.copy()
    norm = np.sqrt(np.einsum("...i,...i->...", v, v))[..., None]
    return v * np.minimum(1.0, radius / np.maximum(norm, np.finfo(float).tiny))


def project_simplex(v: Any, total: float = 1.0) -> np.ndarray:
    """Euclidean projection of ``v`` (..., d) onto ``{w >= 0, sum_i w_i = total}``.

    Sort ``u`` decreasingly; with ``k`` the largest index such that ``u_k > (sum_{j<=k} u_j - total)/k``, the
    projection is ``max(v - tau, 0)`` with ``tau = (sum_{j<=k} u_j - total)/k`` (the condition holds exactly on a
    prefix of indices, so ``k`` is the number of indices where it holds).
    """
    return _simplex(_as_vectors(v), _positive("total", total))


def _simplex(v: np.ndarray, total: float) -> np.ndarray:
    d = v.shape[-1]
    u = -np.sort(-v, axis=-1)
    excess = np.cumsum(u, axis=-1) - total
    k = np.arange(1, d + 1)
    support = np.sum(u * k > excess, axis=-1, keepdims=True)  # >= 1 always (k = 1: u_1 > u_1 - total)
    tau = np.take_along_axis(excess, support - 1, axis=-1) / support
    return np.maximum(v - tau, 0.0)


def project_l1_ball(v: Any, radius: float = 1.0) -> np.ndarray:
    """Euclidean projection of ``v`` (..., d) onto the l1 ball of ``radius``."""
    return _l1_ball(_as_vectors(v), _positive("radius", radius))


def _l1_ball(v: np.ndarray, radius: float) -> np.ndarray:
    a = np.abs(v)
    if v.ndim == 1:
        return v.copy() if float(a.sum()) <= radius else np.sign(v) * _simplex(a, radius)
    inside = np.sum(a, axis=-1, keepdims=True) <= radius
    return np.where(inside, v, np.sign(v) * _simplex(a, radius))


def project_box(v: Any, low: float = -1.0, high: float = 1.0) -> np.ndarray:
    """Euclidean projection of ``v`` (..., d) onto the box ``[low, high]^d`` (coordinatewise clipping)."""
    low = check_real("low", low)
    high = check_real("high", high)
    if not low < high:
        raise ValueError(f"the box needs low < high, got low={low!r}, high={high!r}")
    return np.clip(_as_vectors(v), low, high)


def project_lp_ball(v: Any, p: float, radius: float = 1.0) -> np.ndarray:
    """Euclidean projection of ``v`` (..., d) onto the l_p ball ``{||w||_p <= radius}``, ``p`` in [1, inf].

    p = 1, 2, inf: :func:`project_l1_ball`, :func:`project_l2_ball`, clipping to ``[-radius, radius]``; otherwise
    :func:`_lp_ball_newton`. Points inside the ball are returned unchanged (as a copy).
    """
    return _lp_ball(_as_vectors(v), check_p(p), _positive("radius", radius))


def _lp_ball(v: np.ndarray, p: float, radius: float) -> np.ndarray:
    if math.isinf(p):
        return np.clip(v, -radius, radius)
    if p == 1.0:
        return _l1_ball(v, radius)
    if p == 2.0:
        return _l2_ball(v, radius)
    out = v.copy()
    rows = out.reshape(-1, v.shape[-1])  # a view: rows outside the ball are overwritten in place
    outside = np.atleast_1d(lp_norm(rows, p) > radius)
    if outside.any():
        rows[outside] = _lp_ball_newton(rows[outside], p, radius)
    return out


def _lp_ball_newton(y: np.ndarray, p: float, radius: float, max_iter: int = 100) -> np.ndarray:
    """Projection of the rows of ``y`` (m, d), each with ``||y||_p > radius``, onto the l_p ball, 1 < p < inf.

    KKT [derived]: ``u_i = sign(y_i) w_i`` with ``w_i + lam p w_i^(p-1) = |y_i|`` and ``lam > 0`` such that
    ``||w||_p = radius``. Divide each row by its largest entry (``a = |y|/max|y|`` in [0, 1], ``r`` the radius in
    these units) and write ``w = tau z`` with ``tau`` the weight of the largest entry: then ``z_max = 1`` and every
    ``z_i`` solves ``tau z + (1 - tau) z^(p-1) = a_i`` (increasing in ``z``, root in [0, 1]; ``lam`` never appears,
    so nothing overflows however small the radius or large ``p``), and ``tau`` in (0, 1) solves
    ``F(log tau) = log tau + log ||z(tau)||_p - log r = 0``, bracketed by ``r d^(-1/p) <= tau <= min(r, 1)``
    (because ``1 <= ||z||_p <= d^(1/p)``).

    * ``z_i``: Newton from the smallest of the upper bounds ``1, a/tau, (a/(1-tau))^(1/(p-1))`` (within a factor 2
      of the root), decreasing monotonically on a convex increasing function: in ``z`` for p > 2, in
      ``s = z^(p-1)`` for p < 2 (``s^(1/(p-1))`` is convex there, ``z^(p-1)`` is not).
    * ``tau``: Newton on ``F`` with ``dz/dtau = (z^(p-1) - z) / (tau + (1 - tau)(p - 1) z^(p-2))`` (implicit
      differentiation; written without ``z^(p-2)`` for p < 2), safeguarded by the bracket.

    The result is rescaled by ``min(1, radius/||w||_p)`` so that rounding never leaves the ball.
    """
    scale = np.abs(y).max(axis=1, keepdims=True)
    a = np.abs(y) / scale
    log_r = np.log(radius / scale[:, 0])
    d, eps = y.shape[1], 4.0 * np.finfo(float).eps

    def profile(tau: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # tau (m, 1) -> z and dz/dtau, (m, d)
        slack = a / (1.0 - tau)
        if p > 2.0:
            z = np.minimum(np.minimum(1.0, a / tau), slack ** (1.0 / (p - 1.0)))
            for _ in range(max_iter):
                step = (tau * z + (1.0 - tau) * z ** (p - 1.0) - a) / (tau + (1.0 - tau) * (p - 1.0) * z ** (p - 2.0))
                z = np.maximum(z - step, 0.0)
                if np.max(step) <= eps:
                    break
            return z, (z ** (p - 1.0) - z) / (tau + (1.0 - tau) * (p - 1.0) * z ** (p - 2.0))
        k = 1.0 / (p - 1.0)
        s = np.minimum(np.minimum(1.0, (a / tau) ** (p - 1.0)), slack)
        for _ in range(max_iter):
            step = (tau * s**k + (1.0 - tau) * s - a) / (tau * k * s ** (k - 1.0) + 1.0 - tau)
            s = np.maximum(s - step, 0.0)
            if np.max(step) <= eps:
                break
        z = s**k
        return z, (z - z ** (3.0 - p)) / (tau * z ** (2.0 - p) + (1.0 - tau) * (p - 1.0))

    lo, hi = log_r - math.log(d) / p, np.minimum(log_r, math.log1p(-eps))  # F(lo) <= 0 <= F(hi); tau < 1
    u = 0.5 * (lo + hi)
    for _ in range(max_iter):
        tau = np.exp(u)[:, None]
        z, dz = profile(tau)
        zp = np.sum(z**p, axis=1)
        excess = u + np.log(zp) / p - log_r
        if np.all(np.abs(excess) <= eps):
            break
        lo, hi = np.where(excess < 0, u, lo), np.where(excess < 0, hi, u)
        slope = 1.0 + tau[:, 0] * np.sum(z ** (p - 1.0) * dz, axis=1) / zp  # dF/du
        newton = u - excess / np.maximum(slope, eps)
        u = np.where((newton > lo) & (newton < hi), newton, 0.5 * (lo + hi))
    w = np.exp(u)[:, None] * profile(np.exp(u)[:, None])[0]
    w *= np.minimum(1.0, np.exp(log_r) / np.maximum(lp_norm(w, p), np.finfo(float).tiny))[:, None]
    return np.sign(y) * w * scale


# -- domains ------------------------------------------------------------------------------------------------------


class Domain(abc.ABC):
    """A compact convex set in R^d with its Euclidean projection (subclasses are frozen dataclasses)."""

    name: ClassVar[str]
    #: Whether the set is a polytope given by its vertices (a linear oracle over it is a vertex search).
    polytope: ClassVar[bool] = False

    @abc.abstractmethod
    def project(self, v: Any) -> np.ndarray:
        """Euclidean projection of ``v`` (..., d) onto the set."""

    @abc.abstractmethod
    def diameter(self, d: int) -> float:
        """``D = max_{x, y in C} ||x - y||_2`` in dimension ``d``."""

    @abc.abstractmethod
    def max_norm(self, d: int) -> float:
        """``max_{x in C} ||x||_2``: with ``||x||_2 <= b`` features, ``|x^T theta| <= b * max_norm``."""

    @abc.abstractmethod
    def center(self, d: int) -> np.ndarray:
        """A data-independent starting point in the set, shape (d,)."""

    def contains(self, v: Any, atol: float = 1e-9) -> bool:
        """Whether ``v`` (d,) lies in the set up to ``atol`` (distance to its projection)."""
        v = np.asarray(v, dtype=float)
        return bool(np.all(np.isfinite(v))) and float(np.linalg.norm(v - self.project(v))) <= atol

    @abc.abstractmethod
    def describe(self) -> str:
        """A short text naming the set, e.g. ``"l2 ball of radius 1"``."""


@dataclass(frozen=True)
class L2Ball(Domain):
    """``{||x||_2 <= radius}``."""

    radius: float = 1.0
    name: ClassVar[str] = "l2-ball"

    def __post_init__(self) -> None:
        object.__setattr__(self, "radius", _positive("radius", self.radius))

    def project(self, v):
        return _l2_ball(_as_vectors(v), self.radius)

    def contains(self, v, atol=1e-9):
        v = np.asarray(v, dtype=float)
        return bool(np.all(np.isfinite(v))) and math.sqrt(float(np.sum(v * v))) <= self.radius + atol

    def diameter(self, d):
        return 2.0 * self.radius

    def max_norm(self, d):
        return self.radius

    def center(self, d):
        return np.zeros(check_int("d", d, low=1))

    def describe(self):
        return f"l2 ball of radius {self.radius:g}"


@dataclass(frozen=True)
class L1Ball(Domain):
    """``{||x||_1 <= radius}`` = conv{+-radius e_i}, a polytope with 2d vertices."""

    radius: float = 1.0
    name: ClassVar[str] = "l1-ball"
    polytope: ClassVar[bool] = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "radius", _positive("radius", self.radius))

    def project(self, v):
        return _l1_ball(_as_vectors(v), self.radius)

    def diameter(self, d):
        return 2.0 * self.radius  # ||radius e_1 - (-radius e_1)||_2

    def max_norm(self, d):
        return self.radius

    def center(self, d):
        return np.zeros(check_int("d", d, low=1))

    def describe(self):
        return f"l1 ball of radius {self.radius:g}"


@dataclass(frozen=True)
class Simplex(Domain):
    """The probability simplex ``{x >= 0, sum x = 1}`` (vertices e_i)."""

    name: ClassVar[str] = "simplex"
    polytope: ClassVar[bool] = True

    def project(self, v):
        return _simplex(_as_vectors(v), 1.0)

    def diameter(self, d):
        return math.sqrt(2.0) if check_int("d", d, low=1) > 1 else 0.0

    def max_norm(self, d):
        return 1.0

    def center(self, d):
        d = check_int("d", d, low=1)
        return np.full(d, 1.0 / d)

    def describe(self):
        return "probability simplex"


@dataclass(frozen=True)
class Box(Domain):
    """``[-radius, radius]^d`` (the l_inf ball)."""

    radius: float = 1.0
    name: ClassVar[str] = "box"

    def __post_init__(self) -> None:
        object.__setattr__(self, "radius", _positive("radius", self.radius))

    def project(self, v):
        return np.clip(_as_vectors(v), -self.radius, self.radius)

    def diameter(self, d):
        return 2.0 * self.radius * math.sqrt(check_int("d", d, low=1))

    def max_norm(self, d):
        return self.radius * math.sqrt(check_int("d", d, low=1))

    def center(self, d):
        return np.zeros(check_int("d", d, low=1))

    def describe(self):
        return f"box [-{self.radius:g}, {self.radius:g}]^d"


@dataclass(frozen=True)
class LpBall(Domain):
    """``{||x||_p <= radius}`` for any ``p`` in [1, inf] (the feasible set of the Frank-Wolfe learners,
    ``spec/han-frank-wolfe.md`` §0). Not in :data:`DOMAINS` (it needs ``p``); for p = 1, 2, inf the named domains
    are the same sets."""

    p: float = 2.0
    radius: float = 1.0
    name: ClassVar[str] = "lp-ball"

    def __post_init__(self) -> None:
        object.__setattr__(self, "p", check_p(self.p))
        object.__setattr__(self, "radius", _positive("radius", self.radius))

    def project(self, v):
        return _lp_ball(_as_vectors(v), self.p, self.radius)

    def diameter(self, d):
        return 2.0 * self.max_norm(d)

    def max_norm(self, d):
        """``radius * d^max(0, 1/2 - 1/p)`` (a vertex for p <= 2, the all-equal point for p > 2)."""
        return self.radius * check_int("d", d, low=1) ** max(0.0, 0.5 - 1.0 / self.p)

    def center(self, d):
        return np.zeros(check_int("d", d, low=1))

    def describe(self):
        return f"l_{self.p:g} ball of radius {self.radius:g}"


DOMAINS: dict[str, type[Domain]] = {"l2-ball": L2Ball, "l1-ball": L1Ball, "simplex": Simplex, "box": Box}


def make_domain(domain: str | Domain, radius: float = 1.0) -> Domain:
    """A :class:`Domain` from its name (one of :data:`DOMAINS`; ``radius`` for the balls and the box, ignored by the
    simplex) or an instance."""
    if isinstance(domain, Domain):
        return domain
    name = check_choice("domain", domain, DOMAINS)
    if name == "simplex":
        return Simplex()
    return DOMAINS[name](radius)
