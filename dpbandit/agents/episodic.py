"""Episodic private agents: public episodes, each user in one release (``spec/episodic-private-agents.md``; user
guide ``docs/episodic-agents.md``).

**Schedule** (:class:`EpisodeSchedule`, public and data-independent): users t = 0, 1, ..., T-1 are split into
episodes ell = 0, 1, ... of ``first * r**ell`` users (growth r, an integer >= 1, default 2: doubling; the last one
truncated at the horizon T); with r = 2 episode ell holds users ``first (2**ell - 1) <= t < first (2**(ell+1) - 1)``.
A noise scale n* caps an episode that starts after s users at ``ceil(sqrt(2 s n*))`` users (never below ``first``):
the agents that combine their releases derive n* from their public noise scales (``docs/episodic-agents.md`` §6.5),
so the episodes shorten as the noise falls, down to a release after every user with the noise off.

**Curator** (:class:`EpisodicCurator`, the data-touching half of a :class:`~dpbandit.agents.private.PrivateAgent`):
buffers the current episode's served users — the played feature row ``x = observation[arm]`` (d,) (for the disjoint
structure every row is the context), the arm, and the reward clipped by
:func:`~dpbandit.agents.private.reward_clip_range` — after checking the public context bound. When an episode ends it
calls the subclass's mechanisms once, ``_publish(X (n, d), arms (n,), rewards (n,)) -> release``, stores the
read-only release and then **forgets** the episode: every user enters exactly one release.

**Memory.** A curator whose release is a function of per-episode sums (:mod:`dpbandit.agents.episode_sums`) buffers
``chunk`` users at most: each full chunk goes to the subclass's ``_absorb(X, arms, rewards)`` (which adds it to the
episode's sums) and is wiped, and ``_publish`` gets the episode's last rows, so memory is O(chunk d) plus the sums
instead of O(episode d). Without ``chunk`` the buffer holds the longest episode and ``_publish`` gets every row.

**Privacy** (replace-one neighbours; privacy unit: one user = one round's context and reward). If each release is
rho-zCDP (or a Gaussian mechanism of multiplier z) in the users of its own episode, the release stream is rho-zCDP
in every user's data: a user's data enter one release directly (**parallel composition** over episodes), and later
releases depend on it only through earlier releases, which they may use as public inputs (post-processing; this holds
when episodes are formed adaptively, because the schedule is fixed in advance). The mechanisms of one episode compose
sequentially inside it. The ledger records each per-episode mechanism as a *parallel* event (``count`` = number of
releases, value = the per-release cost; :class:`~dpbandit.privacy.report.PrivacyEvent`), which every accounting
charges once. Actions use only the latest release and the user's own features, so the actions shown to the other
users are (epsilon, delta)-DP in a user's data: joint DP by the billboard lemma (``spec/private-oco-learners.md`` §7).
"""

from __future__ import annotations

import abc
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpbandit.agents.baselines import check_arm
from dpbandit.agents.episode_schedule import EpisodeSchedule
from dpbandit.agents.private import Curator, RewardClip, check_context_bound
from dpbandit.envs.constants import BanditConstants
from dpbandit.privacy.calibrate import gaussian_sigma_analytic, zcdp_rho_for
from dpbandit.privacy.ledger import PrivacyLedger
from dpbandit.validation import check_choice, check_delta, check_epsilon, check_int, check_real

__all__ = ["EpisodeSchedule", "EpisodicBudget", "EpisodicCurator", "default_first_episode"]


#: The run check of :meth:`EpisodicCurator.observe_rows` passes a row whose norm is within this relative margin of
#: the bound: :meth:`EpisodicCurator.checked_user` refuses only beyond ``bound (1 + CONTEXT_RTOL)`` (4e-10), so a norm
#: summed in another order (a few ulps off) cannot pass a row it refuses.
FAST_CHECK_RTOL = 1e-12


