"""Batched FLIPHAT and episodic private ridge: S seeds' episodic agents in lockstep (issue 15).

Both agents sit on :class:`~dpbandit.agents.episodic.EpisodicCurator`: per round they buffer the user's played row,
arm and clipped reward, and once per doubling episode each seed's curator releases (its own privacy stream, its own
ledger). What runs batched, per round:

* **Act**: every seed's action rule on its latest release, through the agents' own score functions
  (:func:`~dpbandit.agents.fliphat.greedy_scores`, :func:`~dpbandit.agents.episodic_ridge.ridge_scores`) on the
  releases stacked along a leading seed axis (FLIPHAT theta (S, K, d) or (S, d); ridge theta (S, M, d) and, with a
  UCB width, V^{-1} (S, M, d, d)). Their leading axes are independent and run the single path's per-row kernels
  (the same einsum contractions; for the shared structure, ``matmul`` against a (d, 1) column, which is the single
  path's matrix-vector product), so every seed's scores are bit for bit its single-seed scores
  (``tests/agents/test_batched.py``). Ties: :func:`~dpbandit.agents.batched.argmax_random_tie_rows` (each seed's
  exploration stream, consumed only on a tie).
* **Buffer**: the S played rows, arms and clipped rewards are written at once into stacked (S, n, d), (S, n) and
  (S, n) buffers whose slices *are* the curators' buffers (:meth:`EpisodicCurator.use_buffers`), after the checks
  of :meth:`EpisodicCurator.observe` done for all seeds at once; if any check fails, every seed's own
  :meth:`EpisodicCurator.checked_user` runs, so the error raised is the single path's. The reward clip
  (``min(max(y, low), high)``) is skipped when every reward is inside, else done with the same comparisons. Each
  curator then counts its user (:meth:`EpisodicCurator.served_together`), which absorbs a full chunk of every seed
  into that seed's sums, and at an episode's end runs every seed's own release.

On environments that hand out blocks, ``simulate_batch`` plays FLIPHAT, episodic ridge and episodic GLM by blocks
instead, seed after seed (:mod:`~dpbandit.agents.episodic_blocks`: the same frames); this form serves the others.

Per seed, once per episode: the release (noise from the seed's privacy stream; the ledger is the single-seed one)
and the re-stacking of the released parameters.

The curator / action-rule split of :class:`~dpbandit.agents.private.PrivateAgent` holds: the stacked buffers are the
curators' state (only they publish from them), and ``act`` reads only the stacked releases and the users' own rows.
Memory: the buffers hold S x (the curators' :attr:`~dpbandit.agents.episodic.EpisodicCurator.buffer_rows`) x d
floats, pages touched as they fill, like S single runs: a chunk of
:data:`~dpbandit.agents.episode_sums.CHUNK_ROWS` rows, absorbed per seed into that seed's episode sums by its own
curator (the single path's call on the same rows, so the sums are bit for bit the single run's), or the longest
episode for logistic FLIPHAT with M > 1.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Sequence

import numpy as np

from dpbandit.agents.batched import BATCHED_FORMS, argmax_random_tie_rows
from dpbandit.agents.episodic import EpisodicCurator
from dpbandit.agents.episodic_ridge import EpisodicRidge, ridge_scores
from dpbandit.agents.fliphat import FLIPHAT, greedy_scores

__all__ = ["BatchedEpisodic", "BatchedFLIPHAT", "BatchedEpisodicRidge"]

#: The batched context check passes a row whose norm is within this relative margin of the bound: the single path
#: refuses only beyond ``bound (1 + CONTEXT_RTOL)`` (:func:`~dpbandit.agents.private.check_context_bound`, 4e-10), so a batched
#: norm a few ulps off the single one cannot pass a row the single path refuses.
_FAST_CHECK_RTOL = 1e-12


class BatchedEpisodic(abc.ABC):
    """The episodic curators of S seeds buffered together (module docstring); subclasses stack the releases and
    score them (``_stack()``, ``_scores(obs)``)."""

    def __init__(self, agents: Sequence[FLIPHAT | EpisodicRidge]):
        self.agents = list(agents)
        self.curators = [a.curator for a in self.agents]
        self.rngs = [a.rng for a in self.agents]
        c = self.curators[0]
        S, n_max = len(self.agents), c.buffer_rows
        # calloc'd: pages are touched only as the episodes fill them, as the per-seed buffers they replace
        self.X, self.A, self.Y = np.zeros((S, n_max, c.dim)), np.zeros((S, n_max), dtype=np.int64), np.zeros((S, n_max))
        for s, cur in enumerate(self.curators):
            cur.use_buffers(self.X[s], self.A[s], self.Y[s])
        self.rows = np.arange(S)
        self.shape = (c.n_arms, c.dim)
        self.linf = c.context_norm == "linf"
        bound = c.context_bound * (1.0 + _FAST_CHECK_RTOL)
        self.fast_bound = bound if self.linf else bound * bound  # on max |x_i|, or on the largest ||x||_2^2
        self.low, self.high = c.clip.low, c.clip.high
        self.finite_clip = bool(np.isfinite(self.low) and np.isfinite(self.high))
        self.horizon = c.schedule.horizon
        self.releases = c.n_releases
        self._stack()

    @classmethod
    def build(cls, agents) -> "BatchedEpisodic | None":
        """The batched form, or None unless every seed's curator has the same schedule and is at the same user (as
        after ``reset``)."""
        c0 = agents[0].curator
        if any(a.curator.schedule != c0.schedule or a.curator.t != c0.t or a.curator.n_buffered != c0.n_buffered
               for a in agents):
            return None
        return cls(agents)

    @abc.abstractmethod
    def _stack(self) -> None:
        """Stack every seed's latest release (``agents[s]._release``) for :meth:`_scores`."""

    @abc.abstractmethod
    def _scores(self, obs: np.ndarray) -> np.ndarray:
        """The action rule's scores of every seed: obs (S, K, d) -> (S, K)."""

    def act(self, obs: np.ndarray) -> np.ndarray:
        return argmax_random_tie_rows(self._scores(obs), self.rngs)

    def update(self, obs: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        """:meth:`EpisodicCurator.observe` of every seed (module docstring)."""
        c0 = self.curators[0]
        i = c0.n_buffered
        if obs.shape[1:] != self.shape:
            self._check_each(obs, arms, rewards)
        X = obs[self.rows, arms]  # (S, d) played rows
        worst = np.abs(X).max() if self.linf else np.einsum("sd,sd->s", X, X).max()  # NaN if any row holds one
        inside = ((rewards >= self.low) & (rewards <= self.high)).all()  # False if any is NaN
        finite = (inside and self.finite_clip) or np.isfinite(rewards).all()
        if not (worst <= self.fast_bound and c0.t < self.horizon and finite):
            self._check_each(obs, arms, rewards)
        self.X[:, i] = X
        self.A[:, i] = arms
        if inside:  # RewardClip.clip is the identity
            self.Y[:, i] = rewards
        else:  # RewardClip.clip, min(max(y, low), high), elementwise with the same comparisons
            self.Y[:, i] = np.where(rewards < self.low, self.low, np.where(rewards > self.high, self.high, rewards))
        EpisodicCurator.served_together(self.curators)
        if c0.n_releases != self.releases:  # an episode ended: every seed's curator released (lockstep schedules)
            self.releases = c0.n_releases
            for a, cur in zip(self.agents, self.curators):
                a._release = cur.release()  # as PrivateAgent.update
            self._stack()

    def _check_each(self, obs: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        for s, cur in enumerate(self.curators):  # the single path's checks: raises its error
            cur.checked_user(obs[s], arms[s], rewards[s])


class BatchedFLIPHAT(BatchedEpisodic):
    """FLIPHAT over S seeds: greedy on the stacked released theta, (S, K, d) disjoint or (S, d) shared."""

    def _stack(self) -> None:
        self.theta = np.stack([a._release.theta for a in self.agents])

    def _scores(self, obs: np.ndarray) -> np.ndarray:
        return greedy_scores(self.theta, obs)


class BatchedEpisodicRidge(BatchedEpisodic):
    """Episodic private ridge over S seeds: greedy (plus the UCB width) on the stacked theta_hat (S, M, d) and
    V^{-1} (S, M, d, d). The UCB and Thompson rules (``rule != "greedy"``) have none: their seeds run one by one."""

    @classmethod
    def build(cls, agents) -> "BatchedEpisodicRidge | None":
        if agents[0].cal.rule != "greedy" or math.isfinite(agents[0].cal.row_clip):  # rows clipped in the rule
            return None
        return super().build(agents)

    def _stack(self) -> None:
        releases = [a._release for a in self.agents]
        r0 = releases[0]
        self.shared, self.ucb_alpha = r0.shared, r0.ucb_alpha
        self.theta = np.stack([r.theta for r in releases])
        self.v_inv = np.stack([r.v_inv for r in releases]) if self.ucb_alpha > 0 else None

    def _scores(self, obs: np.ndarray) -> np.ndarray:
        return ridge_scores(self.theta, self.v_inv, self.ucb_alpha, self.shared, obs)


BATCHED_FORMS[FLIPHAT] = BatchedFLIPHAT.build
BATCHED_FORMS[EpisodicRidge] = BatchedEpisodicRidge.build
