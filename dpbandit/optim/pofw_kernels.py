"""DP-POFW's per-step array work as compiled kernels (numba), for :class:`dpbandit.optim.pofw.DPPOFWBatch`, the
batched DP-HDB (``dpbandit.agents.batched.dp_hdb``), which runs the same kernels on the rows of its seed stack, and
DP-HDB's block kernel (``dpbandit.agents.dp_hdb_blocks``), which runs whole steps (:func:`gradient_step`,
:func:`select_drawn`) for a block of rounds.

Each kernel is the plain loop of what it computes, compiled without fast-math (IEEE operations in program order), so
its results do not depend on how it is called; no random number is drawn here (the proposals and uniforms of the
sampler come from the privacy stream, drawn by the caller with numpy). Two operations of a step are not loops of
ours, because the single path computes them with numpy and a kernel must give its bits: the played learner's
``V_a . x`` is numpy's own BLAS ``ddot`` (the function numpy's ``@`` calls for two vectors, bound by symbol name:
:data:`NUMPY_DOT`), and the inverse CDF's ``exp`` is numpy's (SIMD, not libm's): :func:`select_drawn` leaves those
selections to the caller.
"""

from __future__ import annotations

import ctypes
import math

import llvmlite.binding as llvm
import numpy as np
from numba import cfunc, carray, types

from dpbandit.compiled import kernel

__all__ = ["NUMPY_DOT", "add_gradient", "first_accepted", "gradient_step", "move_to_vertices", "select_drawn"]

_DDOT = types.float64(types.int64, types.voidptr, types.int64, types.voidptr, types.int64)  # n, x, incx, y, incy
#: ``ddot`` symbols of the BLAS builds numpy links (ILP64 first); every one is called with 64-bit integers, which an
#: LP64 ``ddot`` reads as its 32-bit ones (x86-64 and arm64 pass integers in registers).
_DDOT_SYMBOLS = ("scipy_cblas_ddot64_", "cblas_ddot64_", "cblas_ddot_64", "scipy_cblas_ddot", "cblas_ddot")


def _bind_numpy_ddot() -> bool:
    """Bind the symbol ``dpbandit_numpy_ddot`` to the BLAS ``ddot`` that gives numpy's ``a @ b`` bit for bit on test
    vectors (the BLAS libraries loaded in the process, numpy's own first); True if one does, else bind a plain loop
    and return False."""
    from threadpoolctl import threadpool_info

    libraries = sorted((info["filepath"] for info in threadpool_info() if info["user_api"] == "blas"),
                       key=lambda path: "numpy" not in path)
    gen = np.random.default_rng(0)
    tests = [(gen.standard_normal(n), gen.uniform(-1.0, 1.0, n) * 10.0 ** gen.integers(-3, 4)) for n in
             (1, 7, 16, 33, 64, 100, 1000, 1003)]
    for path in libraries:
        library = ctypes.CDLL(path)
        for symbol in _DDOT_SYMBOLS:
            function = getattr(library, symbol, None)
            if function is None:
                continue
            function.restype = ctypes.c_double
            function.argtypes = [ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64]
            if all(function(a.size, a.ctypes.data, 1, b.ctypes.data, 1) == a @ b for a, b in tests):
                llvm.add_symbol("dpbandit_numpy_ddot", ctypes.cast(function, ctypes.c_void_p).value)
                return True
    @cfunc(_DDOT)
    def plain_ddot(n, x, incx, y, incy):  # compiled only here, where no BLAS ddot gives numpy's bits
        a, b = carray(x, (n * incx,), np.float64), carray(y, (n * incy,), np.float64)
        total = 0.0
        for j in range(n):
            total += a[j * incx] * b[j * incy]
        return total

    llvm.add_symbol("dpbandit_numpy_ddot", plain_ddot.address)
    _keep.append(plain_ddot)
    return False


_keep: list = []  # the fallback's compiled function, alive as long as the symbol points at it


#: Whether :func:`gradient_step`'s ``V_a . x`` is numpy's own ``ddot`` (the single path's bits); where it is not
#: (no BLAS ``ddot`` found that matches numpy's ``@``), DP-HDB plays its rounds through the single path.
NUMPY_DOT = _bind_numpy_ddot()
_ddot = types.ExternalFunction("dpbandit_numpy_ddot", _DDOT)


@kernel
def add_gradient(scores, c, x):
    """Add the gradient ``g = c x`` ((d,)) to a learner's score row ``[-S, S]`` ((2d,)): ``S += c x`` and the
    mirrored half; returns the envelope ``max(-min S, max S) = max_j |S_j|``. Compiled (numba): one pass, the
    same operations per entry as ``S += c * x`` and ``np.negative``."""
    d = x.shape[0]
    low, high = math.inf, -math.inf
    for j in range(d):
        value = scores[d + j] + c * x[j]
        scores[d + j] = value
        scores[j] = -value
        if value < low or value != value:  # NaN propagates, as in numpy's min and max
            low = value
        if value > high or value != value:
            high = value
    return high if high > -low else -low  # Python's max(-low, high)


