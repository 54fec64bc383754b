"""EpisodeSchedule's growth factor r (dpbandit/agents/episodic.py; spec/episodic-part2-hard-problems.md §4): episode
ell has first * r**ell users, boundaries in exact integer arithmetic, every user in exactly one episode."""

from __future__ import annotations

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
    assert "equal episodes of 2 * 1^ell" in EpisodeSchedule(20, 2, 1).describe()
    with pytest.raises(ValueError, match="growth"):
        EpisodeSchedule(10, 1, 0)
    with pytest.raises(TypeError, match="growth"):
        EpisodeSchedule(10, 1, 1.5)
