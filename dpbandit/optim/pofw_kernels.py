"""DP-POFW's per-step array work as compiled kernels (numba), for :class:`dpbandit.optim.pofw.DPPOFWBatch` and the
batched DP-HDB (``dpbandit.agents.batched.dp_hdb``), which runs the same kernels on the rows of its seed stack.

Each kernel is the plain loop of what it computes, compiled without fast-math (IEEE operations in program order), so
its results do not depend on how it is called; no random number is drawn here (the proposals and uniforms of the
sampler come from the privacy stream, drawn by the caller with numpy).
"""

from __future__ import annotations

import math

import numpy as np

from dpbandit.compiled import kernel

__all__ = ["add_gradient", "first_accepted", "move_to_vertices"]


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
