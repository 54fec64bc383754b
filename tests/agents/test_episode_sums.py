"""Episodes kept as sums in bounded memory (dpbandit/agents/episode_sums.py, issue 25 item 3): chunked sums equal the
whole episode's (summation order only), and FLIPHAT's releases from sums are those from the episode's rows."""

from __future__ import annotations

import numpy as np
import pytest

from dpbandit.agents.episode_sums import EpisodeSums
from dpbandit.agents.fliphat import FLIPHAT
from dpbandit.envs.glm import GLMBanditEnv


@pytest.mark.parametrize("models", [1, 3])
def test_chunked_sums_are_the_episodes_sums_and_take_forgets_them(models):
    rng = np.random.default_rng(0)
    n, d = 103, 7
    X, w, arms = rng.standard_normal((n, d)), rng.standard_normal(n), rng.integers(models, size=n)
    sums = EpisodeSums(models, d, gram=True)
    for start in range(0, n, 10):  # chunks of 10, the last of 3
        sums.absorb(X[start:start + 10], arms[start:start + 10] if models > 1 else None, w[start:start + 10])
    gram, moment, counts = sums.take()
    for m in range(models):
        mine = arms == m if models > 1 else np.ones(n, dtype=bool)
        np.testing.assert_allclose(gram[m], X[mine].T @ X[mine], rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(gram[m], gram[m].T)  # exactly symmetric
        np.testing.assert_allclose(moment[m], X[mine].T @ w[mine], rtol=1e-12, atol=1e-12)
        assert counts[m] == mine.sum()
    again = sums.take()  # forgotten
    assert not again[0].any() and not again[1].any() and not again[2].any()
    light = EpisodeSums(models, d, gram=False)
    light.absorb(X, arms if models > 1 else None, w)
    assert light.take()[0] is None
    assert EpisodeSums.nbytes(models, d, True) > EpisodeSums.nbytes(models, d, False) >= 8 * models * d


class RowsFLIPHAT(FLIPHAT):
    """FLIPHAT fitting on the episode's rows (streamed from disk, dpbandit/agents/episode_rows.py), the reference for the
    sums."""

    keeps_sums = False


@pytest.mark.parametrize("structure", ["shared", "disjoint"])
@pytest.mark.parametrize("link,params", [("identity", {}), ("identity", {"iterations": 3}),
                                         ("logistic", {}),
                                         ("identity", {"epsilon": float("inf"), "forget": True})])
def test_fliphat_releases_from_sums_are_those_from_rows(structure, link, params, monkeypatch):
    """The same mechanism on the same users with the same noise draws: every release agrees with the rows' fit to
    rounding (the sums change only the summation order), over episodes longer than a chunk."""
    monkeypatch.setattr("dpbandit.agents.fliphat.CHUNK_ROWS", 16)
    env = GLMBanditEnv(n_arms=3, dim=12, horizon=300, structure=structure, link=link, sparsity=3,
                       contexts="gaussian", context_norm="linf", context_bound=1.0, normalize="clip")
    c = env.unwrapped.constants
    params = {"epsilon": 4.0, "sparsity": 3, **params}
    sums, rows = FLIPHAT(c, **params), RowsFLIPHAT(c, **params)
    assert sums.keeps_sums and sums.curator.buffer_rows == 16 and rows.curator.buffer_rows == 16  # rows on disk
    sums.reset(4)
    rows.reset(4)
    rng = np.random.default_rng(2)
    for t in range(300):
        obs = np.clip(rng.standard_normal((3, 12)), -1.0, 1.0)
        if structure == "disjoint":
            obs = np.tile(obs[0], (3, 1))
        arm = int(rng.integers(3))
        reward = float(rng.integers(2)) if link == "logistic" else float(rng.normal())
        sums.update(obs, arm, reward, {})
        rows.update(obs, arm, reward, {})
        a, b = sums.curator.release(), rows.curator.release()
        np.testing.assert_allclose(a.theta, b.theta, rtol=1e-9, atol=1e-12)
        np.testing.assert_array_equal(a.theta != 0, b.theta != 0)  # the same coordinates picked
        if structure == "disjoint":
            np.testing.assert_array_equal(a.counts, b.counts)
    assert sums.curator.n_releases == 9 and np.abs(sums.curator.release().theta).sum() > 0


@pytest.mark.parametrize("structure", ["shared", "disjoint"])
def test_episodic_ridge_releases_the_episodes_gram_and_moments_from_chunks(structure, monkeypatch):
    """Noise off, chunks of 7 users in episodes of 10, 20, 40 users: each release's statistics are those of its own
    episode's users (to rounding), the users of earlier episodes forgotten."""
    from dpbandit.agents.episodic_ridge import EpisodicRidge

    monkeypatch.setattr("dpbandit.agents.episodic_ridge.CHUNK_ROWS", 7)
    env = GLMBanditEnv(n_arms=3, dim=4, horizon=70, structure=structure, contexts="gaussian", context_norm="l2",
                       context_bound=1.0, normalize="scale")
    agent = EpisodicRidge(env.unwrapped.constants, epsilon=float("inf"), first_episode=10, mode="forget")
    agent.reset(0)
    assert agent.curator.buffer_rows == 7
    rng = np.random.default_rng(3)
    X, arms, y = [], [], []
    for t in range(70):
        obs = rng.standard_normal((3, 4))
        obs /= np.linalg.norm(obs, axis=1, keepdims=True)
        arm, reward = int(rng.integers(3)), float(np.clip(rng.normal(), -1.0, 1.0))
        agent.update(obs, arm, reward, {})
        X.append(obs[arm]), arms.append(arm), y.append(reward)
        if t + 1 in (10, 30, 70):
            start = {10: 0, 30: 10, 70: 30}[t + 1]
            Xe, ae, ye = np.array(X[start:]), np.array(arms[start:]), np.array(y[start:])
            release = agent.curator.release()
            for m in range(release.gram.shape[0]):
                mine = ae == m if structure == "disjoint" else np.ones(len(ae), dtype=bool)
                np.testing.assert_allclose(release.gram[m], Xe[mine].T @ Xe[mine], rtol=1e-12, atol=1e-12)
                np.testing.assert_allclose(release.moment[m], Xe[mine].T @ ye[mine], rtol=1e-12, atol=1e-12)
