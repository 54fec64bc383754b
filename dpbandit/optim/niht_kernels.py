"""N-IHT's noise-off steps on a quadratic loss as one compiled kernel, for noise-off FLIPHAT's per-user refit
(issue 25; :mod:`dpbandit.agents.fliphat_noise_off`).

Noise-off FLIPHAT with the identity link refits after every user: each fit is M steps of
:func:`dpbandit.optim.niht.iht_steps` on the gradient ``G theta - b`` of the kept sums. At the dimensions it runs at
(d = 50 to 400) a step's arithmetic is smaller than the fixed cost of the dozen numpy calls that ``iht_steps`` makes
(the gradient, the top-s selection, the l1 projection). :func:`iht_quadratic` is the same step, the same operations
in the same order, compiled:

* the gradient ``dsymv(1, G, theta) - b`` with SciPy's own BLAS ``dsymv`` (``scipy.linalg.cython_blas``, the routine
  ``scipy.linalg.blas.dsymv`` calls, with its arguments: the upper triangle of the F-ordered G, beta = 0);
* ``v = theta - (step / n) * gradient`` elementwise (``coef = step / n`` computed by the caller, as ``iht_steps``);
* the s largest ``|v_j|`` kept, of equal magnitudes the lowest indices (``niht._top_s``'s stable-sort rule);
* the l1-ball projection of :func:`dpbandit.optim.projections.project_l1_ball`: numpy's pairwise sum for the
  inside test (:func:`_numpy_sum`, numpy's ``pairwise_sum`` of a contiguous float64 vector), then the sorted
  prefix rule with a sequential cumulative sum.

No fast-math: IEEE operations in program order (``docs/ARCHITECTURE.md``, "Compiled kernels"), so the result equals
``iht_steps`` bit for bit (``tests/optim/test_niht_kernels.py``, and through FLIPHAT's runs). No noise is drawn here:
it is a noise-off fit only.
"""

from __future__ import annotations

import llvmlite.binding as llvm
import numpy as np
from numba import types
from numba.extending import get_cython_function_address

from dpbandit.compiled import kernel

__all__ = ["add_user", "iht_quadratic", "refit_quadratic"]

llvm.add_symbol("dpbandit_dsymv", get_cython_function_address("scipy.linalg.cython_blas", "dsymv"))
_ptr = types.voidptr
# uplo, n, alpha, a, lda, x, incx, beta, y, incy
_dsymv = types.ExternalFunction("dpbandit_dsymv", types.void(*[_ptr] * 10))
llvm.add_symbol("dpbandit_dsyrk", get_cython_function_address("scipy.linalg.cython_blas", "dsyrk"))
# uplo, trans, n, k, alpha, a, lda, beta, c, ldc
_dsyrk = types.ExternalFunction("dpbandit_dsyrk", types.void(*[_ptr] * 10))
_UPPER = np.array([ord("U")], dtype=np.uint8)
_NO_TRANS = np.array([ord("N")], dtype=np.uint8)
_PAIRWISE_BLOCK = 128  # numpy's PW_BLOCKSIZE


