"""FLIPHAT with the noise off (``epsilon = inf``): the curator keeps every user and fits N-IHT on all of them
(issue 28; derivation and measurements ``docs/episodic-agents.md`` §2.12).

A private FLIPHAT forgets: each release is fitted on its own episode's users only, which is what parallel composition
needs (``docs/episodic-agents.md`` §1.3). With the noise off there is no guarantee to keep, and forgetting only
discards data: the noise-off release is FLIPHAT's own estimator, N-IHT with the same s, eta, M, C and selection
(exact top-s), **on every user so far**, warm-started at the previous release. M steps per release from the previous
release are (releases x M) IHT steps on the growing data set: the iterates track IHT run to its fixed point on all the
data (the s-sparse least-squares or logistic fit), which one step from 0 (the private fit's M = 1: the top-s of
``X^T y``) is not once the rows are correlated. Every model is refitted at every release (disjoint: every arm with
``min_count`` users, played since or not: more steps towards its fit). With the logistic link the default step is
``4/x_max^2`` (the loss's curvature is at most ``x_max^2/4`` a coordinate) instead of the private default
``1/x_max^2``, whose warm-started steps fell short of the fit (:class:`~dpbandit.agents.fliphat.FLIPHAT`).

What the curator keeps, per model m (one shared, one per arm disjoint; :class:`KeptUsers`):

* identity link: ``G_m = sum x x^T`` (one triangle, BLAS ``dsyrk``) and ``b_m = sum x y``, so the gradient at any
  theta is ``G_m theta - b_m`` (``dsymv``): memory ``d^2 + d`` floats a model whatever T, no rows;
* logistic link: every row, on disk (:class:`~dpbandit.agents.episode_rows.EpisodeRows`, never cleared: each
  gradient pass streams them back), ``8 (d + 1)`` bytes per user, ``8 (d + 1) T`` at most, checked against the free
  space before any work.

Schedule (:func:`noise_off_schedule`, public): identity link, a release after every ``first`` users (1 by default:
one O(M K d^2) fit a user, K N-IHT calls); logistic link, where a fit streams every row so far,
episodes of ``ceil(sqrt(2 s))`` users after s users (the capped schedule of
:class:`~dpbandit.agents.episode_schedule.EpisodeSchedule` with n* = 1): about ``sqrt(2 T)`` releases, O(M d T^1.5)
work over a run, a release at most ``sqrt(2/s)`` of the data stale.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg import blas

from dpbandit.agents.episode_rows import EpisodeRows
from dpbandit.agents.episode_schedule import EpisodeSchedule
from dpbandit.agents.fliphat_release import FLIPHATRelease
from dpbandit.optim.niht import NIHTConfig, iht_steps
from dpbandit.optim.niht_kernels import add_user, refit_quadratic
from dpbandit.validation import check_choice, check_int

__all__ = ["LOGISTIC_SCALE", "KeptUsers", "KeptUsersCurator", "kept_users_note", "noise_off_schedule", "resolve_forget"]

#: n* of the noise-off logistic schedule: an episode that starts after s users has ceil(sqrt(2 s)) users.
LOGISTIC_SCALE = 1.0


def resolve_forget(forget: bool | None, noise_off: bool, published: bool) -> bool:
    """FLIPHAT's ``forget``: validated, or its default (``None``: forget unless the noise is off and the published
    setting is not asked for). ``False`` with a finite epsilon is refused (``ValueError`` naming ``forget``): a private
    release's guarantee needs each user in exactly one release."""
    if forget is None:
        return not (noise_off and not published)
    if not isinstance(forget, bool):
        raise TypeError(f"forget must be a bool or None, got {forget!r}")
    if not forget and not noise_off:
        raise ValueError("forget=False (every user in every later release) is allowed only with epsilon = inf: a "
                         "private FLIPHAT's guarantee needs each user in exactly one release (parallel composition, "
                         "docs/episodic-agents.md §1.3)")
    return forget


def kept_users_note(schedule: EpisodeSchedule, released: int) -> str:
    """The privacy report's note of a noise-off FLIPHAT that keeps every user."""
    return (f"epsilon = inf: noise off, no privacy guarantee. {schedule.describe()}; {released} released so far. "
            "Every user is kept (no forgetting): each release is N-IHT on all users so far, warm-started at the "
            "previous release (dpbandit.agents.fliphat_noise_off).")


def noise_off_schedule(horizon: int, first: int, link: str) -> EpisodeSchedule:
    """The public release schedule of noise-off FLIPHAT (module docstring): equal episodes of ``first`` users for the
    identity link, the capped schedule with n* = :data:`LOGISTIC_SCALE` from ``first`` users for the logistic one."""
    if check_choice("link", link, ("identity", "logistic")) == "identity":
        return EpisodeSchedule(horizon, first, growth=1)
    return EpisodeSchedule(horizon, first, growth=2, scale=LOGISTIC_SCALE)


