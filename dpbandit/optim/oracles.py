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
  §7.3): :func:`dpbandit.optim.projections.project_lp_ball` (exact l1-ball, l2-ball and box projections for
  p = 1, 2, inf; for other p the KKT system solved by safeguarded Newton iterations to float precision).

The norm helpers :func:`lp_norm`, :func:`dual_exponent` and :func:`check_p` live in :mod:`dpbandit.geometry` (shared
with the regression streams of :mod:`dpbandit.envs`) and are re-exported here.
"""

from __future__ import annotations

import math

import numpy as np

from dpbandit.geometry import check_p, dual_exponent, lp_norm
from dpbandit.optim.projections import project_lp_ball
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


def lp_ball_projection(y: np.ndarray, p: float, radius: float) -> np.ndarray:
    """Euclidean projection ``argmin_{||u||_p <= radius} ||u - y||_2`` of ``y`` (d,) or (..., d):
    :func:`dpbandit.optim.projections.project_lp_ball` (the l1-ball, l2-ball and box projections for p = 1, 2,
    inf; the KKT system solved by safeguarded Newton iterations otherwise)."""
    return project_lp_ball(y, p, radius)
