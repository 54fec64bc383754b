"""Context (feature-vector) laws and their normalisation.

A context is drawn in two steps: a raw draw from one of the laws below (:func:`draw_contexts`), then
:func:`normalise`, which puts it in the ``context_norm`` ball of radius ``context_bound``.

Raw laws (``scale`` = ``context_scale``):

* ``"gaussian"``: N(0, scale^2 I_d).
* ``"ar"``: N(0, scale^2 Sigma) with the AR(rho) Toeplitz matrix Sigma_ij = rho^|i-j|, |rho| < 1.
* ``"equicorrelated"``: N(0, scale^2 Sigma) with Sigma = (1 - rho) I + rho 1 1^T, -1/(d-1) < rho < 1.
* ``"sphere"``: uniform on the Euclidean sphere of radius ``scale`` (covariance scale^2 I_d / d).

The correlated laws are sampled with an exact square root of Sigma applied in O(d) per vector, without BLAS
or SVD (the same seed gives the same draws on every machine): the AR law through its closed-form Cholesky
factor, applied as the recursion x_1 = z_1, x_j = rho x_{j-1} + sqrt(1 - rho^2) z_j
(``scipy.signal.lfilter``); the equicorrelated law through the symmetric root
sqrt(1 - rho) (I + c 1 1^T) with c = (sqrt(1 + u) - 1)/d, u = d rho/(1 - rho).

Draws are made row by row in C order from the generator, so the first n vectors of a larger draw equal a
draw of n vectors: environments may generate contexts in blocks of any size with identical results.
"""

from __future__ import annotations

import numpy as np

from dpbandit.envs.parameters import norm_of
from dpbandit.validation import check_choice, check_generator, check_int, check_real

__all__ = [
    "CONTEXT_LAWS",
    "CONTEXT_NORMS",
    "NORMALIZE_MODES",
    "check_rho",
    "context_covariance",
    "draw_contexts",
    "normalise",
]

CONTEXT_LAWS: tuple[str, ...] = ("gaussian", "ar", "equicorrelated", "sphere")
CONTEXT_NORMS: tuple[str, ...] = ("l2", "linf")
NORMALIZE_MODES: tuple[str, ...] = ("scale", "clip")


def check_rho(rho: float, law: str, d: int) -> float:
    """Validate the correlation ``rho`` for ``law`` in dimension ``d`` (any finite number for uncorrelated laws)."""
    rho = check_real("rho", rho)
    if law == "ar" and not -1.0 < rho < 1.0:
        raise ValueError(f"rho must be a finite number in (-1, 1) for the 'ar' context law, got {rho!r}")
    if law == "equicorrelated":
        low = -1.0 / (d - 1) if d > 1 else -np.inf
        if not low < rho < 1.0:
            raise ValueError(
                f"rho must be a finite number in (-1/(d-1), 1) = ({low:g}, 1) for the 'equicorrelated' context "
                f"law with d={d} (Sigma must be positive definite), got {rho!r}"
            )
    return rho


def context_covariance(law: str, d: int, scale: float = 1.0, rho: float = 0.5) -> np.ndarray:
    """The covariance ``(d, d)`` of a raw draw of ``law`` (before :func:`normalise`)."""
    check_choice("law", law, CONTEXT_LAWS)
    d = check_int("d", d, low=1)
    scale = check_real("scale", scale, low=0.0, low_inclusive=False)
    rho = check_rho(rho, law, d)
    idx = np.arange(d)
    if law == "ar":
        sigma = rho ** np.abs(idx[:, None] - idx[None, :]).astype(np.float64)
    elif law == "equicorrelated":
        sigma = np.full((d, d), rho) + (1.0 - rho) * np.eye(d)
    elif law == "sphere":
        sigma = np.eye(d) / d
    else:
        sigma = np.eye(d)
    return scale**2 * sigma


def draw_contexts(
    rng: np.random.Generator,
    n: int | tuple[int, ...],
    d: int,
    law: str = "gaussian",
    *,
    scale: float = 1.0,
    rho: float = 0.5,
) -> np.ndarray:
    """Raw i.i.d. context draws of ``law``, shape ``(n, d)`` (or ``(*n, d)`` for a tuple ``n``), not normalised.

    ``rho`` is used by the ``"ar"`` and ``"equicorrelated"`` laws only. See the module docstring for the laws.
    """
    check_generator(rng)
    size = tuple(n) if isinstance(n, tuple) else (n,)
    size = tuple(check_int("n", m, low=0) for m in size)
    d = check_int("d", d, low=1)
    check_choice("law", law, CONTEXT_LAWS)
    scale = check_real("scale", scale, low=0.0, low_inclusive=False)
    rho = check_rho(rho, law, d)

    z = rng.standard_normal(size + (d,))
    if law == "ar" and d > 1 and rho != 0.0:
        from scipy.signal import lfilter  # imported here: only the AR law needs scipy.signal

        z[..., 1:] *= np.sqrt(1.0 - rho * rho)
        z = lfilter([1.0], [1.0, -rho], z, axis=-1)
    elif law == "equicorrelated" and rho != 0.0:
        u = d * rho / (1.0 - rho)
        c = u / (d * (1.0 + np.sqrt(1.0 + u)))  # = (sqrt(1 + u) - 1)/d without cancellation
        z = np.sqrt(1.0 - rho) * (z + c * z.sum(axis=-1, keepdims=True))
    elif law == "sphere":
        return normalise(z, "l2", scale, "scale")
    return scale * z


def normalise(x: np.ndarray, norm: str, bound: float, mode: str = "scale") -> np.ndarray:
    """Put every vector (last axis of ``x``) in the ``norm`` ball of radius ``bound``; returns a new array.

    * ``mode="scale"``: every vector is rescaled to norm exactly ``bound`` (the paper's "normalised to
      ||x||_inf = 1", spec/han-frank-wolfe.md §8.2, with the l_inf norm, not the l_1 norm of defect D7, §9.1).
      A zero vector (a probability-zero event for the continuous laws) stays zero.
    * ``mode="clip"``: the Euclidean projection onto the ball, applied only to vectors outside it: radial
      shrinking for ``"l2"``, coordinate-wise clipping to ``[-bound, bound]`` for ``"linf"``.

    The result is guarded against round-off: every coordinate lies in ``[-bound, bound]``.
    """
    check_choice("norm", norm, CONTEXT_NORMS)
    bound = check_real("bound", bound, low=0.0, low_inclusive=False)
    check_choice("mode", mode, NORMALIZE_MODES)
    x = np.asarray(x, dtype=np.float64)
    if mode == "clip" and norm == "linf":
        return np.clip(x, -bound, bound)
    size = norm_of(x, norm)
    if mode == "scale":
        factor = np.divide(bound, size, out=np.zeros_like(size), where=size > 0)
    else:
        factor = np.minimum(1.0, np.divide(bound, size, out=np.ones_like(size), where=size > 0))
    return np.clip(x * factor[..., None], -bound, bound)