def _one_row(x: np.ndarray, arm: int, n_arms: int) -> np.ndarray:
    """A (K, d) observation whose row ``arm`` is x (for :meth:`EpisodicCurator.checked_user` on a played row)."""
    obs = np.zeros((n_arms, x.shape[0]))
    obs[arm] = x
    return obs


def default_first_episode(n_arms: int, dim: int, structure: str) -> int:
    """A public default for the first episode's length: the number of users a least-squares fit needs to be
    determined without noise — ``d`` for the shared structure (one d x d Gram matrix) and ``K d`` for the disjoint one
    (K per-arm Gram matrices, each fed by about 1/K of the users under near-uniform early play). Shorter first episodes
    only add releases fitted on fewer users than unknowns; longer ones delay the first informed release."""
    n_arms = check_int("n_arms", n_arms, low=1)
    dim = check_int("dim", dim, low=1)
    structure = check_choice("structure", structure, ("shared", "disjoint"))
    return dim * (n_arms if structure == "disjoint" else 1)


@dataclass(frozen=True)
class EpisodicBudget:
    """The per-release budget of an episodic agent. Every release may spend the whole (epsilon, delta): releases
    compose in parallel (module docstring).

    ``rho``: the largest rho whose Canonne–Kamath–Steinke conversion gives (epsilon, delta) (``spec/errata.md`` E1;
    :func:`~dpbandit.privacy.calibrate.zcdp_rho_for`), for mechanisms accounted in zCDP. ``mu``: the analytic-Gaussian
    mu* = 1/sigma(epsilon, delta, 1) (Balle & Wang 2018), for a per-release mechanism that is one Gaussian mechanism
    (its whitened sensitivity may be mu*). ``epsilon = inf``: noise off, ``rho = mu = inf``, guarantee "none".
    """

    epsilon: float
    delta: float
    rho: float
    mu: float

    @classmethod
    def build(cls, constants: BanditConstants, epsilon: float, delta: float | None = None) -> EpisodicBudget:
        """Validated budget; ``delta`` defaults to 1/T (then T >= 2 is required)."""
        if not isinstance(constants, BanditConstants):
            raise TypeError(f"constants must be a BanditConstants, got {type(constants).__name__}")
        epsilon = check_epsilon(epsilon, allow_inf=True)
        if delta is None:
            if constants.horizon < 2:
                raise ValueError("delta defaults to 1/T, which is not in (0, 1) for T = 1; pass delta")
            delta = 1.0 / constants.horizon
        delta = check_delta(delta, allow_zero=False)
        if math.isinf(epsilon):
            return cls(epsilon, delta, math.inf, math.inf)
        return cls(epsilon, delta, zcdp_rho_for(epsilon, delta), 1.0 / gaussian_sigma_analytic(epsilon, delta, 1.0))

    @property
    def noise_off(self) -> bool:
        return math.isinf(self.epsilon)


