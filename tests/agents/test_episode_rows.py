"""An episode's rows on disk (dpbandit/agents/episode_rows.py, issue 25 item 3): FLIPHAT with the logistic link and
M > 1 iterations streams its gradient passes from temporary files; the gradient and the release are those from the
rows in memory, the memory does not grow with T, and the disk it needs is checked before any work."""

from __future__ import annotations

import os
import shutil
import tracemalloc

import numpy as np
import pytest

import dpbandit.agents.episode_rows as episode_rows
from dpbandit.agents.episode_rows import EpisodeRows
from dpbandit.agents.fliphat import FLIPHAT
from dpbandit.envs.glm import GLMBanditEnv
from dpbandit.optim.niht import niht_gradient, rows_gradient


@pytest.mark.parametrize("link", ["identity", "logistic"])
@pytest.mark.parametrize("models", [1, 3])
def test_streamed_gradient_is_the_gradient_of_the_rows_and_clear_forgets_them(link, models, monkeypatch):
    monkeypatch.setattr(episode_rows, "READ_ROWS", 7)  # many read chunks, the last one short
    rng = np.random.default_rng(0)
    n, d = 103, 30
    X, y, arms = rng.uniform(-1, 1, (n, d)), rng.integers(2, size=n).astype(float), rng.integers(models, size=n)
    rows = EpisodeRows(models, d)
    for start in range(0, n, 16):  # appended in chunks of 16, as the curator absorbs them
        rows.append(X[start:start + 16], arms[start:start + 16] if models > 1 else None, y[start:start + 16])
    theta = rng.standard_normal(d) * 0.3
    for m in range(models):
        mine = arms == m if models > 1 else np.ones(n, dtype=bool)
        assert rows.counts[m] == mine.sum()
        expected = rows_gradient(X[mine], y[mine], link)(theta)
        got = rows.gradient(m, link)
        np.testing.assert_allclose(got(theta), expected, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(got(theta), got(theta))  # every pass reads the same rows
    files = [f for pair in rows._files for f in pair]
    rows.clear()
    assert all(f.closed for f in files) and not rows.counts.any()
    assert not rows.gradient(0, link)(theta).any()  # nothing left


def _logistic_env(T, d=12, structure="shared"):
    return GLMBanditEnv(n_arms=3, dim=d, horizon=T, structure=structure, link="logistic", sparsity=3,
                        contexts="gaussian", context_norm="linf", context_bound=1.0, normalize="clip")


@pytest.mark.parametrize("structure", ["shared", "disjoint"])
def test_logistic_fliphat_with_m_iterations_releases_the_fit_on_the_episodes_rows(structure, monkeypatch):
    """A first episode of 150 users (chunks of 16 on disk, read in chunks of 7): the release is N-IHT on the
    episode's rows in memory, with the same privacy draws (the curator's stream, replayed here)."""
    monkeypatch.setattr("dpbandit.agents.fliphat.CHUNK_ROWS", 16)
    monkeypatch.setattr(episode_rows, "READ_ROWS", 7)
    c = _logistic_env(300, structure=structure).unwrapped.constants
    agent = FLIPHAT(c, epsilon=4.0, iterations=3, sparsity=3, first_episode=150)
    assert not agent.keeps_sums
    cur = agent._make_curator(np.random.default_rng(5))
    assert cur.buffer_rows == 16
    rng = np.random.default_rng(2)
    X, arms, y = [], [], []
    for _ in range(150):
        obs = np.clip(rng.standard_normal((3, 12)), -1.0, 1.0)
        if structure == "disjoint":
            obs = np.tile(obs[0], (3, 1))
        arm, reward = int(rng.integers(3)), float(rng.integers(2))
        cur.observe(obs, arm, reward)
        X.append(obs[arm]), arms.append(arm), y.append(agent.reward_clip.clip(reward))
    release = cur.release()
    assert release.releases == 1 and not cur._rows.counts.any()  # released, rows forgotten
    X, arms, y = np.array(X), np.array(arms), np.array(y)
    replay = np.random.default_rng(5)
    if structure == "shared":
        expected = niht_gradient(rows_gradient(X, y, "logistic"), 12, 150.0, agent.niht_config, agent.rho_fit,
                                 replay).theta
    else:
        counts = np.bincount(arms, minlength=3) + agent.count_sigma * replay.standard_normal(3)
        np.testing.assert_array_equal(release.counts, counts)
        expected = np.zeros((3, 12))
        for a in range(3):
            if counts[a] >= agent.min_count:
                expected[a] = niht_gradient(rows_gradient(X[arms == a], y[arms == a], "logistic"), 12, counts[a],
                                            agent.niht_config, agent.rho_fit, replay).theta
    np.testing.assert_allclose(release.theta, expected, rtol=1e-10, atol=1e-13)
    np.testing.assert_array_equal(release.theta != 0, expected != 0)
    assert np.abs(release.theta).sum() > 0


def test_the_memory_estimate_does_not_grow_with_t_and_the_disk_is_checked_before_any_work(monkeypatch):
    """T = 1e7, d = 1000: memory estimate a few MB (as at T = 1e4), temporary rows ~34 GB stated; a folder without
    that much free space refuses the agent in one line naming the folder and both sizes."""
    Usage = type(shutil.disk_usage("/"))
    free = {"bytes": 10**14}  # independent of this machine's free space
    monkeypatch.setattr(episode_rows.shutil, "disk_usage", lambda path: Usage(10**15, 10**15 - free["bytes"],
                                                                             free["bytes"]))
    short, long = (FLIPHAT(_logistic_env(T, d=1000).unwrapped.constants, iterations=2) for T in (10**4, 10**7))
    assert short.memory_estimate() == long.memory_estimate() < 40 * 2**20
    assert long.disk_estimate() == 8 * long.schedule.max_length * 1001 > 33e9  # 4,194,304 users x 1,001 floats
    free["bytes"] = 10**9
    with pytest.raises(ValueError, match=r"agent 'fliphat' .*logistic link, M=2.* about 33.6 GB of temporary rows to .*"
                                         r"1 GB free; set TMPDIR"):
        FLIPHAT(_logistic_env(10**7, d=1000).unwrapped.constants, iterations=2)
    FLIPHAT(_logistic_env(10**7, d=1000).unwrapped.constants)  # M = 1 keeps sums: no disk


def _traced_peak(T, d=200):
    agent = FLIPHAT(_logistic_env(T, d=d).unwrapped.constants, iterations=2, first_episode=64)
    rng = np.random.default_rng(0)
    obs = np.clip(rng.standard_normal((64, 3, d)), -1.0, 1.0)
    tracemalloc.start()
    try:
        agent.reset(0)
        for t in range(T):
            agent.update(obs[t % 64], t % 3, float(t % 2), {})
        return tracemalloc.get_traced_memory()[1], agent
    finally:
        tracemalloc.stop()


def test_logistic_fliphat_allocations_stay_within_the_estimate_whatever_t(monkeypatch):
    """Python's traced allocations (numpy's arrays included) over a run: the same peak at T = 2,000 and 8,000
    (the longest episode 3,968 users: 6.4 MB of rows at d = 200, on disk) and below the up-front estimate."""
    monkeypatch.setattr(episode_rows, "READ_ROWS", 256)
    small, _ = _traced_peak(2_000)
    large, agent = _traced_peak(8_000)
    assert agent.disk_estimate() == 8 * 3968 * 201  # the last episode, 4,096 users truncated at T
    assert large < small + 2**20, (small, large)
    assert large <= agent.memory_estimate() + 2**20, (large, agent.memory_estimate())


def test_rows_files_live_in_the_temporary_folder_without_a_name(tmp_path, monkeypatch):
    """TMPDIR is honoured and nothing is left there, during or after an episode."""
    monkeypatch.setattr(episode_rows.tempfile, "tempdir", str(tmp_path))
    rows = EpisodeRows(1, 4)
    rows.append(np.ones((3, 4)), None, np.zeros(3))
    assert os.listdir(tmp_path) == []  # unnamed (POSIX)
    assert rows.gradient(0, "identity")(np.ones(4)).tolist() == [12.0] * 4
    rows.clear()
    assert os.listdir(tmp_path) == []
