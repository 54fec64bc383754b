"""Incremental ridge regression for linear bandit agents.

For each model (one per arm in the disjoint structure, a single one in the shared structure) the state is

    A = lam * I + sum_s x_s x_s^T,   b = sum_s y_s x_s,   theta = A^{-1} b,

and only ``A^{-1}`` is stored. A new sample (x, y) updates it with the Sherman–Morrison formula

    u = A^{-1} x,   A^{-1} <- A^{-1} - u u^T / (1 + x^T u),
    theta <- theta + u (y - x^T theta) / (1 + x^T u),

the second line being the recursive-least-squares form of ``theta = A^{-1} b`` (no per-round inversion, no
per-round solve; O(d^2) per update).

Shapes (K arms, dimension d):

* disjoint: ``A_inv`` (K, d, d), ``b`` and ``theta`` (K, d); row a of an observation is arm a's feature vector
  (in dpbandit's disjoint environments every row equals the shared context x_t);
* shared: ``A_inv`` (d, d), ``b`` and ``theta`` (d,); row a of an observation is the per-arm feature x_{t,a}.
"""

from __future__ import annotations

import math

import numpy as np

from dpbandit.agents.draws import best_and_ties, pick_tie
from dpbandit.compiled import kernel
from dpbandit.validation import check_choice, check_int, check_real

__all__ = ["RidgeState", "STRUCTURES", "play_ridge_block", "ridge_means", "rows_times", "sherman_morrison",
           "sherman_morrison_stack", "ucb_scores"]

#: The two parameter structures of :class:`~dpbandit.envs.constants.BanditConstants`.
STRUCTURES: tuple[str, ...] = ("disjoint", "shared")


@kernel
def rows_times(W, x, u):
    """``u = A^{-1} x`` ((d,)) for a model buffer W (d+1, d) (A^{-1} in its first d rows), as
    ``sum_j x_j A^{-1}[j, :]`` (A^{-1} is symmetric): each entry a sum in index order, the loop over contiguous rows
    and independent across the entries of u, so it vectorises without reassociating a sum."""
    d = x.shape[0]
    if W.shape[0] < d or W.shape[1] != d or u.shape[0] < d:
        raise ValueError("rows_times: W must have d columns and at least d rows, u at least d entries, for x (d,)")
    for i in range(d):
        u[i] = 0.0
    for j in range(d):
        xj = x[j]
        for i in range(d):
            u[i] += W[j, i] * xj


@kernel
def sherman_morrison(W, b, x, y):
    """Add the sample ``(x, y)`` to one model: ``W`` (d+1, d) holds ``A^{-1}`` over ``theta`` (see
    :class:`RidgeState`), ``b`` (d,) the response sum. With ``r = W x`` (``u = A^{-1} x`` by :func:`rows_times`
    over ``x^T theta``) and ``s = 1 / (1 + x^T u)``: ``W -= c u^T`` for ``c = s r`` except
    ``c_d = s (x^T theta - y)``, and ``b += y x``. Compiled (numba): the loops of the formula in program order."""
    d = x.shape[0]
    if W.shape != (d + 1, d) or b.shape[0] != d:
        raise ValueError("sherman_morrison: W must be (d+1, d) and b (d,) for x (d,)")
    r = np.empty(d + 1)
    rows_times(W, x, r)
    acc = 0.0
    for j in range(d):
        acc += W[d, j] * x[j]
    r[d] = acc
    xu = 0.0
    for j in range(d):
        xu += x[j] * r[j]
    s = 1.0 / (1.0 + xu)
    for i in range(d + 1):
        c = (r[i] - y) * s if i == d else r[i] * s
        for j in range(d):
            W[i, j] -= c * r[j]
    for j in range(d):
        b[j] += y * x[j]


