"""The comparator of OCO regret: the best fixed point in hindsight over a learner's own domain.

For the per-round losses ``f_s(u) = phi(x_s^T u, y_s) + (mu/2) ||u||_2^2`` of an OCO problem and a convex domain
``C`` (a :class:`~dpbandit.optim.projections.Domain`: an l_p ball, the simplex or a box), the comparator after t
rounds is ``min_{u in C} F_t(u)``, ``F_t = sum_{s<=t} f_s``. A learner is compared with the best point of the set
it plays in: WDP-COCOL on the simplex against the best point of the simplex, an l2-ball learner against the best
point of its ball.

Solvers (:func:`best_in_hindsight`):

* squared loss ``s (z - y)^2`` on an l2 ball: exact. ``F_t(u) = u'Hu/2 - g'u + s sum y^2`` with
  ``H = 2s X'X + t mu I``; the minimiser is ``(H + lam I)^{-1} g`` with ``lam = 0`` if that is feasible, else the
  root of ``||u(lam)||_2 = R`` (secular equation, Brent's method to 1e-14).
* every other (loss, domain): accelerated projected gradient (FISTA, Beck & Teboulle 2009) with the domain's exact
  Euclidean projection, step ``1/L`` (``L = curvature bound x lambda_max(X'X) + t mu``, a valid smoothness
  constant of ``F_t``), gradient-based adaptive restart (O'Donoghue & Candes 2015), warm-started at the previous
  recorded round's minimiser, and stopped by the Frank–Wolfe duality gap (:func:`frank_wolfe_gap`)

      gap(u) = max_{v in C} <grad F_t(u), u - v>  >=  F_t(u) - min_C F_t     (convexity of F_t),

  a certificate: the value returned is within ``gap <= tol * max(1, |F_t(u)|)`` of the minimum (a
  ``RuntimeWarning`` names the gap reached if the iteration budget ends first). The squared loss is evaluated in
  Gram form (O(d^2) per iteration), other losses on the data (O(t d)).

The value is never below the minimum (it is ``F_t`` at a feasible point), so a regret computed from it is a lower
bound on the true regret, off by at most the gap; :func:`hindsight_gap` recomputes that certificate from the data.
Shapes: ``x`` (T, d), ``y`` (T,), ``rounds`` (n,) increasing in ``[1, T]``; results ``(n,)`` and ``(n, d)``.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
from scipy.optimize import brentq

from dpbandit.optim.losses import Loss, SquaredLoss
from dpbandit.optim.oracles import lp_ball_lmo, simplex_lmo
from dpbandit.optim.projections import Box, Domain, L1Ball, L2Ball, LpBall, Simplex
from dpbandit.validation import check_int, check_real

__all__ = ["comparator_domain", "linear_oracle", "frank_wolfe_gap", "best_in_hindsight", "hindsight_gap"]

#: The l_p exponent of each ball-shaped domain (its linear oracle is the l_p-ball LMO).
_BALL_EXPONENT: dict[type[Domain], float] = {L2Ball: 2.0, L1Ball: 1.0, Box: math.inf}


def comparator_domain(domain: Domain | float) -> Domain:
    """A :class:`Domain` with a linear oracle; a number ``r > 0`` stands for the l2 ball of radius ``r``, and an
    :class:`LpBall` with p = 1, 2, inf becomes the same set's :class:`L1Ball`, :class:`L2Ball`, :class:`Box`
    (whose exact solvers and projections apply)."""
    if isinstance(domain, LpBall):
        named = {p: cls for cls, p in _BALL_EXPONENT.items()}.get(domain.p)
        return named(domain.radius) if named is not None else domain
    if isinstance(domain, Domain):
        if type(domain) not in _BALL_EXPONENT and not isinstance(domain, Simplex):
            raise TypeError(f"no linear oracle for the domain {domain!r}; supported: l_p balls, simplex, box")
        return domain
    return L2Ball(check_real("domain radius", domain, low=0.0, low_inclusive=False))


def linear_oracle(domain: Domain, g: np.ndarray) -> np.ndarray:
    """``argmin_{v in C} <g, v>`` for ``g`` (d,): a vertex of the simplex / l1 ball / box, or the l_p-ball LMO
    ``-R sign(g) |g|^(q-1) / ||g||_q^(q-1)`` (``spec/han-frank-wolfe.md`` §1)."""
    if isinstance(domain, Simplex):
        return simplex_lmo(g, 1.0)
    p = domain.p if isinstance(domain, LpBall) else _BALL_EXPONENT[type(domain)]
    return lp_ball_lmo(g, p, domain.radius)


def frank_wolfe_gap(domain: Domain, gradient: np.ndarray, u: np.ndarray) -> float:
    """``max_{v in C} <gradient, u - v>``: for a convex ``F`` with ``gradient = grad F(u)`` at ``u in C``, an upper
    bound on ``F(u) - min_C F`` (zero exactly at the minimisers)."""
    return max(float(gradient @ (u - linear_oracle(domain, gradient))), 0.0)


def _check_data(x: Any, y: Any, loss: Any, mu: Any) -> tuple[np.ndarray, np.ndarray, float]:
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.ndim != 2 or y.shape != (x.shape[0],):
        raise ValueError(f"x must have shape (T, d) and y shape (T,), got {x.shape} and {y.shape}")
    if not isinstance(loss, Loss):
        raise TypeError(f"loss must be a dpbandit.optim.losses.Loss, got {type(loss).__name__}")
    return x, y, check_real("mu", mu, low=0.0)


def hindsight_gap(x: np.ndarray, y: np.ndarray, loss: Loss, mu: float, domain: Domain | float,
                  u: np.ndarray) -> float:
    """The certificate :func:`frank_wolfe_gap` of ``u`` for ``F(u) = sum_s phi(x_s^T u, y_s) + (len(y) mu/2)
    ||u||^2`` over all rows of ``x`` (t, d), ``y`` (t,): ``F(u) - min_C F <= gap``."""
    x, y, mu = _check_data(x, y, loss, mu)
    domain = comparator_domain(domain)
    u = np.asarray(u, dtype=float)
    return frank_wolfe_gap(domain, _GLMObjective(x, y, loss, len(y) * mu).grad(u), u)


def best_in_hindsight(x: np.ndarray, y: np.ndarray, loss: Loss, mu: float, domain: Domain | float,
                      rounds: np.ndarray, *, tol: float = 1e-10, max_iter: int = 50_000) -> tuple[np.ndarray,
                                                                                                  np.ndarray]:
    """``min_{u in C} F_t(u)`` and a minimiser for every ``t`` in ``rounds`` (see the module docstring).

    ``domain``: a :class:`Domain` (l_p ball, simplex, box) or a radius for the l2 ball. Returns
    ``(values (n,), points (n, d))``; ``tol`` is the relative duality-gap target of the iterative solver.
    """
    x, y, mu = _check_data(x, y, loss, mu)
    domain = comparator_domain(domain)
    rounds = np.asarray(rounds)
    if rounds.ndim != 1 or not rounds.size or np.any(np.diff(rounds) <= 0) or rounds[0] < 1 or rounds[-1] > len(y):
        raise ValueError(f"rounds must be increasing integers in [1, {len(y)}], got {rounds!r}")
    tol = check_real("tol", tol, low=0.0, low_inclusive=False)
    max_iter = check_int("max_iter", max_iter, low=1)
    d = x.shape[1]
    values, points = np.empty(len(rounds)), np.empty((len(rounds), d))
    u = domain.center(d)
    A, b, c, start = np.zeros((d, d)), np.zeros(d), 0.0, 0
    for i, t in enumerate(rounds):
        t = int(t)
        xs, ys = x[start:t], y[start:t]
        A += xs.T @ xs
        b += xs.T @ ys
        c += float(ys @ ys)
        start = t
        if isinstance(loss, SquaredLoss) and isinstance(domain, L2Ball):
            values[i], u = _squared_on_l2_ball(A, b, c, loss.scale, t * mu, domain.radius)
        else:
            lipschitz = loss.curvature_bound() * float(np.linalg.eigvalsh(A)[-1]) + t * mu
            objective = (_GramQuadratic(A, b, c, loss.scale, t * mu) if isinstance(loss, SquaredLoss)
                         else _GLMObjective(x[:t], y[:t], loss, t * mu))
            values[i], u = _fista(objective, lipschitz, domain, u, tol, max_iter, t)
        points[i] = u
    return values, points


class _GramQuadratic:
    """``F(w) = s (w'Aw - 2b'w + c) + (ridge/2) ||w||^2``: the squared loss summed over t rows, in Gram form."""

    def __init__(self, A: np.ndarray, b: np.ndarray, c: float, s: float, ridge: float):
        self.A, self.b, self.c, self.s, self.ridge = A.copy(), b.copy(), c, s, ridge

    def grad(self, w: np.ndarray) -> np.ndarray:
        return 2.0 * self.s * (self.A @ w - self.b) + self.ridge * w

    def value_grad(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        Aw = self.A @ w
        value = self.s * (float(w @ Aw) - 2.0 * float(self.b @ w) + self.c) + 0.5 * self.ridge * float(w @ w)
        return value, 2.0 * self.s * (Aw - self.b) + self.ridge * w


class _GLMObjective:
    """``F(w) = sum_s phi(x_s^T w, y_s) + (ridge/2) ||w||^2`` on the rows ``x`` (t, d), ``y`` (t,)."""

    def __init__(self, x: np.ndarray, y: np.ndarray, loss: Loss, ridge: float):
        self.x, self.y, self.loss, self.ridge = x, y, loss, ridge

    def grad(self, w: np.ndarray) -> np.ndarray:
        return self.x.T @ self.loss.dphi(self.x @ w, self.y) + self.ridge * w

    def value_grad(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        z = self.x @ w
        value = float(np.sum(self.loss.phi(z, self.y))) + 0.5 * self.ridge * float(w @ w)
        return value, self.x.T @ self.loss.dphi(z, self.y) + self.ridge * w


def _squared_on_l2_ball(A: np.ndarray, b: np.ndarray, c: float, s: float, ridge: float,
                        radius: float) -> tuple[float, np.ndarray]:
    """Exact ``min_{||u||_2 <= radius} s (u'Au - 2b'u + c) + (ridge/2)||u||^2`` and its (minimum-norm) minimiser."""
    d = len(b)
    lam_h, V = np.linalg.eigh(2.0 * s * A + ridge * np.eye(d))
    p = V.T @ (2.0 * s * b)
    lam_h = np.maximum(lam_h, 0.0)
    null = lam_h <= 1e-12 * max(lam_h.max(), 1.0)

    def coords(lam: float) -> np.ndarray:
        q = np.zeros(d)
        live = ~null if lam == 0.0 else np.ones(d, dtype=bool)
        q[live] = p[live] / (lam_h[live] + lam)
        return q

    q = coords(0.0)  # the minimum-norm minimiser when H is singular
    if np.linalg.norm(q) > radius:
        hi = np.linalg.norm(p) / radius
        q = coords(brentq(lambda lam: np.linalg.norm(coords(lam)) - radius, 0.0, hi, xtol=1e-14, rtol=1e-14)
                   if hi > 0 else 0.0)
    return 0.5 * float(q @ (lam_h * q)) - float(p @ q) + s * c, V @ q


def _fista(objective, lipschitz: float, domain: Domain, start: np.ndarray, tol: float, max_iter: int,
           t: int, check_every: int = 10) -> tuple[float, np.ndarray]:
    """Accelerated projected gradient with adaptive restart from ``start``; stops at a certified duality gap."""
    step = 1.0 / max(lipschitz, np.finfo(float).tiny)
    u = domain.project(start)
    z, theta = u.copy(), 1.0
    gap = math.inf
    for k in range(max_iter + 1):
        if k % check_every == 0 or k == max_iter:
            f, g = objective.value_grad(u)
            gap = frank_wolfe_gap(domain, g, u)
            if gap <= tol * max(1.0, abs(f)):
                return f, u
            if k == max_iter:
                break
        u_next = domain.project(z - step * objective.grad(z))
        if float((z - u_next) @ (u_next - u)) > 0.0:  # the momentum points uphill: restart
            theta, z = 1.0, u_next
        else:
            theta_next = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * theta * theta))
            z = u_next + ((theta - 1.0) / theta_next) * (u_next - u)
            theta = theta_next
        u = u_next
    warnings.warn(f"best_in_hindsight on the {domain.describe()} at t={t}: duality gap {gap:.3g} after {max_iter} "
                  "iterations (the comparator value is within this gap of the minimum)", RuntimeWarning, stacklevel=3)
    return f, u
