"""EpisodeSchedule's growth factor r (dpbandit/agents/episodic.py; spec/episodic-part2-hard-problems.md §4): episode
ell has first * r**ell users, boundaries in exact integer arithmetic, every user in exactly one episode."""

from __future__ import annotations

import math

import pytest

from dpbandit.agents.episodic import EpisodeSchedule


@pytest.mark.parametrize("growth", [1, 2, 3, 5])
@pytest.mark.parametrize("first", [1, 3, 7])
def test_geometric_boundaries_cover_every_user_once(growth, first):
    T = 500
    s = EpisodeSchedule(T, first, growth)
    lengths, start = [], 0
    while start < T:  # the lengths computed a different way: first * r**ell, truncated at T
        n = min(first * growth ** len(lengths), T - start)
        lengths.append(n)
        start += n
    assert s.n_episodes == len(lengths)
    assert [s.length(e) for e in range(s.n_episodes)] == lengths
    assert s.max_length == max(lengths)
    for t in range(T):
        e = s.episode_of(t)
        assert s.start(e) <= t < s.end(e)
    assert s.boundaries()[-1] == T and s.start(s.n_episodes + 40) == T


def test_growth_known_answers_and_validation():
    assert EpisodeSchedule(20, 2, 1).boundaries() == tuple(range(2, 21, 2))
    assert EpisodeSchedule(100, 3, 3).boundaries() == (3, 12, 39, 100)
    assert EpisodeSchedule(100, 3).boundaries() == (3, 9, 21, 45, 93, 100)  # default: doubling
    assert "equal episodes of 2 users" in EpisodeSchedule(20, 2, 1).describe()
    with pytest.raises(ValueError, match="growth"):
        EpisodeSchedule(10, 1, 0)
    with pytest.raises(TypeError, match="growth"):
        EpisodeSchedule(10, 1, 1.5)


@pytest.mark.parametrize("scale", [0.3, 7.0, 150.0, 4000.0])
@pytest.mark.parametrize("first,growth", [(1, 2), (5, 2), (3, 3)])
def test_noise_capped_schedule_has_the_stated_lengths(scale, first, growth):
    """docs/episodic-agents.md §6.5: an episode after s users has max(first, min(first + (r - 1) s,
    ceil(sqrt(2 s n*)))) users; recomputed here user by user, with every user in exactly one episode."""
    T = 3000
    s = EpisodeSchedule(T, first, growth, scale)
    lengths, start = [], 0
    while start < T:
        n = first + (growth - 1) * start
        while n > first and (n - 1) ** 2 >= 2 * start * scale:  # the least n >= sqrt(2 s n*), found by counting
            n -= 1
        n = min(n, T - start)
        lengths.append(n)
        start += n
    assert [s.length(e) for e in range(s.n_episodes)] == lengths
    assert s.max_length == max(lengths) and s.boundaries()[-1] == T
    for t in range(T):
        e = s.episode_of(t)
        assert s.start(e) <= t < s.end(e)


def test_noise_capped_schedule_limits():
    """n* = inf is the geometric schedule; n* = 0 equal episodes of ``first`` (a release after every user when
    first = 1); a large n* stays geometric until s ~ n*/2 (doubling), then grows as sqrt(2 s n*)."""
    assert EpisodeSchedule(100, 3, 2, math.inf) == EpisodeSchedule(100, 3)
    assert EpisodeSchedule(100, 3, 2, math.inf).boundaries() == (3, 9, 21, 45, 93, 100)
    assert EpisodeSchedule(10, 1, 2, 0.0).boundaries() == tuple(range(1, 11))
    assert EpisodeSchedule(10**7, 1, 2, 0.0).max_length == 1
    assert EpisodeSchedule(2000, 100, 2, 1000.0).boundaries() == (100, 300, 700, 1500, 2000)  # 2 s n* >= (s + 100)^2
    # by hand: ceil(sqrt(2 s 100)) = 142, 220, 304, 392, 482 for s = 100, 242, 462, 766, 1158 (all below s + 100)
    assert EpisodeSchedule(3000, 100, 2, 100.0).boundaries()[:6] == (100, 242, 462, 766, 1158, 1640)
    assert "capped at ceil(sqrt(2 s n*))" in EpisodeSchedule(3000, 100, 2, 100.0).describe()
    with pytest.raises(ValueError, match="scale"):
        EpisodeSchedule(10, 1, 2, -1.0)