@kernel
def ucb_scores(W, X, alpha, out):
    """``out[a] = x_a^T theta_m + alpha sqrt(x_a^T A_m^{-1} x_a)`` ((K,)) for the features X (K, d) and the ridge
    buffer W (M, d+1, d) (:class:`RidgeState`: ``A_m^{-1}`` over ``theta_m``), m = a when
    M = K (disjoint), else 0 (shared). Returns ``(best, ties)`` (:func:`~dpbandit.agents.draws.best_and_ties`).

    Compiled (numba), each sum in index order: ``u = A^{-1} x`` by :func:`rows_times`, then
    ``x^T u`` and ``x^T theta``."""
    K, d = X.shape
    M = W.shape[0]
    if W.shape[1:] != (d + 1, d) or (M != 1 and M != K) or out.shape[0] != K:
        raise ValueError("ucb_scores: W must be (M, d+1, d) with M = 1 or K for X (K, d), out (K,)")
    u = np.empty(d)
    for a in range(K):
        m = a if M > 1 else 0
        rows_times(W[m], X[a], u)
        quad = 0.0
        mean = 0.0
        for i in range(d):
            quad += u[i] * X[a, i]
            mean += W[m, d, i] * X[a, i]
        out[a] = mean + alpha * math.sqrt(quad)
    return best_and_ties(out)


@kernel
def ridge_means(W, X, out):
    """``out[a] = x_a^T theta_m`` ((K,)) for the features X (K, d) and the ridge buffer W (M, d+1, d), m = a when
    M = K, else 0 (greedy's scores: the sum of :func:`ucb_scores`' means, in index order); returns
    ``(best, ties)`` (:func:`~dpbandit.agents.draws.best_and_ties`)."""
    K, d = X.shape
    M = W.shape[0]
    if W.shape[1:] != (d + 1, d) or (M != 1 and M != K) or out.shape[0] != K:
        raise ValueError("ridge_means: W must be (M, d+1, d) with M = 1 or K for X (K, d), out (K,)")
    for a in range(K):
        m = a if M > 1 else 0
        mean = 0.0
        for i in range(d):
            mean += W[m, d, i] * X[a, i]
        out[a] = mean
    return best_and_ties(out)


@kernel
def play_ridge_block(W, B, C, obs, rewards, alpha, width, explore, explore_arms, u, arms):
    """Play the n rounds of a block (:mod:`dpbandit.envs.blocks`) with one ridge agent: round t plays
    ``explore_arms[t]`` where ``explore[t]`` (epsilon-greedy), else the largest of :func:`ucb_scores` (``width``:
    LinUCB with ``alpha``) or :func:`ridge_means` (greedy), ties by :func:`~dpbandit.agents.draws.pick_tie` with
    ``u[t]``; then :func:`sherman_morrison` with ``(obs[t, arm], rewards[t, arm])`` (only the played arm's reward is
    read) and ``C[m] += 1``: the single path's act and update. W (M, d+1, d), B (M, d), C (M,), obs (n, K, d),
    rewards (n, K), explore (n,) bool, explore_arms, u and arms (n,). Returns the number of rounds played: n, or the
    round whose scores hold a NaN (nothing played from it on; the caller raises the single path's error)."""
    n, K, d = obs.shape
    M = W.shape[0]
    if rewards.shape[0] != n or rewards.shape[1] != K or explore.shape[0] != n or explore_arms.shape[0] != n \
            or u.shape[0] != n or arms.shape[0] != n or B.shape[0] != M or C.shape[0] != M:
        raise ValueError("play_ridge_block: obs (n, K, d), rewards (n, K), explore, explore_arms, u, arms (n,), "
                         "W (M, d+1, d), B (M, d), C (M,)")
    scores = np.empty(K)
    for t in range(n):
        if explore[t]:
            arm = explore_arms[t]
        else:
            if width:
                best, ties = ucb_scores(W, obs[t], alpha, scores)
            else:
                best, ties = ridge_means(W, obs[t], scores)
            arm = pick_tie(scores, best, ties, u[t])
            if arm < 0:
                return t
        arms[t] = arm
        m = arm if M > 1 else 0
        sherman_morrison(W[m], B[m], obs[t, arm], rewards[t, arm])
        C[m] += 1
    return n


