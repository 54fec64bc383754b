"""Generators of the unknown parameters theta of a GLM bandit instance.

Every generated row has *exactly* the requested norm (``l1`` or ``l2``) ``bound``; sparse rows have exactly
``s`` non-zero entries. Randomness comes only from the ``numpy.random.Generator`` passed in (the job's
``"instance"`` stream, :func:`dpbandit.seeding.stream`).
"""

from __future__ import annotations

import numpy as np

from dpbandit.validation import check_choice, check_generator, check_int, check_real

__all__ = ["THETA_VALUES", "NORMS", "sparse_theta", "dense_theta", "norm_of"]

#: Laws of the non-zero entries before normalisation: all equal (positive), standard Gaussian, or
#: U[0.5, 1] magnitudes with uniform random signs (the FLIPHAT code's ``beta*``, arXiv:2405.14038).
THETA_VALUES: tuple[str, ...] = ("equal", "gaussian", "uniform")
#: Vector norms a parameter can be normalised in.
NORMS: tuple[str, ...] = ("l1", "l2")


def norm_of(x: np.ndarray, norm: str) -> np.ndarray:
    """``||x||`` along the last axis for ``norm`` in ``("l1", "l2", "linf")``; shape ``x.shape[:-1]``."""
    if norm == "l1":
        return np.abs(x).sum(axis=-1)
    if norm == "l2":
        return np.sqrt(np.einsum("...i,...i->...", x, x))
    if norm == "linf":
        return np.abs(x).max(axis=-1)
    raise ValueError(f"norm must be one of ('l1', 'l2', 'linf'), got {norm!r}")


def _check_common(rng, n, d, norm, bound) -> tuple[int, int, float]:
    check_generator(rng)
    n = check_int("n", n, low=1)
    d = check_int("d", d, low=1)
    check_choice("norm", norm, NORMS)
    bound = check_real("bound", bound, low=0.0, low_inclusive=False)
    return n, d, bound


def sparse_theta(
    rng: np.random.Generator, n: int, d: int, s: int, values: str = "equal", norm: str = "l1", bound: float = 1.0
) -> np.ndarray:
    """``n`` independent ``s``-sparse parameter vectors, shape ``(n, d)``.

    Each row's support is ``s`` distinct coordinates drawn uniformly *without* replacement (so every row has
    exactly ``s`` non-zeros). The support entries are all equal and positive (``values="equal"``; with
    ``norm="l1"``, ``bound=1``, ``s=5`` they are the paper's 1/5, spec/han-frank-wolfe.md §8.2) or i.i.d.
    N(0, 1) (``values="gaussian"``) or U[0.5, 1] with uniform random signs (``values="uniform"``, the FLIPHAT
    code's law), then the row is scaled to ``||theta||_norm == bound``.

    The published reference code draws the support *with* replacement (``np.random.choice(d, 5)``), giving
    ``||theta||_1 = |supp|/5 <= 1`` (spec/han-frank-wolfe.md §8.2); here the norm is always exactly ``bound``.
    """
    n, d, bound = _check_common(rng, n, d, norm, bound)
    s = check_int("s", s, low=1, high=d)
    check_choice("values", values, THETA_VALUES)
    support = np.argsort(rng.random((n, d)), axis=1, kind="stable")[:, :s]
    if values == "equal":
        entries = np.ones((n, s))
    elif values == "uniform":
        entries = rng.uniform(0.5, 1.0, (n, s)) * np.where(rng.random((n, s)) < 0.5, -1.0, 1.0)
    else:
        entries = rng.standard_normal((n, s))
    theta = np.zeros((n, d))
    np.put_along_axis(theta, support, entries, axis=1)
    return theta * (bound / norm_of(theta, norm))[:, None]


def dense_theta(
    rng: np.random.Generator, n: int, d: int, norm: str = "l2", bound: float = 1.0
) -> np.ndarray:
    """``n`` dense parameter vectors, shape ``(n, d)``: i.i.d. N(0, 1) entries scaled to ``||theta||_norm == bound``.

    With ``norm="l2"`` each row is uniform on the sphere of radius ``bound``.
    """
    n, d, bound = _check_common(rng, n, d, norm, bound)
    theta = rng.standard_normal((n, d))
    return theta * (bound / norm_of(theta, norm))[:, None]
