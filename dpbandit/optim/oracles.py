"""Linear minimisation oracles, Euclidean projections and dual-norm clipping for l_p geometry.

Conventions (``spec/han-frank-wolfe.md`` §0, §1): the iterate lives in the l_p ball ``{v: ||v||_p <= r}``,
gradients are measured in the dual norm ``||.||_q``, ``q = p/(p-1)`` (q = inf for p = 1, q = 1 for p = inf).
Every function is vectorised over the last axis (shape ``(d,)`` or ``(..., d)``), with no Python loop over d.

* :func:`lp_ball_lmo` — ``argmin_{||v||_p <= r} <g, v>`` in closed form (§1 "LMO"):
  ``1 < p < inf``: ``v = -r sign(g) |g|^(q-1) / ||g||_q^(q-1)`` (so ``<g, v> = -r ||g||_q``);
  ``p = inf``: ``v = -r sign(g)``; ``p = 1``: ``v = -r sign(g_j) e_j``, ``j = argmax |g_j|``.
  For ``g = 0`` every feasible point is a minimiser and 0 is returned.
* :func:`simplex_lmo` — ``argmin <g, v>`` over ``{v >= 0, sum v = r}``: the vertex ``r e_j``, ``j = argmin g_j``.
* :func:`clip_dual` — ``u min(1, L0/||u||_q)`` (radial) or coordinatewise clamping to ``[-L0, L0]`` (q = inf).
  For GLM gradients ``c x`` the radial clip is the scalar clamp of :func:`clamp_glm_derivative`, which keeps the
  smoothness constant L1; radial clipping of general vectors is not nonexpansive in l_q for q != 2
  (``spec/errata.md`` E3), coordinate clipping is.
* :func:`lp_ball_projection` — Euclidean projection onto the l_p ball (NoisySGD, ``spec/han-frank-wolfe.md``
  §7.3): closed form for p = 2 and p = inf, the sort-based simplex projection for p = 1, and for other p the KKT
  system solved by vectorised bisection (exact to float tolerance; no scipy solver per sample).
"""

from __future__ import annotations

import math

import numpy as np

from dpbandit.validation import check_real

__all__ = [
    "dual_exponent",
    "lp_norm",
    "check_p",
    "lp_ball_lmo",
    "simplex_lmo",
    "clip_dual",
    "clamp_glm_derivative",
    "lp_ball_projection",
]


def check_p(p: float, name: str = "p") -> float:
    """An l_p exponent: a number in [1, inf] (inf allowed)."""
    return check_real(name, p, low=1.0, allow_inf=True)


def dual_exponent(p: float) -> float:
    """q = p/(p-1): inf for p = 1, 1 for p = inf."""
    p = check_p(p)
    if p == 1.0:
        return math.inf
    if math.isinf(p):
        return 1.0
    return p / (p - 1.0)


def lp_norm(x: np.ndarray, p: float) -> np.ndarray | float:
    """||x||_p along the last axis (p in [1, inf]); a float for 1-D input, else shape ``x.shape[:-1]``."""
    a = np.abs(np.asarray(x, dtype=float))
    if math.isinf(p):
        out = a.max(axis=-1)
    elif p == 1.0:
        out = a.sum(axis=-1)
    elif p == 2.0:
        out = np.sqrt(np.einsum("...i,...i->...", a, a))
    else:
        m = a.max(axis=-1, keepdims=True)  # scale first: no overflow for large entries or large p
        m = np.where(m > 0, m, 1.0)
        out = m[..., 0] * ((a / m) ** p).sum(axis=-1) ** (1.0 / p)
    return float(out) if a.ndim == 1 else out


def _check_radius(radius: float) -> float:
    return check_real("radius", radius, low=0.0, low_inclusive=False)


def lp_ball_lmo(g: np.ndarray, p: float, radius: float) -> np.ndarray:
    """The exact minimiser of ``<g, v>`` over ``||v||_p <= radius``; ``g`` of shape (d,) or (..., d).

    Ties (p = 1: several largest |g_j|) go to the first index; zero gradients give the zero vector.
    """
    p = check_p(p)
    radius = _check_radius(radius)
    g = np.asarray(g, dtype=float)
    if math.isinf(p):
        return -radius * np.sign(g)
    if p == 1.0:
        j = np.argmax(np.abs(g), axis=-1)[..., None]
        gj = np.take_along_axis(g, j, axis=-1)
        v = np.zeros_like(g)
        np.put_along_axis(v, j, -radius * np.sign(gj), axis=-1)
        return v
    q = dual_exponent(p)
    a = np.abs(g)
    m = a.max(axis=-1, keepdims=True)
    m = np.where(m > 0, m, 1.0)
    w = (a / m) ** (q - 1.0)  # |g|^(q-1) up to the positive factor m^(q-1), which cancels
    norm = lp_norm(w, p)  # ||(|g|^(q-1))||_p = ||g||_q^(q-1) (times the same factor)
    norm = np.where(np.asarray(norm) > 0, norm, 1.0)
    return -radius * np.sign(g) * w / np.asarray(norm)[..., None]


