"""DP-UCB's per-round array work as compiled kernels (numba), for :mod:`dpbandit.agents.dp_ucb` and its batched form.

At the dimensions DP-UCB is run at (d <= 200) a round's arrays are small, and written as numpy expressions the work took
some 25 numpy and LAPACK calls whose fixed cost exceeded the arithmetic (issue 15: 5.4x the bare mechanism work at
d = 20). Here a round of the curator is one kernel call (:func:`publish`) and the action rule's index one more
(:func:`scores`); a block of rounds (``DPUCB.play_block``, issue 25) is one call of :func:`play_rounds` for runs of
rounds, the index and the curator's round fused with the release kept in place (no arrays allocated per round, no V_t
copy: at d = 400 those passes over (d, d) matrices were a tenth of a round). The loops are compiled without fast-math
(IEEE operations in program order, so the bits do not depend on inlining or vectorisation); the factorisations and
triangular solves are LAPACK's ``dpotrf`` and ``dtrtrs``, SciPy's own (``scipy.linalg.cython_lapack``), called from the
kernels. The batched form runs the same per-seed kernels over a leading seed axis, so its results equal the single
seed's bit for bit.

Layouts (every array C-contiguous except a block's observations, which may be a broadcast view). ``gram``
(M, n, n), n = d + 1: the exact sums ``sum_s v_s v_s^T`` (and the shift on the Gram block's diagonal) in the lower
triangles; ``noise`` (M P,), P = n (n + 1) / 2: the tree's packed
noise (:mod:`dpbandit.privacy.packed`; its order, column by column of the upper triangle, is row by row of the
lower triangle, where the entries are mirrored), or an empty array with the noise off; ``V`` and ``chol``
(M, d, d): V_t's lower triangles and the lower Cholesky factors C of V_t (``V_t = C C^T``; a C-ordered lower
triangle is LAPACK's column-major upper triangle of the transpose, so LAPACK works on them in place, as "U");
``response`` (M, d): the noisy response columns u.
"""

from __future__ import annotations

import math

import llvmlite.binding as llvm
import numpy as np
from numba import types
from numba.extending import get_cython_function_address

from dpbandit.agents.baselines import best_and_ties
from dpbandit.compiled import kernel
from dpbandit.privacy.tree_noise import close_node

__all__ = ["add_item", "close_and_publish", "load_item", "load_items", "noisy_lower", "play_rounds", "publish",
           "publish_stack", "scores", "scores_stack"]

_SQRT2 = math.sqrt(2.0)

# SciPy's LAPACK, bound by symbol name so that the compiled kernels can be cached on disk
for _name in ("dpotrf", "dtrtrs"):
    llvm.add_symbol(f"dpbandit_{_name}", get_cython_function_address("scipy.linalg.cython_lapack", _name))
_ptr = types.voidptr
_dpotrf = types.ExternalFunction("dpbandit_dpotrf", types.void(*[_ptr] * 5))  # uplo, n, a, lda, info
_dtrtrs = types.ExternalFunction("dpbandit_dtrtrs", types.void(*[_ptr] * 10))  # uplo trans diag n nrhs a lda b ldb info
_FLAGS = np.array([ord("U"), ord("T"), ord("N")], dtype=np.uint8)  # uplo, trans, diag


@kernel
def _cholesky(A):
    """Factor in place the matrix whose lower triangle the C-ordered (d, d) A holds: A's lower triangle becomes C
    (LAPACK ``dpotrf``, "U" on the column-major transpose); returns LAPACK's info (> 0: not positive definite)."""
    if not A.flags.c_contiguous:
        raise ValueError("the matrix must be C-contiguous")
    ints = np.array([A.shape[0], 0], dtype=np.int32)  # n = lda, info
    _dpotrf(_FLAGS.ctypes, ints.ctypes, A.ctypes, ints.ctypes, ints[1:].ctypes)
    return ints[1]


@kernel
def _solve(C, B):
    """Solve ``C W = B`` in place for the lower factor C (d, d): the rows of B (r, d) are the right-hand sides on
    entry and the solutions on exit (LAPACK ``dtrtrs``: "U", transposed, on the column-major transpose of C)."""
    if not (C.flags.c_contiguous and B.flags.c_contiguous):
        raise ValueError("the factor and the right-hand sides must be C-contiguous")
    ints = np.array([C.shape[0], B.shape[0], 0], dtype=np.int32)  # n = lda = ldb, nrhs, info
    _dtrtrs(_FLAGS.ctypes, _FLAGS[1:].ctypes, _FLAGS[2:].ctypes, ints.ctypes, ints[1:].ctypes, C.ctypes,
            ints.ctypes, B.ctypes, ints.ctypes, ints[2:].ctypes)


