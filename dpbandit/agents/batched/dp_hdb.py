"""Batched DP-HDB: S seeds' per-arm DP-POFW learners stacked into (S, K, 2d) arrays and advanced in lockstep
(issue 15). On the GLM bandits, which hand out blocks of rounds, a lockstep unit plays its seeds one after the other
through :meth:`~dpbandit.agents.dp_hdb.DPHDB.play_block` instead (issue 25: every seed's work is its own, and the
single seed runs at its compiled floor, ``benchmarks/dphdb_benchmark.py``); this form serves the environments
without blocks (own data, third-party environments).

Each seed's :class:`~dpbandit.optim.pofw.DPPOFWBatch` is re-pointed at its slices of the stacked state (the score
rows ``[-S, S]`` (S, K, 2d), the vertex sums ``V`` (S, K, d), the envelopes ``max_j |S_ij|`` (S, K) and the last
vertices (S, K)), so the agent objects stay the live state and any seed can take the single path at any round.
Per round, batched:

* **Act** (:meth:`DPHDB.action_rule` of every seed): the warm-up's round robin; afterwards the single path's
  compiled :func:`~dpbandit.agents.dp_hdb.greedy_index` of every seed in one kernel call over the stack, so every
  score is bit for bit the single one (``tests/agents/test_batched.py``); ``theta = V/(t+1)`` is divided inside
  the kernel, the release's elementwise quotients. Ties: :func:`~dpbandit.agents.batched.choose_rows` (each
  seed's exploration stream, consumed only on a tie).
* **Curator** (:meth:`HDBCurator.observe` and :meth:`DPPOFWBatch.update_one` of every seed): the checks done for all
  seeds at once (context bound with a margin that only passes rows the single check passes, ``||x||_inf`` against
  the feature bound, reward clip ``min(max(y, low), high)`` by the same comparisons, horizon); the played learner's
  ``V_a . x`` as a stacked (1, d) x (d, 1) ``matmul`` (the single path's vector product, per item); the clamped
  gradient coefficients elementwise (Python's ``min``/``max`` replayed by ``np.where`` with the same comparisons);
  the score-row update and its envelope; the vertex moves. Any round a fast check fails (a context over the bound,
  a zero context, a NaN reward, the horizon, an arm out of range) runs every seed's own ``agent.update``: the single
  path, which raises its error or does its clip.
* **Selections**: every random number comes from seed s's privacy stream in the single-seed order: each seed's
  engine hands out its step's block draws (:meth:`~dpbandit.optim.pofw.DPPOFWBatch.selection_draws`: the first
  rejection round's proposals and uniforms, the inverse CDF's uniforms), ``laplace`` per seed for report-noisy-max,
  and per-seed ``integers`` then ``random`` calls for a further rejection round; the array work on them runs once
  over all seeds' rows: the inverse CDF's weights, ``exp`` and cumulative sums with the single path's elementwise
  operations and same-axis reductions, and the rejection round by the single path's compiled
  :func:`~dpbandit.optim.pofw_kernels.first_accepted` over the rows ``s K + k`` of the stack, hence the same bits.

The curator / action-rule split of :class:`~dpbandit.agents.private.PrivateAgent` holds: the stacked state belongs
to the curators, and ``act`` reads only what a release holds (``V/(t+1)`` and the frozen forced-sample estimators)
and the users' own rows. Each seed's ``agent._release`` is materialised at the horizon (and by every single-path
round); privacy ledgers are untouched (each seed's calibration is its own, identical across seeds).

Measured before the GLM bandits played DP-HDB by blocks (16 seeds against one, interleaved in one run; ``python
benchmarks/batch_benchmark.py --agents dp_hdb --dims 1000`` and ``--agents dp_hdb --env
dpbandit/HanFigure51-K2-v0``): 1.3-1.5x the seed-rounds/s on the GLM bandit with K = 10, d = 1000, against a printed
bound of 1.7-2.05, and 1.8-2.2x on ``HanFigure51-K2`` (d = 50, K = 2). What stays per seed is the environment's
contexts (21-30 us per seed and round at d = 1000), the selection's draws (5-8 us, mostly ``integers``) and the
compiled kernels, so lockstep pays at both sizes and the form never declines.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpbandit.agents.batched import BATCHED_FORMS, choose_rows
from dpbandit.agents.dp_hdb import DPHDB, greedy_index
from dpbandit.compiled import kernel
from dpbandit.optim import pofw, pofw_kernels

__all__ = ["BatchedDPHDB"]

#: The batched context check passes a row whose norm is within this relative margin of the bound (the single path
#: refuses only beyond ``bound (1 + CONTEXT_RTOL)``, 4e-10), so a batched norm a few ulps off cannot pass a row the single
#: refuses.
_FAST_CHECK_RTOL = 1e-12


class BatchedDPHDB:
    """DP-HDB over S seeds (module docstring)."""

    def __init__(self, agents: Sequence[DPHDB]):
        self.agents = list(agents)
        self.curators = [a.curator for a in self.agents]
        self.engines = [c.learners for c in self.curators]
        self.rngs = [a.rng for a in self.agents]  # exploration streams (ties)
        self.prngs = [e.rng for e in self.engines]  # privacy streams (selections)
        a0, e0 = self.agents[0], self.engines[0]
        S, K, d = len(self.agents), e0.n_learners, e0.dim
        self.S, self.K, self.d = S, K, d
        self.scores = np.stack([e._scores for e in self.engines])  # (S, K, 2d)
        self.V = np.stack([e.V for e in self.engines])  # (S, K, d)
        self.s_inf = np.stack([e._s_inf for e in self.engines])  # (S, K)
        self.last_j = np.stack([e._last_j for e in self.engines])
        self.last_value = np.stack([e._last_value for e in self.engines])
        for s, e in enumerate(self.engines):
            e._scores, e.V, e._s_inf = self.scores[s], self.V[s], self.s_inf[s]
            self._bind_last(s)
        self.rows = np.arange(S)
        self.cal = e0.calibration
        self.loss, self.lipschitz, self.feature_bound = e0.loss, self.cal.lipschitz, e0.feature_bound
        c = a0.constants
        self.linf = c.context_norm == "linf"
        bound = c.context_bound * (1.0 + _FAST_CHECK_RTOL)
        self.fast_bound = bound if self.linf else bound * bound  # on max |x_i|, or on the largest ||x||_2^2
        self.low, self.high = a0.reward_range
        self.h, self.logistic, self.warmup = a0.h, c.link == "logistic", a0.warmup_rounds
        self.t = e0.t
        self._stack_forced()
        # the action rule's work arrays, refilled every round
        self.indices, self.best, self.ties = np.empty((S, K)), np.empty(S, dtype=np.intp), np.empty(S, dtype=np.intp)

    @classmethod
    def build(cls, agents) -> "BatchedDPHDB | None":
        """The batched form, or None unless every seed's agent has the same hyperparameters and calibration and is
        at the same round (as after ``reset``)."""
        a0 = agents[0]
        key = (a0.constants, a0.warmup_rounds, a0.h, a0.reward_range, a0.curator.learners.calibration,
               a0.curator.round, a0.curator.learners.t)
        if any((a.constants, a.warmup_rounds, a.h, a.reward_range, a.curator.learners.calibration, a.curator.round,
                a.curator.learners.t) != key for a in agents):
            return None
        return cls(agents)

    def _bind_last(self, s: int) -> None:
        e = self.engines[s]
        self.last_j[s], self.last_value[s] = e._last_j, e._last_value
        e._last_j, e._last_value = self.last_j[s], self.last_value[s]

    def _stack_forced(self) -> None:
        forced = [c._theta_forced for c in self.curators]
        self.theta_forced = None if forced[0] is None else np.stack(forced)

    # ------------------------------------------------------------------ action rule
    def act(self, obs: np.ndarray) -> np.ndarray:
        if self.theta_forced is None:  # warm-up: round robin
            return np.full(self.S, self.t % self.K, dtype=np.intp)
        X = np.asarray(obs, dtype=float)
        if X.shape != self.V.shape:  # the single path's error
            return np.array([DPHDB.action_rule(a.curator.release(), x, a.rng) for a, x in zip(self.agents, X)])
        # every seed's release theta = V/(t+1), divided inside the kernel (the same quotients)
        _greedy_indices(X, self.theta_forced, self.V, self.t + 1.0, self.h, self.logistic, self.indices, self.best,
                        self.ties)
        return choose_rows(self.indices, self.best, self.ties, self.rngs)

    # ------------------------------------------------------------------ curator
    def update(self, obs: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        K, d, rows = self.K, self.d, self.rows
        t = self.t + 1
        ok = obs.shape[1:] == (K, d) and t <= self.cal.horizon and arms.min() >= 0 and arms.max() < K
        if ok:
            X = obs[rows, arms]  # (S, d) played rows
            x_inf = np.abs(X).max(axis=1)
            worst = x_inf.max() if self.linf else np.einsum("sd,sd->s", X, X).max()  # NaN if a row holds one
            y = np.where(self.low > rewards, self.low, rewards)  # min(max(y, low), high) with its comparisons
            y = np.where(self.high < y, self.high, y)
            ok = (worst <= self.fast_bound and x_inf.max() <= self.feature_bound and x_inf.min() > 0.0
                  and np.isfinite(y).all())
        if not ok:
            self._single_path(obs, arms, rewards)
            return
        self._gradient_step(X, x_inf, arms, y, t)
        self._select_and_move(t)
        self._advance(t)

    def _gradient_step(self, X, x_inf, arms, y, t) -> None:
        """:meth:`DPPOFWBatch.update_one`'s O(d) step of every seed's played learner (elementwise, same bits)."""
        rows = self.rows
        vx = np.matmul(self.V[rows, arms][:, None, :], X[:, :, None])[:, 0, 0]
        if t > 1:
            z_prev = (vx - self.last_value[rows, arms] * X[rows, self.last_j[rows, arms]]) / (t - 1)
        else:
            z_prev = np.zeros_like(vx)
        limit = self.lipschitz / x_inf
        now, prev = self._clamp(self.loss.dphi(vx / t, y), limit), self._clamp(self.loss.dphi(z_prev, y), limit)
        _add_gradients(self.scores, arms, (t + 1.0) * now - t * prev, X, self.s_inf)

    @staticmethod
    def _clamp(v: np.ndarray, limit: np.ndarray) -> np.ndarray:
        v = np.where(-limit > v, -limit, v)  # max(v, -limit)
        return np.where(limit < v, limit, v)  # min(., limit)

    def _advance(self, t: int) -> None:
        self.t = t
        for e, c in zip(self.engines, self.curators):
            e.t = c.round = t
        if t == self.warmup:
            for c in self.curators:
                c._theta_forced = c.learners.predict()
            self._stack_forced()
        if t == self.cal.horizon:
            self._materialise_releases()

    def _materialise_releases(self) -> None:
        for a in self.agents:
            a._release = a.curator.release()

    def _single_path(self, obs, arms, rewards) -> None:
        """Every seed's own ``agent.update`` (raises the single path's error); then re-stack what it rebinds."""
        for s, a in enumerate(self.agents):
            a.update(obs[s], arms[s], rewards[s], {})
            self._bind_last(s)
        self.t = self.engines[0].t
        self._stack_forced()

    # ------------------------------------------------------------------ selections
    def _select_and_move(self, t: int) -> None:
        """:meth:`DPPOFWBatch._select_and_move` of every seed."""
        cal = self.cal
        if cal.noise_off:
            k = self._inverse_cdf((self.scores == self.s_inf[..., None]).astype(float), self._draws(t)[2])
        else:
            a = cal.radius / ((t + 1.0) * cal.scale(t))
            k = self._select_laplace(a) if cal.form == "laplace" else self._select_exponential(a, self._draws(t))
        # the single path's kernel, on the rows s K + k of the stack
        pofw_kernels.move_to_vertices(self.V.reshape(-1, self.d), k.reshape(-1), cal.radius,
                                      self.last_j.reshape(-1), self.last_value.reshape(-1))

    def _draws(self, t: int) -> tuple:
        """Every seed's :meth:`DPPOFWBatch.selection_draws` of step t, stacked: proposals and their uniforms
        (S, K, B) (None with the inverse CDF only), inverse-CDF uniforms (S, K)."""
        k, u, v = zip(*[e.selection_draws(t) for e in self.engines])
        return (None if k[0] is None else np.stack(k)), (None if u[0] is None else np.stack(u)), np.stack(v)

    @staticmethod
    def _inverse_cdf(weights: np.ndarray, u: np.ndarray) -> np.ndarray:
        """:meth:`DPPOFWBatch._inverse_cdf` of rows of several seeds: ``weights`` (..., 2d), uniforms ``u`` (...)."""
        cdf = np.cumsum(weights, axis=-1)
        return np.minimum((cdf <= (u * cdf[..., -1])[..., None]).sum(axis=-1), weights.shape[-1] - 1)

    def _select_laplace(self, a: float) -> np.ndarray:
        shape = (self.K, 2 * self.d)
        noise = np.stack([rng.laplace(0.0, 1.0, shape) for rng in self.prngs])
        return np.argmax(a * self.scores + noise, axis=2)

    def _select_exponential(self, a: float, draws: tuple) -> np.ndarray:
        envelope = a * self.s_inf  # (S, K)
        k, u, v = draws
        if k is None:  # 2d <= 2B: the inverse CDF for every row
            return self._inverse_cdf(np.exp(a * self.scores - envelope[..., None]), v)
        out = np.empty((self.S, self.K), dtype=np.int64)
        near_uniform = 2.0 * envelope <= pofw._REJECTION_SPAN
        if not near_uniform.all():
            ss, kk = np.nonzero(~near_uniform)
            out[ss, kk] = self._inverse_cdf(np.exp(a * self.scores[ss, kk] - envelope[ss, kk, None]), v[ss, kk])
        ss, kk = np.nonzero(near_uniform)  # seed-major, arms ascending: each seed's flatnonzero order
        k, u = k[ss, kk], u[ss, kk]
        while ss.size:
            ss, kk = self._rejection_round(a, envelope, ss, kk, k, u, out)
            if ss.size:
                k, u = self._further_proposals(ss)
        return out

    def _further_proposals(self, ss: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A further rejection round's proposals and uniforms for the pending rows of seeds ``ss`` (seed-major):
        each seed's ``integers`` then ``random`` call of :meth:`DPPOFWBatch._select_exponential`."""
        batch = pofw._REJECTION_BATCH
        proposals, u = [], np.empty((ss.size, batch))
        lo = 0
        for s, n in enumerate(np.bincount(ss, minlength=self.S).tolist()):
            if n:
                rng = self.prngs[s]
                proposals.append(rng.integers(0, 2 * self.d, size=n * batch))  # the (n, batch) draws, flat
                rng.random(out=u[lo: lo + n])
                lo += n
        return (np.concatenate(proposals) if len(proposals) > 1 else proposals[0]).reshape(ss.size, batch), u

    def _rejection_round(self, a, envelope, ss, kk, k, u, out) -> tuple[np.ndarray, np.ndarray]:
        """One round of proposals ``k`` with uniforms ``u`` (R, B) for the pending rows ``(ss, kk)``; writes the
        accepted vertices into ``out`` and returns the rows still pending."""
        flat = out.reshape(-1)  # the rows (seed, arm) of the stack as learners s K + k: the single path's kernel
        pending = pofw_kernels.first_accepted(self.scores.reshape(-1, 2 * self.d), ss * self.K + kk, k, u, a,
                                              envelope.reshape(-1), flat)
        return np.divmod(pending, self.K)


@kernel
def _greedy_indices(X, theta_forced, V, divisor, h, logistic, out, best, ties):
    """:func:`~dpbandit.agents.dp_hdb.greedy_index` of every seed: X, theta_forced, V (S, K, d), out (S, K);
    each seed's ``(best, ties)`` into ``best`` and ``ties`` (S,)."""
    if out.shape[0] != X.shape[0] or best.shape[0] != X.shape[0] or ties.shape[0] != X.shape[0]:
        raise ValueError("_greedy_indices: X, out, best and ties must have one seed axis S")
    for s in range(X.shape[0]):
        best[s], ties[s] = greedy_index(X[s], theta_forced[s], V[s], divisor, h, logistic, out[s])


@kernel
def _add_gradients(scores, arms, coef, X, s_inf):
    """:func:`~dpbandit.optim.pofw_kernels.add_gradient` of every seed's played learner: scores (S, K, 2d), arms (S,),
    coefficients (S,), contexts X (S, d), envelopes s_inf (S, K)."""
    for s in range(X.shape[0]):
        s_inf[s, arms[s]] = pofw_kernels.add_gradient(scores[s, arms[s]], coef[s], X[s])


BATCHED_FORMS[DPHDB] = BatchedDPHDB.build