@kernel
def sherman_morrison_stack(W, B, C, obs, arms, rewards):
    """:func:`sherman_morrison` for each seed s of a stack: model m (``arms[s]`` when ``W`` (S, M, d+1, d) has
    M > 1, else 0) of ``W`` and ``B`` (S, M, d) gets ``(obs[s, arms[s]], rewards[s])`` and ``C[s, m] += 1``;
    ``obs`` (S, K, d). Returns False, changing nothing, if an arm is outside [0, K)."""
    S, K = W.shape[0], obs.shape[1]
    if obs.shape[0] != S or arms.shape[0] != S or rewards.shape[0] != S or B.shape[:2] != W.shape[:2] \
            or C.shape != W.shape[:2] or (W.shape[1] != 1 and W.shape[1] != K):
        raise ValueError("sherman_morrison_stack: W (S, M, d+1, d), B (S, M, d), C (S, M), obs (S, K, d), arms and "
                         "rewards (S,), M = 1 or K")
    for s in range(S):
        if arms[s] < 0 or arms[s] >= K:
            return False
    for s in range(S):
        m = arms[s] if W.shape[1] > 1 else 0
        sherman_morrison(W[s, m], B[s, m], obs[s, arms[s]], rewards[s])
        C[s, m] += 1
    return True