@kernel
def load_item(obs, arm, reward, low, high, linf, v):
    """Write the item ``v = [x; y]`` ((d+1,)) of the played arm's features ``x = obs[arm]`` ((K, d)) and the reward
    clipped to [low, high] as ``RewardClip.clip`` does (``min(max(reward, low), high)``); returns ``||x||_inf``
    (``linf``) or ``||x||_2`` for the context-bound check, NaN if x holds one, and inf, writing nothing, if the arm
    is outside [0, K) or the reward is not finite (the caller's checks then give the error)."""
    K, d = obs.shape
    if arm < 0 or arm >= K or not math.isfinite(reward):
        return math.inf
    norm = 0.0
    for i in range(d):
        x = obs[arm, i]
        v[i] = x
        if linf:
            if abs(x) > norm or x != x:  # NaN propagates
                norm = abs(x)
        else:
            norm += x * x
    y = low if low > reward else reward
    v[d] = high if high < y else y
    return norm if linf else math.sqrt(norm)


@kernel
def load_items(obs, arms, rewards, low, high, linf, v):
    """:func:`load_item` for each seed of a stack: ``v[s] = [obs[s, arms[s]]; clipped rewards[s]]`` ((S, d+1));
    ``obs`` (S, K, d), ``arms`` (S,), ``rewards`` (S,). Returns the largest context norm, NaN if a played row holds
    a NaN and inf if an arm is out of range or a reward is not finite (the caller then passes the round to the
    single path)."""
    S = v.shape[0]
    if obs.shape[0] != S or arms.shape[0] != S or rewards.shape[0] != S or v.shape[1] != obs.shape[2] + 1:
        raise ValueError("load_items: obs (S, K, d), arms and rewards (S,), v (S, d+1)")
    worst = 0.0
    for s in range(S):
        norm = load_item(obs[s], arms[s], rewards[s], low, high, linf, v[s])
        if not norm <= worst:  # a larger norm, inf or NaN
            if norm != norm or norm == math.inf:
                return norm
            worst = norm
    return worst


@kernel
def publish(gram, v, model, noise, V, u, chol, previous, failed):
    """One round of the curator: add the item ``v v^T`` ((n,)) to ``gram[model]``'s lower triangle; write the
    lower triangles of ``V = G + H~`` (M, d, d) and the release's ``u`` (M, d) from ``gram + phi^{-1}(noise)``
    (:func:`noisy_lower`); and factor V into the release's ``chol`` (M, d, d), zero above the diagonals (the caller
    allocates the release's arrays, uninitialised: boxing fresh arrays out of a kernel costs more than the work at
    d = 20). With the noise on every model changed (fresh node noise for all) and is factored; with it off only
    ``model`` is, the others' factors are copied from ``previous`` (M, d, d), and all are factored if ``previous`` is
    empty (0, d, d). ``failed`` (M,) gets 1 where V_t is not positive definite (the caller lifts it,
    :func:`~dpbandit.agents.dp_ucb_release.factor`), else 0; returns the number of such models."""
    add_item(gram[model], v)
    d = V.shape[1]
    noisy = noise.shape[0] > 0
    failures = 0
    for m in range(gram.shape[0]):
        noisy_lower(gram, noise, m, V[m], u)
        failed[m] = 0
        if noisy or m == model or previous.shape[0] == 0:
            for i in range(d):
                for j in range(i + 1):
                    chol[m, i, j] = V[m, i, j]
                for j in range(i + 1, d):
                    chol[m, i, j] = 0.0
            if _cholesky(chol[m]) != 0:
                failed[m] = 1
                failures += 1
        else:
            chol[m] = previous[m]
    return failures


@kernel
def add_item(g, v):
    """Add the item ``v v^T`` ((n,)) to the lower triangle of the exact sums ``g`` (n, n)."""
    for i in range(v.shape[0]):
        vi = v[i]
        for j in range(i + 1):
            g[i, j] += vi * v[j]