class KeptUsers:
    """Every user absorbed so far, per model (``n_models`` M >= 1, ``dim`` d >= 1, ``link`` identity or logistic):
    sums for the identity link, rows on disk for the logistic one (module docstring). Never forgets."""

    def __init__(self, n_models: int, dim: int, link: str) -> None:
        self.n_models = check_int("n_models", n_models, low=1)
        self.dim = check_int("dim", dim, low=1)
        self.link = check_choice("link", link, ("identity", "logistic"))
        self._rows = EpisodeRows(n_models, dim) if link == "logistic" else None
        if self._rows is None:  # each block used through its F-ordered transpose, whose "upper" triangle dsyrk fills
            self._gram, self._moment = np.zeros((n_models, dim, dim)), np.zeros((n_models, dim))
            self._counts = np.zeros(n_models, dtype=np.int64)

    @staticmethod
    def memory_bytes(n_models: int, dim: int, link: str) -> int:
        """Bytes in memory, whatever T: the sums (identity) or the rows' read buffer (logistic)."""
        if link == "logistic":
            return EpisodeRows.memory_bytes(dim)
        return 8 * (n_models * (dim * dim + dim + 1) + dim)

    @staticmethod
    def disk_bytes(horizon: int, dim: int, link: str) -> int:
        """Bytes of temporary files after ``horizon`` users: every row for the logistic link, none for the identity."""
        return EpisodeRows.disk_bytes(horizon, dim) if link == "logistic" else 0

    @property
    def counts(self) -> np.ndarray:
        """Users absorbed per model, (M,) int (a copy)."""
        return (self._rows.counts if self._rows is not None else self._counts).copy()

    def absorb(self, X: np.ndarray, models: np.ndarray | None, y: np.ndarray) -> None:
        """Add the rows ``X`` (n, d) with clipped rewards ``y`` (n,) to their ``models`` (n,) int in [0, M) (all to
        model 0 when None)."""
        if self._rows is not None:
            self._rows.append(X, models, y)
            return
        if models is None or self.n_models == 1:
            self._add(0, X, y)
            return
        for m in np.flatnonzero(np.bincount(models, minlength=self.n_models)):
            mine = models == m
            self._add(int(m), X[mine], y[mine])

    def _add(self, m: int, X: np.ndarray, y: np.ndarray) -> None:
        if X.shape[0] == 0:
            return
        G = self._gram[m].T
        out = blas.dsyrk(1.0, X.T, beta=1.0, c=G, trans=0, lower=0, overwrite_c=1)
        if not np.shares_memory(out, G):  # pragma: no cover - the wrapper updates F-ordered arrays in place
            G[...] = out
        self._moment[m] += X.T @ y
        self._counts[m] += X.shape[0]

    def add_user(self, m: int, x: np.ndarray, y: float) -> None:
        """:meth:`absorb` of one user of model ``m``: row ``x`` (d,) float64, clipped reward ``y`` (identity link:
        :func:`~dpbandit.optim.niht_kernels.add_user`, the same BLAS ``dsyrk`` and products, the same bits)."""
        if self._rows is not None:
            self.absorb(x[None], np.array([m]), np.array([y]))
            return
        add_user(self._gram[m].T, self._moment[m], np.ascontiguousarray(x), y)
        self._counts[m] += 1

    def refit(self, previous: np.ndarray, config: NIHTConfig, min_count: float | None
              ) -> tuple[np.ndarray, np.ndarray | None]:
        """N-IHT with the noise off (``config``'s M steps, exact top-s) for every model on all its users so far,
        warm-started at ``previous`` ((d,) for one model, else (M, d)); a model with fewer than ``min_count`` users
        keeps 0 (``None``: every model is fitted). The fit is :func:`~dpbandit.optim.niht.iht_steps` on the gradient
        ``sum_i x_i (mu(x_i^T theta) - y_i)``: for the identity link its compiled form on the sums, every model in
        one call (:func:`~dpbandit.optim.niht_kernels.refit_quadratic`, the same bits); for the logistic link on the
        rows streamed from disk. Returns theta of ``previous``'s shape and, with ``min_count``, the counts (M,)
        float, both read-only (else None)."""
        counts, start = self.counts.astype(float), previous.reshape(self.n_models, -1)
        theta = np.zeros((self.n_models, self.dim))
        if self._rows is None:
            refit_quadratic(self._gram, self._moment, self._counts, start, -math.inf if min_count is None
                            else min_count, config.step, config.sparsity, config.radius, config.iterations, theta)
        else:
            for m in range(self.n_models):
                if min_count is None or counts[m] >= min_count:
                    theta[m] = iht_steps(self._rows.gradient(m, self.link), start[m], float(counts[m]), config)
        theta = theta.reshape(previous.shape)
        theta.setflags(write=False)
        if min_count is None:
            return theta, None
        counts.setflags(write=False)
        return theta, counts


class KeptUsersCurator:
    """The noise-off half of FLIPHAT's curator (:class:`~dpbandit.agents.fliphat.FLIPHATCurator` mixes it in; its
    ``_kept`` is a :class:`KeptUsers` when the curator keeps every user, else None): one user at a time by blocks of
    rounds, and the release refitted on every user so far."""

    @property
    def keeps_users_one_by_one(self) -> bool:
        """Noise off, identity link, a release after every user (its default schedule): :meth:`observe_kept` may
        serve (:mod:`dpbandit.agents.episodic_blocks`)."""
        return self._kept is not None and self._kept.link == "identity" and self.schedule.max_length == 1

    def observe_kept(self, x: np.ndarray, arm: int, reward: float) -> None:
        """:meth:`observe` of a user whose row x (d,) and reward passed its checks (``observe_rows``'), when
        :attr:`keeps_users_one_by_one`: the same clips, sums and refit, without the buffer."""
        c = self._agent.niht_config  # _fit_rewards' np.clip to N-IHT's range on one float, as RewardClip.clip does
        self._kept.add_user(arm if self._n_models > 1 else 0, x,
                            min(max(self.clip.clip(reward), c.reward_low), c.reward_high))
        self._t += 1
        self._published(self._kept_release())

    def _kept_release(self) -> FLIPHATRelease:
        """Noise off, every user kept: each model refitted on all its users, warm-started at the last release."""
        a = self._agent
        theta, counts = self._kept.refit(self._release.theta, a.niht_config,
                                         a.min_count if a.structure == "disjoint" else None)
        return FLIPHATRelease(theta, counts, self.n_releases + 1)
