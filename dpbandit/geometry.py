"""l_p norms and dual exponents: the one implementation shared by every layer.

A leaf module (it imports only numpy and :mod:`dpbandit.validation`), so the environments (regression streams,
which must not import :mod:`dpbandit.optim`) and the learners (oracles, projections) use the same code.

Conventions (``spec/han-frank-wolfe.md`` §0): the iterate lives in an l_p ball, gradients and features are measured
in the dual norm ``||.||_q`` with ``q = p/(p-1)`` (``q = inf`` for ``p = 1``, ``q = 1`` for ``p = inf``).
"""

from __future__ import annotations

import math

import numpy as np

from dpbandit.validation import check_real

__all__ = ["check_p", "dual_exponent", "lp_norm"]


def check_p(p: float, name: str = "p") -> float:
    """An l_p exponent: a real number in [1, inf] (inf allowed); ``ValueError``/``TypeError`` naming ``name``."""
    return check_real(name, p, low=1.0, allow_inf=True)


def dual_exponent(p: float) -> float:
    """The dual exponent ``q = p/(p-1)`` of ``p`` in [1, inf]: ``inf`` for ``p = 1``, ``1`` for ``p = inf``."""
    p = check_p(p)
    if p == 1.0:
        return math.inf
    if math.isinf(p):
        return 1.0
    return p / (p - 1.0)


def lp_norm(x: np.ndarray, p: float) -> np.ndarray | float:
    """``||x||_p`` along the last axis, ``p`` in [1, inf].

    ``x`` of shape (d,) gives a float, (..., d) an array of shape ``x.shape[:-1]``. For ``1 < p < inf``, ``p != 2``
    the entries are first divided by the largest one, so large entries or large ``p`` neither overflow nor
    underflow. ``p`` is validated (:func:`check_p`).
    """
    p = check_p(p)
    a = np.abs(np.asarray(x, dtype=float))
    if math.isinf(p):
        out = a.max(axis=-1)
    elif p == 1.0:
        out = a.sum(axis=-1)
    elif p == 2.0:
        out = np.sqrt(np.einsum("...i,...i->...", a, a))
    else:
        m = a.max(axis=-1, keepdims=True)
        m = np.where(m > 0, m, 1.0)
        out = m[..., 0] * ((a / m) ** p).sum(axis=-1) ** (1.0 / p)
    return float(out) if a.ndim == 1 else out
