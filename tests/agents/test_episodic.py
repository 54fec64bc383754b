"""The episodic skeleton (dpbandit/agents/episodic.py): the doubling schedule, the per-release budget, and the
curator's buffer/publish/forget cycle — every user enters exactly one release — and its privacy report."""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import pytest

from dpbandit.agents.episodic import EpisodeSchedule, EpisodicBudget, EpisodicCurator, default_first_episode
from dpbandit.agents.private import RewardClip
from dpbandit.envs.constants import BanditConstants
from dpbandit.privacy.calibrate import gaussian_sigma_analytic, zcdp_rho_for


def constants(K=3, d=2, T=100):
    return BanditConstants(
        n_arms=K, dim=d, horizon=T, structure="shared", link="identity", context_norm="l2", context_bound=1.0,
        theta_norm="l2", theta_bound=1.0, sparsity=d, noise_std=0.1, reward_low=-1.0, reward_high=1.0,
        mean_low=-1.0, mean_high=1.0,
    )


# -- schedule --------------------------------------------------------------------------------------------------------


def test_schedule_boundaries_and_episode_index():
    s = EpisodeSchedule(100, first=3)
    assert s.boundaries() == (3, 9, 21, 45, 93, 100)
    assert [s.length(e) for e in range(6)] == [3, 6, 12, 24, 48, 7]
    assert s.n_episodes == 6 and s.max_length == 48 and s.length(6) == 0
    assert [s.episode_of(t) for t in (0, 2, 3, 8, 9, 20, 21, 92, 93, 99)] == [0, 0, 1, 1, 2, 2, 3, 4, 5, 5]
    for t in range(100):  # episode_of agrees with start/end everywhere
        e = s.episode_of(t)
        assert s.start(e) <= t < s.end(e)
    one = EpisodeSchedule(1)
    assert one.boundaries() == (1,) and one.n_episodes == 1
    assert EpisodeSchedule(16).boundaries() == (1, 3, 7, 15, 16)  # the papers' 2^ell episodes
    text = s.describe()
    assert "3 * 2^ell" in text and "6 releases" in text and "T = 100" in text
    long = EpisodeSchedule(10**6, first=1).describe()
    assert "..., 1000000" in long


@pytest.mark.parametrize("kwargs, error, words", [
    ({"horizon": 0}, ValueError, "horizon"),
    ({"horizon": 10, "first": 0}, ValueError, "first"),
    ({"horizon": 10, "first": 2.5}, TypeError, "first"),
    ({"horizon": 10.0}, TypeError, "horizon"),
])
def test_schedule_validation(kwargs, error, words):
    with pytest.raises(error, match=words):
        EpisodeSchedule(**kwargs)
    with pytest.raises(ValueError, match="t must be"):
        EpisodeSchedule(10).episode_of(10)


def test_default_first_episode():
    assert default_first_episode(10, 20, "shared") == 20
    assert default_first_episode(3, 4, "disjoint") == 12
    with pytest.raises(ValueError, match="structure"):
        default_first_episode(3, 4, "other")


def test_budget_rho_mu_and_defaults():
    b = EpisodicBudget.build(constants(T=1000), 1.0)
    assert b.delta == 1e-3 and not b.noise_off
    assert b.rho == pytest.approx(0.05939, abs=1e-5)  # spec/errata.md E1: rho*(1, 1e-3)
    assert b.rho == zcdp_rho_for(1.0, 1e-3)
    assert b.mu == pytest.approx(1 / gaussian_sigma_analytic(1.0, 1e-3, 1.0))
    assert b.mu > math.sqrt(2 * b.rho)  # the analytic Gaussian is tighter than zCDP + CKS
    off = EpisodicBudget.build(constants(), math.inf, 1e-3)
    assert off.noise_off and off.rho == math.inf and off.mu == math.inf
    with pytest.raises(ValueError, match="delta"):
        EpisodicBudget.build(constants(T=1), 1.0)
    with pytest.raises(ValueError, match="epsilon"):
        EpisodicBudget.build(constants(), 0.0)
    with pytest.raises(ValueError, match="delta"):
        EpisodicBudget.build(constants(), 1.0, 1.0)


# -- curator: buffer, publish, forget --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Copy:
    """A (non-private) release that copies what _publish received, to test the buffer."""

    X: np.ndarray
    arms: np.ndarray
    rewards: np.ndarray
    writable_inputs: bool


