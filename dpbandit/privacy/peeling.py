"""Private top-s selection ("peeling") of a vector, with its zCDP cost and calibration.

Both mechanisms release an s-sparse vector u (..., d): a private choice of s coordinates S and noisy values
``u_S = v_S + noise``, ``u_j = 0`` off S. Their privacy rests on one public bound: for neighbouring inputs the vector
``v`` changes by at most ``Delta`` in **every coordinate** (l_inf sensitivity ``||v - v'||_inf <= Delta``; a change
of one user's datum typically moves all d coordinates, so an l1/l2 bound would be d or sqrt(d) times larger).

* :func:`laplace_peeling` — Dwork, Su, Zhang (2018) / Cai, Wang, Zhang (2021, *The cost of privacy*), the peeling of
  FLIPHAT (Chakraborty, Roy, Basu 2024, arXiv:2405.14038): s rounds of Laplace report-noisy-max
  ``argmax_{j not in S} |v_j| + w_j``, ``w ~ Laplace(b)^d`` **fresh in every round**, then ``u_S = v_S + Laplace(b)^s``.
* :func:`gumbel_top_s` — one-shot top-s of ``|v_j| + g_j``, ``g ~ Gumbel(b)^d`` (one draw; Durfee & Rogers 2019: this
  is exactly s sequential exponential-mechanism picks without replacement, ``P(j) ~ exp(|v_j|/b)``), then Gaussian
  values ``u_S = v_S + N(0, sigma^2)^s``.

zCDP cost [derived here; ``spec/episodic-private-agents.md`` §2, ``spec/errata.md`` E4 items 3-4]:

* The scores ``|v_j|`` have sensitivity ``Delta`` (reverse triangle inequality), and they are not monotone (a
  neighbour may raise some and lower others).
* **Laplace pick**: report-noisy-max with Laplace(b) noise on non-monotone scores of sensitivity Delta is
  ``eps = 2 Delta/b``-DP (Dwork & Roth, Claim 3.9), hence ``eps^2/2 = 2 Delta^2/b^2``-zCDP (Bun & Steinke 2016,
  Prop. 1.4). The set of excluded coordinates is the output of earlier picks, so the s picks compose adaptively.
* **Laplace value**: each released ``v_j + Laplace(b)``, j in S (S public by then), is ``Delta/b``-DP, i.e.
  ``Delta^2/(2 b^2)``-zCDP; s of them compose to ``s Delta^2/(2 b^2)`` (better than one Laplace release of l1
  sensitivity ``s Delta``, which would give ``s^2 Delta^2/(2 b^2)``).
* Per Laplace peeling: ``rho = s (2 + 1/2) Delta^2/b^2 = 2.5 s Delta^2/b^2``; calibration
  ``b = Delta sqrt(2.5 s/rho)``.
* **Gumbel pick**: the exponential mechanism ``P(j) ~ exp(u_j/b)`` with utility sensitivity Delta has privacy loss
  ``(u_j - u'_j)/b - ln(Z/Z')`` whose range over j has width at most ``2 Delta/b``: it is ``eps = 2 Delta/b``-bounded
  range (Durfee & Rogers 2019), hence ``eps^2/8 = Delta^2/(2 b^2)``-zCDP (Cesar & Rogers 2021) — a quarter of the
  Laplace pick at the same scale.
* **Gaussian values**: ``v_S + N(0, sigma^2 I_s)`` has l2 sensitivity ``sqrt(s) Delta``: ``s Delta^2/(2 sigma^2)``.
* Per Gumbel top-s: ``rho = s Delta^2/(2 b^2) + s Delta^2/(2 sigma^2)``; with ``sigma = b`` (the default),
  ``rho = s Delta^2/b^2`` and ``b = Delta sqrt(s/rho)``: at the same rho the scale is ``sqrt(2.5) = 1.58`` times
  smaller than the Laplace peeling's (and the selection noise is Gumbel, lighter-tailed than Laplace).

Shapes: ``v`` is ``(..., d)``, one independent mechanism per leading index; ``scale``/``sigma`` are scalars or
arrays broadcastable to the leading shape (one scale per row, e.g. per arm). Float samplers: measuring privacy-
utility trade-offs in simulation, not an FP-safe implementation (see :mod:`dpbandit.privacy.noise`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpbandit.validation import check_generator, check_int, check_real

__all__ = [
    "SELECTIONS",
    "laplace_peeling",
    "gumbel_top_s",
    "gumbel_support",
    "peeling_rho",
    "peeling_scale",
]

#: Selection forms: Laplace peeling (the paper's) and one-shot Gumbel top-s with Gaussian values.
SELECTIONS: tuple[str, ...] = ("laplace", "gumbel")

#: zCDP per coordinate in units of Delta^2/b^2: (pick, value) for each form (module docstring).
_RHO_UNITS = {"laplace": (2.0, 0.5), "gumbel": (0.5, 0.5)}


def _check_vector(v: Any, s: int) -> tuple[np.ndarray, int]:
    arr = np.asarray(v, dtype=float)
    if arr.ndim == 0 or arr.shape[-1] == 0:
        raise ValueError(f"v must have shape (..., d) with d >= 1, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("v must be finite (no NaN or inf)")
    s = check_int("s", s, low=1, high=arr.shape[-1])
    return arr, s


def _check_scales(name: str, scale: Any, lead: tuple[int, ...]) -> np.ndarray:
    try:
        b = np.asarray(scale, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a positive number or an array of them, got {scale!r}") from None
    if not np.all(np.isfinite(b)) or np.any(b <= 0):
        raise ValueError(f"{name} must be finite and > 0, got {scale!r}")
    try:
        return np.broadcast_to(b, lead)[..., None]
    except ValueError:
        raise ValueError(f"{name} must broadcast to the leading shape {lead} of v, got shape {b.shape}") from None


def _scatter(v: np.ndarray, support: np.ndarray, values: np.ndarray) -> np.ndarray:
    out = np.zeros_like(v)
    np.put_along_axis(out, support, values, axis=-1)
    return out


def laplace_peeling(rng: np.random.Generator, v: Any, s: int, scale: Any) -> tuple[np.ndarray, np.ndarray]:
    """Laplace peeling of ``v`` (..., d): returns ``(u, support)``, ``u`` (..., d) s-sparse, ``support`` (..., s) int
    in the order picked.

    Round r = 1..s: ``j_r = argmax_{j not in S} |v_j| + w_j`` with a fresh ``w ~ Laplace(scale)^d``; then
    ``u_S = v_S + Laplace(scale)^s``. rho-zCDP with ``rho = 2.5 s Delta^2/scale^2`` for l_inf sensitivity Delta
    (module docstring; :func:`peeling_rho`). Draw order: the s x d selection noise (round-major), then the s values.
    """
    check_generator(rng)
    v, s = _check_vector(v, s)
    b = _check_scales("scale", scale, v.shape[:-1])
    lead, d = v.shape[:-1], v.shape[-1]
    noise = rng.laplace(0.0, 1.0, (s, *lead, d)) * b  # fresh noise for every round
    scores = np.abs(v)
    support = np.empty((*lead, s), dtype=np.int64)
    for r in range(s):
        j = np.argmax(scores + noise[r], axis=-1)
        support[..., r] = j
        np.put_along_axis(scores, j[..., None], -np.inf, axis=-1)  # exclude the picked coordinate
    values = np.take_along_axis(v, support, axis=-1) + rng.laplace(0.0, 1.0, (*lead, s)) * b
    return _scatter(v, support, values), support


def gumbel_top_s(rng: np.random.Generator, v: Any, s: int, scale: Any, sigma: Any = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """One-shot Gumbel top-s of ``v`` (..., d) with Gaussian values: returns ``(u, support)`` (support in decreasing
    order of the noisy score, shape (..., s)).

    ``S`` = the s largest ``|v_j| + g_j``, ``g ~ Gumbel(scale)^d`` (one draw); ``u_S = v_S + N(0, sigma^2)^s``
    (``sigma`` defaults to ``scale``). rho-zCDP with ``rho = s Delta^2/(2 scale^2) + s Delta^2/(2 sigma^2)``
    (module docstring; :func:`peeling_rho`). Draw order: the d Gumbel variables, then the s normals.
    """
    check_generator(rng)
    v, s = _check_vector(v, s)
    b = _check_scales("scale", scale, v.shape[:-1])
    sd = b if sigma is None else _check_scales("sigma", sigma, v.shape[:-1])
    support = gumbel_support(rng, v, s, scale)
    values = np.take_along_axis(v, support, axis=-1) + rng.standard_normal((*v.shape[:-1], s)) * sd
    return _scatter(v, support, values), support


def gumbel_support(rng: np.random.Generator, v: Any, s: int, scale: Any) -> np.ndarray:
    """The selection half of :func:`gumbel_top_s` alone: the s indices (..., s) int64 of the largest
    ``|v_j| + g_j``, ``g ~ Gumbel(scale)^d`` (one draw), in decreasing order of the noisy score; no values.
    rho-zCDP with ``rho = s Delta^2/(2 scale^2)`` for l_inf sensitivity Delta (s exponential-mechanism picks, each
    ``2 Delta/scale``-bounded range; module docstring), so ``scale = Delta sqrt(s/(2 rho))``. Draw order: the d
    Gumbel variables (those :func:`gumbel_top_s` draws first)."""
    check_generator(rng)
    v, s = _check_vector(v, s)
    b = _check_scales("scale", scale, v.shape[:-1])
    noisy = np.abs(v) + rng.gumbel(0.0, 1.0, v.shape) * b
    top = np.argpartition(-noisy, s - 1, axis=-1)[..., :s]
    order = np.argsort(-np.take_along_axis(noisy, top, axis=-1), axis=-1, kind="stable")
    return np.take_along_axis(top, order, axis=-1).astype(np.int64)


def peeling_rho(sensitivity: float, scale: float, s: int, selection: str = "laplace",
                sigma: float | None = None) -> float:
    """zCDP rho of one peeling of s coordinates with noise ``scale`` on a vector of l_inf sensitivity
    ``sensitivity``: ``2.5 s Delta^2/b^2`` (Laplace) or ``s Delta^2/(2 b^2) + s Delta^2/(2 sigma^2)`` (Gumbel,
    ``sigma`` defaults to ``scale``). Known answers: (Delta, b, s) = (1, 5, 2) -> 0.2 (Laplace), 0.08 (Gumbel)."""
    sensitivity = check_real("sensitivity", sensitivity, low=0.0, low_inclusive=False)
    scale = check_real("scale", scale, low=0.0, low_inclusive=False)
    s = check_int("s", s, low=1)
    pick, value = _rho_units(selection)
    if sigma is not None:
        if selection != "gumbel":
            raise ValueError("sigma (a separate Gaussian value scale) applies only to selection='gumbel'")
        sigma = check_real("sigma", sigma, low=0.0, low_inclusive=False)
        return s * sensitivity**2 * (pick / scale**2 + value / sigma**2)
    return s * (pick + value) * sensitivity**2 / scale**2


def peeling_scale(sensitivity: float, s: int, rho: float, selection: str = "laplace", *, repeats: int = 1) -> float:
    """The noise scale making ``repeats`` peelings of s coordinates (e.g. the M iterations of N-IHT) rho-zCDP
    together, for l_inf sensitivity ``sensitivity``: ``b = Delta sqrt(2.5 repeats s/rho)`` (Laplace) or
    ``Delta sqrt(repeats s/rho)`` (Gumbel with sigma = b). zCDP composes by adding rho (Bun & Steinke 2016).
    ``rho = inf`` returns 0 (no noise). Known answer: Delta = 1, s = 5, rho = 0.5 -> 5 (Laplace), sqrt(10)."""
    sensitivity = check_real("sensitivity", sensitivity, low=0.0, low_inclusive=False)
    s = check_int("s", s, low=1)
    rho = check_real("rho", rho, low=0.0, low_inclusive=False, allow_inf=True)
    repeats = check_int("repeats", repeats, low=1)
    pick, value = _rho_units(selection)
    if math.isinf(rho):
        return 0.0
    return sensitivity * math.sqrt((pick + value) * repeats * s / rho)


def _rho_units(selection: str) -> tuple[float, float]:
    if selection not in _RHO_UNITS:
        raise ValueError(f"selection must be one of {SELECTIONS}, got {selection!r}")
    return _RHO_UNITS[selection]
