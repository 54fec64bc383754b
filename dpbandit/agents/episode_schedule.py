"""The public episode schedule of the episodic agents (:mod:`dpbandit.agents.episodic`): geometric episodes,
optionally capped by a noise scale n* (derivation ``docs/episodic-agents.md`` §6.5). The boundaries are functions of
public constants only (T, the first episode, the growth factor, n*), so the releases compose in parallel
(``docs/episodic-agents.md`` §1.3, assumption A4)."""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

from dpbandit.validation import check_int, check_real

__all__ = ["EpisodeSchedule"]


@dataclass(frozen=True)
class EpisodeSchedule:
    """Public episodes over a horizon of T users: geometric (episode ell has ``first * growth**ell`` users, the last
    truncated; ``growth`` = 2: doubling, the default; 1: episodes of ``first`` users each), optionally capped by the
    noise scale ``scale`` = n* (``docs/episodic-agents.md`` §6.5): an episode starting after s users has

        n(s) = max(first, min(first + (growth - 1) s, ceil(sqrt(2 s n*))))

    users. ``scale = inf`` (the default) is the geometric schedule; ``scale = 0`` gives equal episodes of ``first``
    users (with ``first = 1``: a release after every user); in between the episodes grow geometrically while the
    release noise dominates (s < n*/2 for doubling) and then as sqrt(2 s n*), which balances the staleness of the
    last release against the noise of shorter episodes.

    ``horizon`` T >= 1, ``first`` >= 1 and ``growth`` >= 1 are public integers, ``scale`` >= 0 a public real
    (validated; never a function of the data). Users are indexed t = 0, ..., T-1.
    """

    horizon: int
    first: int = 1
    growth: int = 2
    scale: float = math.inf

    def __post_init__(self) -> None:
        object.__setattr__(self, "horizon", check_int("horizon", self.horizon, low=1))
        object.__setattr__(self, "first", check_int("first", self.first, low=1))
        object.__setattr__(self, "growth", check_int("growth", self.growth, low=1))
        object.__setattr__(self, "scale", check_real("scale", self.scale, low=0.0, allow_inf=True))
        ends = None
        if self._capped:  # ends of every episode, once: about sqrt(2 T / n*) + log2(n*) of them
            ends, start = [], 0
            while start < self.horizon:
                start = min(start + self._length_at(start), self.horizon)
                ends.append(start)
        object.__setattr__(self, "_ends", ends)

    @property
    def _capped(self) -> bool:
        """Whether the noise cap shapes the schedule (else the geometric closed forms apply)."""
        return self.growth > 1 and 0.0 < self.scale < math.inf

    @property
    def _equal(self) -> bool:
        return self.growth == 1 or self.scale == 0.0

    def _length_at(self, start: int) -> int:
        """n(s) of the class docstring for an episode starting after ``start`` users."""
        geometric = self.first + (self.growth - 1) * start
        return max(self.first, min(geometric, math.ceil(math.sqrt(2.0 * start * self.scale))))

    def start(self, episode: int) -> int:
        """Index of the first user of ``episode``: ``min(first (r**ell - 1) / (r - 1), T)`` (``first ell`` for
        equal episodes) in exact integer arithmetic, or the capped schedule's."""
        episode = check_int("episode", episode, low=0)
        r = self.growth
        if self._equal:
            return min(self.first * episode, self.horizon)
        if self._ends is not None:
            return 0 if episode == 0 else self._ends[min(episode, len(self._ends)) - 1]
        if episode > self.horizon.bit_length():  # r**ell - 1 >= 2**ell - 1 > T: past the horizon
            return self.horizon
        return min(self.first * ((r**episode - 1) // (r - 1)), self.horizon)

    def end(self, episode: int) -> int:
        """One past the last user of ``episode``: the next episode's start; its release follows user ``end - 1``."""
        return self.start(check_int("episode", episode, low=0) + 1)

    def length(self, episode: int) -> int:
        """Users in ``episode`` (0 beyond the horizon)."""
        return self.end(episode) - self.start(episode)

    def episode_of(self, t: int) -> int:
        """The episode of user ``t`` in [0, T)."""
        t = check_int("t", t, low=0, high=self.horizon - 1)
        if self._equal:
            return t // self.first
        if self._ends is not None:
            return bisect.bisect_right(self._ends, t)
        if self.growth == 2:
            return (t // self.first + 1).bit_length() - 1
        episode = 0  # at most log_r(T) + 1 steps
        while self.start(episode + 1) <= t:
            episode += 1
        return episode

    @property
    def n_episodes(self) -> int:
        """Number of episodes (= releases) over the horizon."""
        return self.episode_of(self.horizon - 1) + 1

    @property
    def max_length(self) -> int:
        """The longest episode (the buffer size an episodic curator needs)."""
        if self._equal:
            return min(self.first, self.horizon)
        return max(self.length(e) for e in range(self.n_episodes))

    def boundaries(self) -> tuple[int, ...]:
        """``end(ell)`` for every episode: the user counts after which a release happens (the last is T)."""
        return tuple(self.end(e) for e in range(self.n_episodes))

    def describe(self) -> str:
        n = self.n_episodes
        shown = ", ".join(str(self.end(e)) for e in range(min(n, 6))) + (f", ..., {self.horizon}" if n > 6 else "")
        if self._equal:
            kind = f"equal episodes of {self.first} users"
        else:
            kind = f"{ {2: 'doubling'}.get(self.growth, 'geometric')} episodes of {self.first} * {self.growth}^ell users"
            if self._capped:
                kind += f", capped at ceil(sqrt(2 s n*)) after s users with n* = {self.scale:.6g}"
        return (f"{kind} (public, data-independent; last truncated at T = {self.horizon}): {n} releases, after users "
                f"{shown}")