class CopyCurator(EpisodicCurator):
    def _publish(self, X, arms, rewards):
        writable = any(a.flags.writeable for a in (X, arms, rewards))
        return Copy(X.copy(), arms.copy(), rewards.copy(), writable)

    def _initial_release(self):
        return "initial"

    def _record_release_cost(self, ledger, count):
        if self.budget.noise_off:
            ledger.add_non_private("copy")
        else:
            ledger.add_gaussian(1.0 / self.budget.mu, count, mechanism="copy (test)", parallel=True)

    @property
    def sensitivity_assumption(self):
        return "test"


def make_curator(T=20, first=2, K=3, d=2, epsilon=1.0):
    c = constants(K=K, d=d, T=T)
    return CopyCurator(EpisodeSchedule(T, first), EpisodicBudget.build(c, epsilon), K, d, "l2", 1.0,
                       RewardClip(-1.0, 1.0, "test"))


def test_every_user_enters_exactly_one_release_and_is_forgotten():
    rng = np.random.default_rng(0)
    cur = make_curator()
    releases, users = [], []
    for t in range(20):
        obs = rng.uniform(-0.5, 0.5, size=(3, 2))
        arm, reward = t % 3, 3.0 * (t % 2) - 1.5  # rewards beyond [-1, 1] get clipped
        users.append((obs[arm].copy(), arm, max(min(reward, 1.0), -1.0)))
        before = cur.release()
        cur.observe(obs, arm, reward)
        if cur.release() is not before:
            releases.append((t + 1, cur.release()))
        elif t < 1:
            assert cur.release() == "initial"
    assert [t for t, _ in releases] == [2, 6, 14, 20] and cur.n_releases == 4
    start = 0
    for end, rel in releases:  # release k holds exactly episode k's users, in order
        X = np.array([u[0] for u in users[start:end]])
        np.testing.assert_array_equal(rel.X, X)
        np.testing.assert_array_equal(rel.arms, [u[1] for u in users[start:end]])
        np.testing.assert_array_equal(rel.rewards, [u[2] for u in users[start:end]])
        assert not rel.writable_inputs
        start = end
    assert not cur._X.any() and not cur._rewards.any() and cur._n == 0  # nothing of any episode is kept
    with pytest.raises(ValueError, match="horizon T = 20"):
        cur.observe(np.zeros((3, 2)), 0, 0.0)


def test_observe_validates_before_buffering():
    cur = make_curator()
    with pytest.raises(ValueError, match=r"shape \(K, d\)"):
        cur.observe(np.zeros((2, 2)), 0, 0.0)
    with pytest.raises(ValueError, match="arm"):
        cur.observe(np.zeros((3, 2)), 3, 0.0)
    with pytest.raises(ValueError, match="context_bound"):
        cur.observe(np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 0.0]]), 1, 0.0)
    with pytest.raises(ValueError, match="must be finite"):
        cur.observe(np.array([[0.0, 0.0], [np.nan, 0.0], [0.0, 0.0]]), 1, 0.0)
    with pytest.raises(ValueError, match="reward"):
        cur.observe(np.zeros((3, 2)), 0, math.nan)
    assert cur.t == 0 and cur._n == 0
    cur.observe(np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 0.0]]), 0, 0.0)  # only the played row is bounded
    assert cur.t == 1


def test_report_states_schedule_per_release_rho_and_parallel_composition():
    cur = make_curator(T=100, first=3)
    report = cur.privacy_report()
    assert report.guarantee == "JDP" and report.delta == 0.01
    assert report.epsilon == pytest.approx(1.0, abs=1e-6)  # one release spends the whole budget; 6 releases too
    assert report.rho == pytest.approx(cur.budget.mu**2 / 2)
    assert "parallel composition over 6 releases" in report.composition
    assert "3 * 2^ell" in report.note and "per-release zCDP rho" in report.note and "0 released so far" in report.note
    assert report.privacy_unit.startswith("one user") and report.neighboring == "replace-one"
    off = make_curator(epsilon=math.inf).privacy_report()
    assert off.guarantee == "none" and off.epsilon == math.inf and "noise off" in off.note