def simplex_lmo(g: np.ndarray, radius: float = 1.0) -> np.ndarray:
    """The exact minimiser of ``<g, v>`` over the simplex ``{v >= 0, sum v = radius}`` (first index on ties)."""
    radius = _check_radius(radius)
    g = np.asarray(g, dtype=float)
    j = np.argmin(g, axis=-1)[..., None]
    v = np.zeros_like(g)
    np.put_along_axis(v, j, radius, axis=-1)
    return v


def clip_dual(u: np.ndarray, q: float, bound: float, mode: str = "radial") -> np.ndarray:
    """Clip ``u`` (d,) or (..., d) to ``||u||_q <= bound``.

    ``mode="radial"``: ``u min(1, bound/||u||_q)`` (the closed-form nearest point in l_q only for q = 2; for GLM
    gradients it is the scalar clamp that keeps L1, ``spec/errata.md`` E3). ``mode="coordinate"`` (q = inf only):
    ``clip(u, -bound, bound)``, nonexpansive in l_inf.
    """
    q = check_p(q, "q")
    bound = check_real("bound", bound, low=0.0, low_inclusive=False)
    u = np.asarray(u, dtype=float)
    if mode == "coordinate":
        if not math.isinf(q):
            raise ValueError(f"mode='coordinate' clips in l_inf and needs q = inf, got q={q!r}")
        return np.clip(u, -bound, bound)
    if mode != "radial":
        raise ValueError(f"mode must be one of ('radial', 'coordinate'), got {mode!r}")
    norm = np.asarray(lp_norm(u, q))
    factor = np.minimum(1.0, bound / np.where(norm > 0, norm, 1.0))
    return u * factor[..., None] if u.ndim > 1 else u * float(factor)


def clamp_glm_derivative(c: np.ndarray | float, x_norm_dual: np.ndarray | float, bound: float):
    """Scalar clamp of a GLM gradient ``c x``: ``c`` limited to ``+-bound/||x||_q`` so ``||c x||_q <= bound``.

    Equals :func:`clip_dual` (radial) of ``c x`` and, being a 1-Lipschitz map of ``c``, keeps the loss's
    smoothness constant (``spec/errata.md`` E3). ``x_norm_dual = 0`` leaves ``c`` unchanged (the gradient is 0).
    """
    norm = np.asarray(x_norm_dual, dtype=float)
    limit = np.where(norm > 0, bound / np.where(norm > 0, norm, 1.0), np.inf)
    out = np.clip(c, -limit, limit)
    return float(out) if np.ndim(out) == 0 else out


def _project_lp_general(y: np.ndarray, p: float, radius: float, iters: int = 64) -> np.ndarray:
    """Projection of one vector ``y`` (d,) with ||y||_p > radius onto the l_p ball, 1 < p < inf.

    KKT [derived]: ``u_i = sign(y_i) w_i`` with ``w_i + lam p w_i^(p-1) = |y_i|``, ``w_i in [0, |y_i|]``
    (unique root, the left side is increasing in w_i), and ``lam > 0`` such that ``sum w_i^p = radius^p``
    (decreasing in lam). Both are solved by bisection, the inner one vectorised over coordinates.
    """
    a = np.abs(y)

    def weights(lam: float) -> np.ndarray:
        lo, hi = np.zeros_like(a), a.copy()
        for _ in range(iters):
            mid = 0.5 * (lo + hi)
            over = mid + lam * p * mid ** (p - 1.0) > a
            hi = np.where(over, mid, hi)
            lo = np.where(over, lo, mid)
        return lo  # feasible side: w <= root

    target = radius**p
    lam_lo, lam_hi = 0.0, 1.0
    while np.sum(weights(lam_hi) ** p) > target:
        lam_hi *= 2.0
    for _ in range(iters):
        mid = 0.5 * (lam_lo + lam_hi)
        if np.sum(weights(mid) ** p) > target:
            lam_lo = mid
        else:
            lam_hi = mid
    w = weights(lam_hi)
    w *= min(1.0, radius / lp_norm(w, p))  # guard against rounding: stay feasible
    return np.sign(y) * w


def lp_ball_projection(y: np.ndarray, p: float, radius: float) -> np.ndarray:
    """Euclidean projection ``argmin_{||u||_p <= radius} ||u - y||_2`` of ``y`` (d,)."""
    p = check_p(p)
    radius = _check_radius(radius)
    y = np.asarray(y, dtype=float)
    if math.isinf(p):
        return np.clip(y, -radius, radius)
    norm = lp_norm(y, p)
    if norm <= radius:
        return y.copy()
    if p == 2.0:
        return y * (radius / norm)
    if p == 1.0:  # Duchi et al. 2008: soft-threshold at the level that puts |y| on the simplex of size radius
        a = np.sort(np.abs(y))[::-1]
        cumsum = np.cumsum(a) - radius
        k = np.nonzero(a > cumsum / np.arange(1, a.size + 1))[0][-1]
        theta = cumsum[k] / (k + 1.0)
        return np.sign(y) * np.maximum(np.abs(y) - theta, 0.0)
    return _project_lp_general(y, p, radius)