@kernel
def move_to_vertices(V, k, r, last_j, last_value):
    """Add each learner's selected vertex to its vertex sums V (n, d): vertex ``k[i]`` in [0, 2d) is ``+r e_k`` for
    k < d and ``-r e_{k-d}`` otherwise; its coordinate and value are recorded in ``last_j`` and ``last_value`` (n,)
    (the previous iterate's gradient needs them). Compiled (numba)."""
    d = V.shape[1]
    for i in range(k.shape[0]):
        j, value = (k[i], r) if k[i] < d else (k[i] - d, -r)
        V[i, j] += value
        last_j[i] = j
        last_value[i] = value


@kernel
def first_accepted(scores, rows, k, u, a, envelope, out):
    """One round of rejection sampling from the uniform proposal for the learners ``rows`` (R,) (ascending): row
    ``r`` accepts its first proposal ``k[r, b]`` (vertex index in [0, 2d)) with ``u[r, b] < exp(a scores[i, k[r, b]]
    - envelope[i])``, i = rows[r], which is written to ``out[i]``; returns the rows that accepted none (the
    uniforms ``u`` (R, B) and proposals are drawn by the caller from the privacy stream, all of them, so the draws
    do not depend on where a row accepts). ``scores`` (n, 2d) are the log-weights over ``a``, ``envelope`` (n,)
    their exact maxima times a: each acceptance probability is at most 1. Compiled (numba): the exponentials are
    evaluated only up to the first acceptance."""
    pending = np.empty(rows.shape[0], dtype=rows.dtype)
    missed = 0
    for r in range(rows.shape[0]):
        i = rows[r]
        for b in range(k.shape[1]):
            if u[r, b] < math.exp(scores[i, k[r, b]] * a - envelope[i]):
                out[i] = k[r, b]
                break
        else:
            pending[missed] = i
            missed += 1
    return pending[:missed]


@kernel
def _clamp(value, limit):
    """Python's ``min(max(value, -limit), limit)``, comparison for comparison (NaN stays NaN)."""
    value = -limit if -limit > value else value
    return limit if limit < value else value


@kernel
def gradient_step(scores, V, s_inf, last_j, last_value, a, x, x_inf, y, t, lipschitz, logistic, two_scale):
    """The gradient part of step t of :meth:`~dpbandit.optim.pofw.DPPOFWBatch.step_one` for learner ``a`` and a checked
    sample: ``x`` (d,) contiguous with ``0 < x_inf = max_j |x_j| <= feature bound``, ``y`` finite. The loss
    derivative is the GLM loss's ``dphi``: ``two_scale (z - y)`` (``SquaredLoss``: two_scale = 2 scale) or, with
    ``logistic``, ``1 / (1 + exp(-z)) - y`` (``LogisticLoss``: SciPy's ``expit``, the same formula and libm's
    ``exp``). ``V_a . x`` is numpy's own ``ddot`` (module docstring), the rest the single path's scalar operations in
    its order; writes the score row and its envelope ``s_inf[a]``."""
    d = x.shape[0]
    if V.shape[1] != d or not (V[a].flags.c_contiguous and x.flags.c_contiguous):
        raise ValueError("gradient_step: V (n, d) and x (d,) must be C-contiguous")
    vx = _ddot(d, V[a].ctypes, 1, x.ctypes, 1)
    z_prev = (vx - last_value[a] * x[last_j[a]]) / (t - 1) if t > 1 else 0.0
    limit = lipschitz / x_inf
    z = vx / t
    if logistic:
        now, prev = 1.0 / (1.0 + math.exp(-z)) - y, 1.0 / (1.0 + math.exp(-z_prev)) - y
    else:
        now, prev = two_scale * (z - y), two_scale * (z_prev - y)
    s_inf[a] = add_gradient(scores[a], (t + 1.0) * _clamp(now, limit) - t * _clamp(prev, limit), x)


@kernel
def select_drawn(scores, s_inf, a, k, u, v, exact, span, rows, out):
    """The selections of a step from its pre-drawn numbers (:class:`~dpbandit.optim.pofw_draws.SelectionDraws`) into
    ``out`` (n,), as :meth:`~dpbandit.optim.pofw.DPPOFWBatch._select_and_move` makes them; returns False, having
    decided nothing, where that takes numpy's ``exp`` or further draws (the caller then runs the single path's
    selection). ``exact`` (noise off): the LMO, ties by the inverse CDF of the 0/1 weights with the uniforms ``v``
    (n,). Otherwise the Gumbel form with log-weights ``a scores``: when every row is near uniform (``2 a s_inf <=
    span``, no NaN) one rejection round with the proposals ``k`` and uniforms ``u`` (n, B) (:func:`first_accepted`
    over ``rows`` = 0..n-1); False if a row accepts none, a row is not near uniform (the inverse CDF) or there are
    no proposals (``k`` (n, 0): 2d <= 2B)."""
    n, d2 = scores.shape
    if exact:
        for i in range(n):
            total = 0.0
            for j in range(d2):
                total += 1.0 if scores[i, j] == s_inf[i] else 0.0
            threshold, cdf, count = v[i] * total, 0.0, 0
            for j in range(d2):
                cdf += 1.0 if scores[i, j] == s_inf[i] else 0.0
                count += cdf <= threshold
            out[i] = min(count, d2 - 1)
        return True
    if k.shape[1] == 0:
        return False
    envelope = np.empty(n)
    for i in range(n):
        envelope[i] = a * s_inf[i]
        if not 2.0 * envelope[i] <= span:  # (NaN too: the single path's general branch)
            return False
    return first_accepted(scores, rows, k, u, a, envelope, out).shape[0] == 0