def test_constructor_validation():
    c = constants()
    sched, budget, clip = EpisodeSchedule(10), EpisodicBudget.build(c, 1.0), RewardClip(-1, 1, "t")
    with pytest.raises(TypeError, match="schedule"):
        CopyCurator(10, budget, 3, 2, "l2", 1.0, clip)
    with pytest.raises(TypeError, match="budget"):
        CopyCurator(sched, 1.0, 3, 2, "l2", 1.0, clip)
    with pytest.raises(TypeError, match="clip"):
        CopyCurator(sched, budget, 3, 2, "l2", 1.0, (-1, 1))
    with pytest.raises(ValueError, match="context_norm"):
        CopyCurator(sched, budget, 3, 2, "l1", 1.0, clip)
    with pytest.raises(ValueError, match="context_bound"):
        CopyCurator(sched, budget, 3, 2, "l2", 0.0, clip)


def test_use_buffers_keeps_the_buffered_users_and_served_publishes_rows_written_there():
    cur = make_curator(T=20, first=2)
    cur.observe(np.array([[0.1, 0.2], [0.3, 0.4], [0.0, 0.0]]), 1, 0.5)
    X, arms, rewards = np.full((8, 2), 9.0), np.full(8, 7, dtype=np.int64), np.full(8, 9.0)  # max_length 8
    cur.use_buffers(X, arms, rewards)
    np.testing.assert_array_equal(X[0], [0.3, 0.4])
    assert arms[0] == 1 and rewards[0] == 0.5 and cur.n_buffered == 1
    i = cur.n_buffered  # a batched form writes the next user's checked row, arm, clipped reward, then counts it
    X[i], arms[i], rewards[i] = (0.0, -0.5), 2, -1.0
    cur.served()
    rel = cur.release()
    assert cur.n_releases == 1 and cur.t == 2 and cur.n_buffered == 0
    np.testing.assert_array_equal(rel.X, [[0.3, 0.4], [0.0, -0.5]])
    np.testing.assert_array_equal(rel.arms, [1, 2])
    np.testing.assert_array_equal(rel.rewards, [0.5, -1.0])
    assert not X[:2].any() and not arms[:2].any() and not rewards[:2].any()  # forgotten in the adopted buffers
    with pytest.raises(ValueError, match="shapes"):
        cur.use_buffers(np.zeros((7, 2)), arms, rewards)
    with pytest.raises(TypeError, match="float64"):
        cur.use_buffers(X, arms.astype(float), rewards)


def test_checked_user_returns_row_arm_clipped_reward_without_buffering():
    cur = make_curator()
    obs = np.array([[0.1, 0.2], [0.3, 0.4], [0.0, 0.0]])
    x, arm, reward = cur.checked_user(obs, np.int64(1), 3.0)
    np.testing.assert_array_equal(x, [0.3, 0.4])
    assert (arm, reward) == (1, 1.0) and type(arm) is int and cur.t == 0 and cur.n_buffered == 0
    with pytest.raises(ValueError, match="context_bound"):
        cur.checked_user(np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 0.0]]), 1, 0.0)


def test_served_together_counts_every_lockstep_curator_and_releases_each_at_the_episode_end():
    curators = [make_curator(T=20, first=2) for _ in range(3)]
    for k, cur in enumerate(curators):
        cur._X[0] = (0.1 * k, 0.0)  # the row a batched form wrote for its seed
    EpisodicCurator.served_together(curators)
    assert all(c.t == 1 and c.n_buffered == 1 and c.n_releases == 0 for c in curators)
    EpisodicCurator.served_together(curators)
    assert all(c.t == 2 and c.n_buffered == 0 and c.n_releases == 1 for c in curators)
    for k, cur in enumerate(curators):  # each released its own buffer, then forgot it
        np.testing.assert_array_equal(cur.release().X, [[0.1 * k, 0.0], [0.0, 0.0]])
        assert not cur._X.any()