class EpisodicCurator(Curator):
    """Buffers one episode, publishes once at its end through the subclass's mechanisms, forgets (module docstring).

    Subclasses implement:

    * ``_publish(X, arms, rewards) -> release``: the mechanisms, on the episode's ``X`` (n, d) played rows,
      ``arms`` (n,) int and clipped ``rewards`` (n,) not yet absorbed (all of the episode's without ``chunk``); the
      arrays are read-only views valid only during the call (the buffer is wiped afterwards). The release must hold
      read-only arrays it owns, and the subclass forgets the episode's sums.
    * with ``chunk``, ``_absorb(X, arms, rewards)``: add a full chunk of the episode's rows (read-only views valid
      only during the call) to the episode's sums.
    * ``_initial_release() -> release``: the data-independent release used before the first episode ends.
    * ``_record_release_cost(ledger, count)``: add the per-release mechanisms to ``ledger`` as parallel events of
      ``count`` releases (``parallel=True``), or a non-private event when the noise is off.
    * ``sensitivity_assumption`` (str) and optionally ``_report_note()`` for the report.

    A subclass sets its own attributes before calling ``super().__init__`` (which calls ``_initial_release``).

    Args:
        schedule: the :class:`EpisodeSchedule` (its horizon is the environment's T).
        budget: the :class:`EpisodicBudget`.
        n_arms, dim: K and d of the (K, d) observations.
        context_norm, context_bound: the public bound every played row must satisfy (checked; a row beyond it raises).
        clip: the :class:`~dpbandit.agents.private.RewardClip` applied to every reward.
        chunk: users buffered before ``_absorb`` (>= 1; the buffer holds min(chunk, longest episode)), or None (the
            default): the buffer holds the longest episode and ``_absorb`` is never called.
    """

    def __init__(self, schedule: EpisodeSchedule, budget: EpisodicBudget, n_arms: int, dim: int,
                 context_norm: str, context_bound: float, clip: RewardClip, chunk: int | None = None) -> None:
        if not isinstance(schedule, EpisodeSchedule):
            raise TypeError(f"schedule must be an EpisodeSchedule, got {type(schedule).__name__}")
        if not isinstance(budget, EpisodicBudget):
            raise TypeError(f"budget must be an EpisodicBudget, got {type(budget).__name__}")
        if not isinstance(clip, RewardClip):
            raise TypeError(f"clip must be a RewardClip, got {type(clip).__name__}")
        self.schedule, self.budget, self.clip = schedule, budget, clip
        self.n_arms = check_int("n_arms", n_arms, low=1)
        self.dim = check_int("dim", dim, low=1)
        self.context_norm = check_choice("context_norm", context_norm, ("l2", "linf"))
        self.context_bound = check_real("context_bound", context_bound, low=0.0, low_inclusive=False)
        size = schedule.max_length if chunk is None else min(check_int("chunk", chunk, low=1), schedule.max_length)
        self._X = np.zeros((size, self.dim))
        self._arms = np.zeros(size, dtype=np.int64)
        self._rewards = np.zeros(size)
        self._n = 0  # users buffered in the current episode
        self._t = 0  # users served so far
        self._episode = 0
        self._next_end = schedule.end(0)  # the user count at which the current episode ends
        self.n_releases = 0
        self._release = self._initial_release()

    # -- subclass hooks -------------------------------------------------------------------------------------------

    @abc.abstractmethod
    def _publish(self, X: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> Any:
        """The release of one episode's users (class docstring)."""

    @abc.abstractmethod
    def _initial_release(self) -> Any:
        """The data-independent release before the first episode ends."""

    @abc.abstractmethod
    def _record_release_cost(self, ledger: PrivacyLedger, count: int) -> None:
        """Record the per-release mechanisms as parallel events of ``count`` releases (class docstring)."""

    @property
    @abc.abstractmethod
    def sensitivity_assumption(self) -> str:
        """What the per-release sensitivities rest on (public bounds), for the report."""

    def _absorb(self, X: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        """Add a full chunk of the episode's rows to its sums (class docstring; needed only with ``chunk``)."""
        raise NotImplementedError(f"{type(self).__name__} buffers whole episodes (chunk=None)")

    def _report_note(self) -> str:
        return ""

    # -- the curator ----------------------------------------------------------------------------------------------

    @property
    def t(self) -> int:
        """Users served so far."""
        return self._t

    @property
    def episode(self) -> int:
        """The current episode (the one the next user joins)."""
        return self._episode

    def observe(self, observation: np.ndarray, arm: int, reward: float) -> None:
        x, arm, reward = self.checked_user(observation, arm, reward)
        i = self._n
        self._X[i] = x
        self._arms[i] = arm
        self._rewards[i] = reward
        self.served()

    def served(self) -> None:
        """Count one more user, whose checked row, arm and clipped reward are at index ``n_buffered`` of the
        buffers (written by :meth:`observe`, or by a batched form for S seeds at once); publish if the episode is
        complete."""
        self._n += 1
        self._t += 1
        if self._t == self._next_end:
            self._end_episode()
        elif self._n == len(self._arms):
            self._absorb_chunk()

    @staticmethod
    def served_together(curators: Sequence[EpisodicCurator]) -> None:
        """:meth:`served` of curators in lockstep (one schedule, all at the same user: the seeds of a batched form),
        the counts in one loop, then every curator's release if the episode is complete."""
        for c in curators:
            c._n += 1
            c._t += 1
        if curators[0]._t == curators[0]._next_end:
            for c in curators:
                c._end_episode()
        elif curators[0]._n == len(curators[0]._arms):
            for c in curators:
                c._absorb_chunk()

    #: Whether the previous release is dropped before ``_publish`` computes the next (False for a curator whose next
    #: release starts from the previous one: FLIPHAT's noise-off warm start).
    drops_release = True

    def rounds_to_event(self) -> int:
        """Users until the next absorbed chunk or release (>= 1): :meth:`observe_rows` takes at most this many."""
        return min(self._next_end - self._t, len(self._arms) - self._n)

    def observe_rows(self, X: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        """:meth:`observe` of m users at once, m <= :meth:`rounds_to_event`: their played rows ``X`` (m, d) (row
        ``observation[arm]`` of each), ``arms`` (m,) int in [0, K) and ``rewards`` (m,) float64. The same checks,
        buffer and release: the checks run on the whole run (a row beyond the bound by more than
        :data:`FAST_CHECK_RTOL`, or NaN, is checked as :meth:`checked_user` checks it), the clip
        ``min(max(y, low), high)`` by the same comparisons; if a check fails, the error raised is :meth:`observe`'s
        (the run's earlier users are then not buffered: the run is abandoned)."""
        m = len(arms)
        if not 1 <= m <= self.rounds_to_event():
            raise ValueError(f"observe_rows takes 1 to {self.rounds_to_event()} users here, got {m}")
        near = np.flatnonzero(~self._fast_check(X)) if np.isfinite(rewards).all() else range(m)
        low, high = self.clip.low, self.clip.high
        for i in near:  # observe's own checks: raises its error (a row near the bound passes if it is inside)
            self.checked_user(_one_row(X[i], int(arms[i]), self.n_arms), int(arms[i]), float(rewards[i]))
        i = self._n
        self._X[i: i + m] = X
        self._arms[i: i + m] = arms
        self._rewards[i: i + m] = np.where(rewards < low, low, np.where(rewards > high, high, rewards))
        self._n += m - 1
        self._t += m - 1
        self.served()

    def inside(self, obs: np.ndarray, rewards: np.ndarray) -> bool:
        """Whether every row of the observations (n, K, d) and every reward (n, K) passes :meth:`checked_user`'s
        checks (its fast bound with :data:`FAST_CHECK_RTOL`), and the n users fit in the horizon: then so does
        whichever arm is played."""
        return bool(self._fast_check(obs).all() and np.isfinite(rewards).all()
                    and self._t + len(obs) <= self.schedule.horizon)

    def _fast_check(self, X: np.ndarray) -> np.ndarray:
        """Which rows of X (..., d) are within the public bound up to :data:`FAST_CHECK_RTOL` (NaN rows are not)."""
        fast = self.context_bound * (1.0 + FAST_CHECK_RTOL)
        if self.context_norm == "linf":
            return np.abs(X).max(axis=-1) <= fast
        return np.einsum("...d,...d->...", X, X) <= fast * fast

    @property
    def n_buffered(self) -> int:
        """Users buffered in the current episode (the index the next user's row goes to)."""
        return self._n

    @property
    def buffer_rows(self) -> int:
        """Users the buffer holds: min(chunk, longest episode), or the longest episode without ``chunk``."""
        return len(self._arms)

    def use_buffers(self, X: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        """Keep the episode buffers in the given arrays (shapes (n, d), (n,) int64, (n,) float64 with n =
        :attr:`buffer_rows`, e.g. one seed's slices of stacked buffers): the users buffered so far are copied
        there."""
        if X.shape != self._X.shape or arms.shape != self._arms.shape or rewards.shape != self._rewards.shape:
            raise ValueError(f"buffers must have shapes {self._X.shape}, {self._arms.shape}, {self._rewards.shape}")
        if X.dtype != self._X.dtype or arms.dtype != self._arms.dtype or rewards.dtype != self._rewards.dtype:
            raise TypeError("buffers must be float64, int64 and float64 arrays")
        n = self._n
        X[:n], arms[:n], rewards[:n] = self._X[:n], self._arms[:n], self._rewards[:n]
        self._X, self._arms, self._rewards = X, arms, rewards

    def checked_user(self, observation: np.ndarray, arm: int, reward: float) -> tuple[np.ndarray, int, float]:
        """The played row ``observation[arm]`` (d,), the arm and the clipped reward of the next user, after every
        check of :meth:`observe` (shape, arm, finite reward, the public context bound, the horizon); raises as it
        does."""
        obs = np.asarray(observation, dtype=float)
        if obs.shape != (self.n_arms, self.dim):
            raise ValueError(f"observation must have shape (K, d) = {(self.n_arms, self.dim)}, got {obs.shape}")
        arm = check_arm(arm, self.n_arms)
        reward = check_real("reward", reward)
        x = obs[arm]
        size = float(np.abs(x).max()) if self.context_norm == "linf" else math.sqrt(float(x @ x))
        if not size <= self.context_bound:  # the full check (and its message) only when the fast one fails
            if not math.isfinite(size):
                raise ValueError(f"observation row {arm} (the played arm) must be finite, got {x!r}")
            check_context_bound(x, self.context_norm, self.context_bound)
        if self._t >= self.schedule.horizon:
            raise ValueError(f"the episode schedule covers horizon T = {self.schedule.horizon} (the environment's); "
                             f"cannot serve user {self._t + 1}")
        return x, arm, self.clip.clip(reward)

    def _buffered(self) -> list[np.ndarray]:
        """Read-only views of the buffered rows, arms and rewards."""
        views = [a[: self._n].view() for a in (self._X, self._arms, self._rewards)]
        for v in views:
            v.setflags(write=False)
        return views

    def _wipe(self) -> None:
        n = self._n
        self._X[:n] = 0.0
        self._arms[:n] = 0
        self._rewards[:n] = 0.0
        self._n = 0

    def _absorb_chunk(self) -> None:
        self._absorb(*self._buffered())
        self._wipe()

    def _end_episode(self) -> None:
        if self.drops_release:  # the previous release's arrays need not stay in memory while the next is computed
            self._release = None
        self._published(self._publish(*self._buffered()))
        self._wipe()  # forget: the episode's users have entered their one release

    def _published(self, release: Any) -> None:
        """Hold ``release``, the current episode's (numbered ``n_releases + 1`` when it was computed), and start the
        next episode."""
        self._release = release
        self.n_releases += 1
        self._episode += 1
        self._next_end = self.schedule.end(self._episode)

    def release(self) -> Any:
        return self._release

    def privacy_report(self):
        """The report of the whole planned release stream (one release per episode of the schedule)."""
        ledger = PrivacyLedger(neighboring="replace-one")
        self._record_release_cost(ledger, self.schedule.n_episodes)
        budget = self.budget
        head = (f"{self.schedule.describe()}; {self.n_releases} released so far. Each user enters exactly one "
                "release (forgetting), so releases compose in parallel: the guarantee is that of one release.")
        extra = self._report_note()
        if budget.noise_off:
            return ledger.report(budget.delta, guarantee="none", sensitivity_assumption=self.sensitivity_assumption,
                                 note=f"epsilon = inf: noise off, no privacy guarantee. {head} {extra}".strip())
        per_release = ledger.rho
        note = (f"target (epsilon, delta) = ({budget.epsilon:g}, {budget.delta:g}); per-release zCDP rho = "
                f"{per_release:.6g}. {head} JDP by the billboard lemma: actions use only the latest release and the "
                f"user's own features. {extra}").strip()
        return ledger.report(budget.delta, guarantee="JDP", sensitivity_assumption=self.sensitivity_assumption,
                             note=note, target_epsilon=budget.epsilon)