@kernel
def _block(a, start, n):
    """numpy's ``pairwise_sum`` of ``a[start: start + n]``, n <= 128: sequential below 8 terms, else eight
    interleaved partial sums combined as a tree, then the remainder."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[start + i]
        return res
    r = a[start: start + 8].copy()
    i = 8
    while i < n - n % 8:
        for k in range(8):
            r[k] += a[start + i + k]
        i += 8
    res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
    while i < n:
        res += a[start + i]
        i += 1
    return res


@kernel
def _pairwise(a, start, n):
    """numpy's ``pairwise_sum`` of ``a[start: start + n]``: blocks of at most 128 (:func:`_block`), a longer run split
    in halves (the first a multiple of 8) summed left + right. numpy's recursion, run on explicit stacks (a cached
    kernel cannot call itself)."""
    tasks = np.empty((192, 3), dtype=np.int64)  # (start, n, halves done?): depth <= 64
    values = np.empty(192)
    top, count = 0, 0
    tasks[0, 0], tasks[0, 1], tasks[0, 2] = start, n, 0
    while top >= 0:
        s, m, done = tasks[top, 0], tasks[top, 1], tasks[top, 2]
        top -= 1
        if m <= _PAIRWISE_BLOCK:
            values[count] = _block(a, s, m)
            count += 1
        elif done:
            count -= 1
            values[count - 1] = values[count - 1] + values[count]
        else:
            m2 = m // 2
            m2 -= m2 % 8
            tasks[top + 1, 0], tasks[top + 1, 1], tasks[top + 1, 2] = s, m, 1  # combine after both halves
            tasks[top + 2, 0], tasks[top + 2, 1], tasks[top + 2, 2] = s + m2, m - m2, 0
            tasks[top + 3, 0], tasks[top + 3, 1], tasks[top + 3, 2] = s, m2, 0  # the left half first
            top += 3
    return values[0]


@kernel
def _numpy_sum(a):
    """``a.sum()`` of a contiguous float64 vector as numpy computes it (pairwise over all of it; tested)."""
    return _pairwise(a, 0, a.shape[0])


@kernel
def _project_l1(v, radius, a, u, out):
    """``out`` = the l1-ball projection of ``v`` (d,) (``projections._l1_ball``), with ``a``, ``u`` (d,) scratch."""
    d = v.shape[0]
    for j in range(d):
        a[j] = abs(v[j])
    if _numpy_sum(a) <= radius:
        out[:] = v
        return
    u[:] = np.sort(a)[::-1]  # -sort(-a): the magnitudes decreasing
    excess = 0.0
    support, tau = 0, 0.0
    for k in range(d):  # cumsum(u) - total, and the count of u_k k > excess_k (a prefix)
        excess += u[k]
        if u[k] * (k + 1) > excess - radius:
            support += 1
    excess = 0.0
    for k in range(support):
        excess += u[k]
    tau = (excess - radius) / support
    for j in range(d):
        w = a[j] - tau
        w = w if w > 0.0 else 0.0  # np.maximum(a - tau, 0)
        s = 1.0 if v[j] > 0.0 else (-1.0 if v[j] < 0.0 else (0.0 if v[j] == 0.0 else v[j]))  # np.sign(v)
        out[j] = s * w


@kernel
def iht_quadratic(G, b, start, coef, s, radius, iterations):
    """M = ``iterations`` noise-off N-IHT steps from ``start`` (d,) on the loss with gradient ``G theta - b``: ``G``
    (d, d) F-ordered with its upper triangle set (the kept Gram sum, ``KeptUsers``), ``b`` (d,), ``coef`` = step / n.
    Returns theta (d,) (module docstring: the bits of ``iht_steps``)."""
    d = start.shape[0]
    if not G.flags.f_contiguous or G.shape[0] != d or G.shape[1] != d:
        raise ValueError("G must be an F-ordered (d, d) array")
    s = min(s, d)
    theta = start.copy()
    grad, v = np.empty(d), np.empty(d)
    a, u, order = np.empty(d), np.empty(d), np.empty(d)
    ints = np.array([d, 1], dtype=np.int32)  # n = lda, incx = incy
    scalars = np.array([1.0, 0.0])  # alpha, beta
    for _ in range(iterations):
        _dsymv(_UPPER.ctypes, ints.ctypes, scalars.ctypes, G.ctypes, ints.ctypes, theta.ctypes, ints[1:].ctypes,
               scalars[1:].ctypes, grad.ctypes, ints[1:].ctypes)
        for j in range(d):
            v[j] = theta[j] - coef * (grad[j] - b[j])
            a[j] = -abs(v[j])
        order[:] = np.sort(a)
        threshold = -order[s - 1]  # the s-th largest |v_j|
        kept = 0
        for j in range(d):  # keep every |v_j| above the threshold, then the first ones equal to it
            u[j] = 0.0
            if abs(v[j]) > threshold:
                u[j] = v[j]
                kept += 1
        for j in range(d):
            if kept == s:
                break
            if abs(v[j]) == threshold:
                u[j] = v[j]
                kept += 1
        _project_l1(u, radius, a, v, theta)
    return theta


@kernel
def add_user(G, b, x, y):
    """One user into the kept sums of the identity link: ``G`` (d, d) F-ordered ``+= x x^T`` on its upper triangle
    and ``b`` (d,) ``+= x y``, for the row ``x`` (d,) contiguous and reward ``y``. ``G`` is updated by SciPy's BLAS
    ``dsyrk`` with the arguments ``scipy.linalg.blas.dsyrk(1, x[None].T, beta=1, c=G, trans=0, lower=0)`` passes
    (n = lda = ldc = d, k = 1), and ``x y`` is one product a coordinate, as ``X.T @ y`` of one row: the bits of
    :meth:`~dpbandit.agents.fliphat_noise_off.KeptUsers.absorb` of one user."""
    d = x.shape[0]
    if not G.flags.f_contiguous or G.shape[0] != d or G.shape[1] != d or not x.flags.c_contiguous:
        raise ValueError("G must be an F-ordered (d, d) array and x a contiguous (d,) vector")
    ints = np.array([d, 1], dtype=np.int32)  # n = lda = ldc, k
    scalars = np.array([1.0, 1.0])  # alpha, beta
    _dsyrk(_UPPER.ctypes, _NO_TRANS.ctypes, ints.ctypes, ints[1:].ctypes, scalars.ctypes, x.ctypes, ints.ctypes,
           scalars[1:].ctypes, G.ctypes, ints.ctypes)
    for j in range(d):
        b[j] += x[j] * y


@kernel
def refit_quadratic(G, b, counts, previous, min_count, step, s, radius, iterations, theta):
    """Every model's noise-off fit on its kept sums, in one call: ``theta[m] =`` :func:`iht_quadratic` ``(G[m].T,
    b[m], previous[m], step / counts[m], s, radius, iterations)`` for each model m with ``counts[m] >= min_count``
    (the others are left as they are: zeros from the caller). ``G`` (M, d, d) C-ordered, each block's transpose the
    F-ordered sum whose upper triangle is set; ``b``, ``previous``, ``theta`` (M, d); ``counts`` (M,) int."""
    for m in range(G.shape[0]):
        n = float(counts[m])
        if n >= min_count:
            theta[m] = iht_quadratic(G[m].T, b[m], previous[m], step / n, s, radius, iterations)