def test_episodic_agents_memory_does_not_grow_with_the_horizon_and_row_buffers_are_refused_up_front(monkeypatch):
    """Issue 25 item 3: FLIPHAT (M = 1, either link; identity with M > 1) and episodic ridge keep an episode as sums
    in bounded memory, so their up-front estimate is the same at T = 1e4 and 1e7. Logistic FLIPHAT with M > 1 keeps
    the longest episode's rows (about T/2 users x d) on disk (dpbandit/agents/episode_rows.py): at T = 1e7,
    d = 10,000 that is ~336 GB, refused before any allocation when the temporary folder has less free, naming the
    agent."""
    import dpbandit.validation as validation
    from dpbandit.agents import make_agent
    from dpbandit.envs import GLMBanditEnv

    monkeypatch.setattr(validation, "physical_memory", lambda: 24 * 2**30)
    free = SimpleNamespace(free=2**50)  # independent of this machine's free space (34 GB are asked for below)
    monkeypatch.setattr("dpbandit.agents.episode_rows.shutil.disk_usage", lambda path: free)

    def env(T, d=1000, link="identity"):
        return GLMBanditEnv(n_arms=2, dim=d, horizon=T, structure="shared", theta="sparse", sparsity=5, link=link)

    for name, link, params in [("fliphat", "identity", {}), ("fliphat", "logistic", {}),
                               ("fliphat", "identity", {"iterations": 3}), ("fliphat", "logistic", {"iterations": 2}),
                               ("episodic_ridge", "identity", {})]:
        short, long = (make_agent(name, env(T, link=link), **params).memory_estimate() for T in (10**4, 10**7))
        assert short == long, (name, link, params)
        assert long < (40 if name == "fliphat" and not params else 200) * 2**20, (name, long)
    free.free = 2**36
    with pytest.raises(ValueError, match="agent 'fliphat'.*336 GB of temporary rows"):
        make_agent("fliphat", env(10**7, 10_000, "logistic"), iterations=2)
    rows = make_agent("fliphat", env(1000, 10, "logistic"), iterations=2)
    assert rows.disk_estimate() >= 8 * rows.schedule.max_length * 10


class SumCurator(CopyCurator):
    """A chunked curator that records what it absorbed and what _publish received."""

    def __init__(self, *args, **kw):
        self.absorbed = []
        super().__init__(*args, **kw)

    def _absorb(self, X, arms, rewards):
        self.absorbed.append((X.copy(), arms.copy(), rewards.copy(), X.flags.writeable))

    def _publish(self, X, arms, rewards):
        chunks, self.absorbed = self.absorbed, []
        return chunks, super()._publish(X, arms, rewards)


def test_chunked_curator_absorbs_full_chunks_and_publishes_the_rest_holding_at_most_chunk_users():
    T, chunk = 40, 3
    c = constants(K=3, d=2, T=T)
    cur = SumCurator(EpisodeSchedule(T, 2), EpisodicBudget.build(c, 1.0), 3, 2, "l2", 1.0, RewardClip(-1, 1, "t"),
                     chunk=chunk)
    assert cur.buffer_rows == chunk and cur._X.shape == (chunk, 2)
    rng = np.random.default_rng(1)
    users, releases = [], []
    for t in range(T):
        obs = rng.uniform(-0.5, 0.5, size=(3, 2))
        users.append((obs[t % 3].copy(), t % 3, 0.1 * (t % 5)))
        before = cur.release()
        cur.observe(obs, t % 3, 0.1 * (t % 5))
        if cur.release() is not before:
            releases.append((t + 1, cur.release()))
    assert [t for t, _ in releases] == [2, 6, 14, 30, 40]
    start = 0
    for end, (chunks, rest) in releases:  # full chunks in arrival order, then the rest: the episode's users, once
        n = end - start
        assert [len(x) for x, *_ in chunks] == [chunk] * ((n - 1) // chunk)
        assert not any(writable for *_, writable in chunks) and not rest.writable_inputs
        X = np.concatenate([x for x, *_ in chunks] + [rest.X])
        np.testing.assert_array_equal(X, [u[0] for u in users[start:end]])
        np.testing.assert_array_equal(np.concatenate([a for _, a, *_ in chunks] + [rest.arms]),
                                      [u[1] for u in users[start:end]])
        start = end
    assert not cur._X.any() and cur.n_buffered == 0
    with pytest.raises(ValueError, match="chunk"):
        SumCurator(EpisodeSchedule(T, 2), EpisodicBudget.build(c, 1.0), 3, 2, "l2", 1.0, RewardClip(-1, 1, "t"),
                   chunk=0)


def test_served_together_absorbs_every_seeds_full_chunk():
    c = constants(K=3, d=2, T=40)
    curators = [SumCurator(EpisodeSchedule(40, 8), EpisodicBudget.build(c, 1.0), 3, 2, "l2", 1.0,
                           RewardClip(-1, 1, "t"), chunk=3) for _ in range(2)]
    for t in range(3):
        for k, cur in enumerate(curators):
            cur._X[t] = (0.1 * k, 0.01 * t)
        EpisodicCurator.served_together(curators)
    for k, cur in enumerate(curators):
        assert cur.n_buffered == 0 and len(cur.absorbed) == 1 and not cur._X.any()
        np.testing.assert_array_equal(cur.absorbed[0][0], [[0.1 * k, 0.0], [0.1 * k, 0.01], [0.1 * k, 0.02]])