@kernel
def noisy_lower(gram, noise, m, out, u):
    """Model ``m``'s noisy release from ``gram + phi^{-1}(noise)``: the lower triangle of ``V = G + H~`` into ``out``
    (d, d) (above the diagonal untouched) and the response column into ``u[m]`` (the diagonal noise is ``sqrt(2)``
    times its packed entry, :mod:`dpbandit.privacy.packed`; ``noise`` (M P,) or empty with the noise off). The
    bottom-right entry of ``gram``, a sum of y^2, is never read. (Row by row without branches in the inner loop, so
    that it vectorises: each entry is still one IEEE addition, the same bits.)"""
    n = gram.shape[1]
    d = n - 1
    g = gram[m]
    if noise.shape[0] == 0:
        for i in range(d):
            for j in range(i + 1):
                out[i, j] = g[i, j]
        for j in range(d):
            u[m, j] = g[d, j]
        return
    p = m * (n * (n + 1) // 2)
    for i in range(d):
        for j in range(i):
            out[i, j] = g[i, j] + noise[p + j]
        out[i, i] = g[i, i] + noise[p + i] * _SQRT2
        p += i + 1
    for j in range(d):
        u[m, j] = g[d, j] + noise[p + j]


@kernel
def close_and_publish(suffix, level, draw, scale, gram, v, model, V, u, chol, failed):
    """The single path's noisy round in one call: close the tree's level-``level`` node with noise ``scale * draw``
    in its path sums ``suffix`` (L + 1, M P) (:func:`~dpbandit.privacy.tree_noise.close_node`, the draw from the
    privacy stream, made by the caller) and :func:`publish` with the release's noise ``suffix[0]``, factoring every
    model; returns the number of V_t that are not positive definite."""
    close_node(suffix, level, draw, scale)
    return publish(gram, v, model, suffix[0], V, u, chol, _NO_FACTORS, failed)


_NO_FACTORS = np.empty((0, 1, 1))  # publish's ``previous`` with the noise on (every model is factored)


@kernel
def publish_stack(gram, v, models, noise, V, u, chol, previous, failed):
    """:func:`publish` for each seed of a stack: ``gram`` (S, M, n, n), ``v`` (S, n), ``models`` (S,), ``noise``
    (S, M P) or (S, 0), ``V`` (S, M, d, d), ``u`` (S, M, d), ``chol`` (S, M, d, d), zero above the diagonals,
    ``previous`` (S, M, d, d) or (S, 0, d, d), ``failed`` (S, M); returns the number of failures."""
    failures = 0
    for s in range(V.shape[0]):
        failures += publish(gram[s], v[s], models[s], noise[s], V[s], u[s], chol[s], previous[s], failed[s])
    return failures


@kernel
def scores(chol, response, X, beta, out):
    """The optimistic index ``x_a^T theta_hat + beta ||x_a||_{V^{-1}}`` of each arm, (K,) into ``out``, from the
    factors ``chol`` (M, d, d) and responses (M, d) of the release and the user's features X (K, d); M = 1 (shared:
    every arm against model 0, one solve with K + 1 right-hand sides) or K (disjoint: arm a's ``[x_a | u_a]``
    against model a). With ``w = C^{-1} x`` and ``r = C^{-1} u``: ``x^T theta_hat = w . r`` and
    ``||x||_{V^{-1}} = ||w||_2``. Returns ``(best, ties)``: the first arm of largest index and the number of arms
    sharing it (``(first NaN, 0)`` if an index is NaN), so that the action rule breaks ties, or refuses NaN, as
    ``argmax_random_tie`` does."""
    K, d = X.shape
    M = chol.shape[0]
    if chol.shape[1:] != (d, d) or response.shape != (M, d) or (M != 1 and M != K) or out.shape[0] != K:
        raise ValueError("scores: the factors must be (M, d, d), the responses (M, d) with M = 1 or K, out (K,)")
    if M == 1:
        W = np.empty((K + 1, d))  # rows: x_1 ... x_K, u
        W[:K] = X
        W[K] = response[0]
        _solve(chol[0], W)
        for a in range(K):
            out[a] = _index(W[a], W[K], beta)
    else:
        W = np.empty((2, d))
        for a in range(K):
            W[0] = X[a]
            W[1] = response[a]
            _solve(chol[a], W)
            out[a] = _index(W[0], W[1], beta)
    return best_and_ties(out)


@kernel
def _index(w, r, beta):
    mean = 0.0
    square = 0.0
    for i in range(w.shape[0]):
        mean += w[i] * r[i]
        square += w[i] * w[i]
    return mean + beta * math.sqrt(square)


@kernel
def scores_stack(chol, response, X, beta, out, best, ties):
    """:func:`scores` for each seed of a stack: ``chol`` (S, M, d, d), ``response`` (S, M, d), ``X`` (S, K, d),
    ``out`` (S, K); each seed's ``(best, ties)`` into ``best`` and ``ties`` (S,); returns ``out``."""
    for s in range(chol.shape[0]):
        best[s], ties[s] = scores(chol[s], response[s], X[s], beta, out[s])
    return out


#: :func:`play_rounds`' reasons to hand a round back to Python: all rounds played, a tie (or NaN) in the index, an
#: item a check may refuse, a V_t that is not positive definite (the round is played; its models need the lift).
DONE, TIE, CHECK, LIFT = 0, 1, 2, 3


@kernel
def play_rounds(obs, rewards, start, stop, forced, trusted, low, high, linf, bound, betas, t0, suffix, draws,
                first_draw, scale, gram, v, chol, u, failed, out, arms):
    """Rounds ``start ... stop - 1`` of a block, each the single path's round (``DPUCB.act`` then ``update``) with the
    release kept in place: the action rule's index from the release ``chol`` (M, d, d), ``u`` (M, d) and ``betas[i]``
    and the user's own ``obs[i]`` (n, K, d) only (:func:`scores`, into ``out`` (K,)), the arm into ``arms[i]``; then the
    curator: the item of ``rewards[i, arm]`` (n, K) (:func:`load_item`), the exact sums' rank-one update, and the new
    release: with the noise on (``draws`` (r, M P) non-empty) the tree's node closing at user ``t0 + i + 1`` with noise
    ``scale * draws[i - first_draw]`` in the path sums ``suffix`` (:func:`~dpbandit.privacy.tree_noise.close_node`) and
    every model refactored, with it off (``draws`` empty, ``suffix`` (1, 0)) only the played model's. ``forced`` >= 0 is
    round ``start``'s arm (a tie broken by the caller) and ``trusted`` says round ``start``'s item passed the caller's
    checks. Returns ``(i, reason)``: ``(stop, DONE)``, or the round ``i`` the caller must finish: ``TIE`` (``out`` holds
    its index), ``CHECK`` (the item's norm is not within ``bound`` or the reward not finite; ``arms[i]`` is set) or
    ``LIFT`` (round i is played and ``failed`` (M,) marks the V_t to lift). The upper triangles of ``chol`` stay as they
    are (zero). Shapes are checked first (numba does not check indices), the tree's depth against user ``t0 + stop``
    too."""
    n, K, d = obs.shape
    M = gram.shape[0]
    noisy = draws.shape[0] > 0
    if (rewards.shape != (n, K) or arms.shape[0] != n or out.shape[0] != K or not 0 <= start <= stop <= n
            or betas.shape[0] < stop or (M != 1 and M != K) or gram.shape[1:] != (d + 1, d + 1)
            or chol.shape != (M, d, d) or u.shape != (M, d) or v.shape[0] != d + 1 or failed.shape[0] != M
            or (noisy and (not first_draw <= start <= stop <= first_draw + draws.shape[0]
                           or draws.shape[1] != M * (d + 1) * (d + 2) // 2 or suffix.shape[1] != draws.shape[1]
                           or (t0 + stop) >> (suffix.shape[0] - 1) != 0))):
        raise ValueError("play_rounds: obs (n, K, d), rewards (n, K), arms (n,), out (K,), betas (> stop,), "
                         "gram (M, d+1, d+1), chol (M, d, d), u (M, d), v (d+1,), failed (M,) with M = 1 or K, "
                         "draws covering rounds start..stop - 1 and a tree deep enough for user t0 + stop")
    for i in range(start, stop):
        if i == start and forced >= 0:
            arm = forced
        else:
            arm, ties = scores(chol, u, obs[i], betas[i], out)
            if ties != 1:
                return i, TIE
        arms[i] = arm
        norm = load_item(obs[i], arm, rewards[i, arm], low, high, linf, v)
        if not (norm <= bound or (i == start and trusted)):
            return i, CHECK
        model = arm if M > 1 else 0
        add_item(gram[model], v)
        failures = 0
        if noisy:
            t, level = t0 + i + 1, 0
            while (t >> level) & 1 == 0:
                level += 1
            close_node(suffix, level, draws[i - first_draw], scale)
        for m in range(M):
            failed[m] = 0
            if noisy or m == model:
                noisy_lower(gram, suffix[0], m, chol[m], u)
                if _cholesky(chol[m]) != 0:
                    failed[m] = 1
                    failures += 1
        if failures:
            return i, LIFT
    return stop, DONE