class RidgeState:
    """Ridge estimates of ``theta`` with Sherman–Morrison updates of the inverse Gram matrix.

    Internally every model is a slice ``W[m]`` of one buffer of shape (M, d+1, d), M = K (disjoint) or 1
    (shared): its first d rows hold ``A_m^{-1}`` and its last row ``theta_m``, so one matrix product with a feature
    vector yields both ``A^{-1} x`` and ``x^T theta``, and one rank-one update changes both.

    Parameters
    ----------
    n_arms, dim:
        K and d.
    structure:
        ``"disjoint"`` (one model per arm) or ``"shared"`` (one model for all arms).
    lam:
        Regulariser lam > 0 (the initial Gram matrix is ``lam * I``).

    Attributes
    ----------
    A_inv:
        Inverse Gram matrices, (K, d, d) disjoint or (d, d) shared (a view into ``W``).
    theta:
        Ridge estimates ``A^{-1} b``, (K, d) disjoint or (d,) shared (a view into ``W``).
    b:
        Response sums ``sum_s y_s x_s``, (K, d) disjoint or (d,) shared.
    counts:
        Number of samples per model, (K,) disjoint or (1,) shared.
    """

    def __init__(self, n_arms: int, dim: int, structure: str, lam: float = 1.0):
        self.n_arms = check_int("n_arms", n_arms, low=1)
        self.dim = check_int("dim", dim, low=1)
        self.structure = check_choice("structure", structure, STRUCTURES)
        self.lam = check_real("lam", lam, low=0.0, low_inclusive=False)
        self.disjoint = self.structure == "disjoint"
        n_models, d = (self.n_arms if self.disjoint else 1), self.dim
        self.W = np.empty((n_models, d + 1, d))
        self._b = np.empty((n_models, d))
        self.counts = np.empty(n_models, dtype=np.int64)
        self.reset()

    # Views without the model axis in the shared structure; properties (not stored views) so that copies and
    # pickles of the state stay consistent.
    @property
    def A_inv(self) -> np.ndarray:
        return self.W[:, : self.dim, :] if self.disjoint else self.W[0, : self.dim, :]

    @property
    def theta(self) -> np.ndarray:
        return self.W[:, self.dim, :] if self.disjoint else self.W[0, self.dim, :]

    @property
    def b(self) -> np.ndarray:
        return self._b if self.disjoint else self._b[0]

    def reset(self) -> None:
        """Back to the prior: ``A^{-1} = I / lam``, ``b = theta = 0``."""
        self.A_inv[...] = np.eye(self.dim) / self.lam
        self.theta.fill(0.0)
        self.b.fill(0.0)
        self.counts.fill(0)

    # ------------------------------------------------------------------ queries
    def products(self, observation: np.ndarray) -> np.ndarray:
        """``R[a] = (A_a^{-1} x_a, x_a^T theta_a)`` for every arm; (K, d) -> (K, d+1).

        ``R[:, :d]`` holds ``A^{-1} x_a`` (A^{-1} is symmetric) and ``R[:, d]`` the estimated means.
        """
        if self.disjoint:
            return np.matmul(self.W, observation[:, :, None])[:, :, 0]
        return observation @ self.W[0].T

    def predict(self, observation: np.ndarray) -> np.ndarray:
        """Estimated means ``x_a^T theta_hat_a`` (disjoint) or ``x_a^T theta_hat`` (shared); (K, d) -> (K,): greedy's
        scores, by the same kernel (:func:`ridge_means`)."""
        X = np.asarray(observation, dtype=float)
        out = np.empty(X.shape[0])
        ridge_means(self.W, X, out)
        return out

    def widths(self, observation: np.ndarray) -> np.ndarray:
        """Confidence widths ``||x_a||_{A^{-1}} = sqrt(x_a^T A^{-1} x_a)`` per arm; (K, d) -> (K,)."""
        U = self.products(observation)[:, : self.dim]
        return np.sqrt(np.einsum("kd,kd->k", U, observation))

    # ------------------------------------------------------------------ learning
    def update(self, x: np.ndarray, y: float, arm: int = 0) -> None:
        """Add the sample ``(x, y)`` to arm ``arm``'s model (the only model when shared); x has shape (d,).

        Sherman–Morrison on ``A^{-1}`` and the recursive-least-squares step on ``theta`` together, as one
        rank-one update of ``W`` (:func:`sherman_morrison`): O(d^2).
        """
        if not 0 <= arm < self.n_arms:
            raise ValueError(f"arm must be an integer in [0, {self.n_arms - 1}], got {arm!r}")
        x = np.asarray(x, dtype=float)
        if x.shape != (self.dim,):
            raise ValueError(f"x must have shape (d,) = ({self.dim},), got {x.shape}")
        m = arm if self.disjoint else 0
        sherman_morrison(self.W[m], self._b[m], x, float(y))
        self.counts[m] += 1

    def play_block(self, obs: np.ndarray, rewards: np.ndarray, u: np.ndarray, alpha: float | None = None,
                   explore: np.ndarray | None = None, explore_arms: np.ndarray | None = None) -> np.ndarray:
        """Play and learn n rounds of a block (:func:`play_ridge_block`): LinUCB with ``alpha``, greedy when
        ``alpha`` is None; ``explore`` / ``explore_arms`` (n,) the rounds epsilon-greedy explores and their arms.
        obs (n, K, d), rewards (n, K), tie uniforms u (n,); returns the arms (n,) intp."""
        n = obs.shape[0]
        if explore is None:
            explore, explore_arms = np.zeros(n, dtype=np.bool_), np.zeros(n, dtype=np.intp)
        arms = np.empty(n, dtype=np.intp)
        played = play_ridge_block(self.W, self._b, self.counts, obs, rewards, 0.0 if alpha is None else alpha,
                                  alpha is not None, explore, explore_arms, u, arms)
        if played < n:
            raise ValueError(f"cannot choose an arm: the scores contain NaN (round {played + 1} of the block)")
        return arms

    # ------------------------------------------------------------------ reference
    def gram(self) -> np.ndarray:
        """The Gram matrices ``A`` (K, d, d) or (d, d), rebuilt by inversion (for tests and inspection only)."""
        return np.linalg.inv(self.A_inv)
