"""Episodic ridge, episodic GLM and FLIPHAT by blocks of rounds (issue 25, ``dpbandit/agents/episodic_blocks.py``): every
number equals the step path's, bit for bit, and the identities the runs rest on hold."""

import pickle

import gymnasium
import numpy as np
import pytest

from dpbandit.agents import episodic_blocks, make_agent
from dpbandit.agents.base import plays_blocks
from dpbandit.agents.episode_sums import EpisodeSums
from dpbandit.agents.episodic_ridge_calibration import clip_rows
from dpbandit.agents.fliphat_release import FLIPHATRelease, block_scores, greedy_scores
from dpbandit.agents.floored_ridge import FlooredRidge
from dpbandit.agents.release_combination import pool_gram, pooled_shares
from dpbandit.agents.release_rules import ridge_scores
from dpbandit.envs.blocks import RoundBlock
from dpbandit.experiment import simulate
from dpbandit.experiment.batch import simulate_batch
from dpbandit.experiment.config import AgentSpec, EnvSpec
from dpbandit.experiment.loop import block_source, play_steps
from dpbandit.mapped import mapped_zeros

INF = float("inf")
LINF = {"context_norm": "linf", "normalize": "clip", "context_bound": 0.4}  # rows clipped by the rule (row_clip)
CASES = [  # (environment, agent, its parameters, whether runs play rounds at once)
    ({"structure": "shared", "n_arms": 2, "dim": 6}, "episodic_ridge", {"epsilon": 1.0}, True),
    ({"structure": "disjoint", "n_arms": 3, "dim": 6, **LINF}, "episodic_ridge", {"epsilon": 1.0}, True),
    ({"structure": "shared", "n_arms": 3, "dim": 7, **LINF}, "episodic_ridge", {"epsilon": 4.0}, True),
    ({"structure": "disjoint", "n_arms": 2, "dim": 6}, "episodic_ridge", {"epsilon": INF}, True),
    ({"structure": "shared", "n_arms": 3, "dim": 6, **LINF}, "episodic_ridge", {"epsilon": INF, "row_clip": 0.5,
                                                                               "centre": True}, True),
    ({"structure": "shared", "n_arms": 2, "dim": 5}, "episodic_ridge", {"epsilon": INF, "first_episode": 8}, True),
    ({"structure": "shared", "n_arms": 3, "dim": 6}, "episodic_ridge", {"epsilon": 2.0, "ucb_alpha": 0.5}, True),
    ({"structure": "disjoint", "n_arms": 2, "dim": 6}, "episodic_ridge", {"epsilon": 2.0, "mode": "forget"}, True),
    ({"structure": "shared", "n_arms": 2, "dim": 6}, "episodic_ridge", {"epsilon": 2.0, "mode": "sum"}, True),
    ({"structure": "disjoint", "n_arms": 3, "dim": 6}, "episodic_ridge", {"epsilon": 8.0, "gram_pool": False}, True),
    ({"structure": "shared", "n_arms": 2, "dim": 6}, "episodic_ridge", {"epsilon": 1.0, "rule": "ucb"}, False),
    ({"structure": "disjoint", "n_arms": 3, "dim": 6, **LINF}, "episodic_ridge", {"epsilon": 1.0, "rule": "thompson"},
     False),
    ({"structure": "disjoint", "n_arms": 2, "dim": 120}, "episodic_ridge", {"epsilon": 1.0}, True),
    ({"structure": "disjoint", "n_arms": 2, "dim": 6, "link": "logistic", **LINF}, "episodic_glm", {"epsilon": 1.0},
     True),
    ({"structure": "shared", "n_arms": 3, "dim": 6, "link": "probit"}, "episodic_glm", {"epsilon": INF}, False),
    ({"structure": "shared", "n_arms": 2, "dim": 6}, "fliphat", {"epsilon": 1.0}, True),
    ({"structure": "disjoint", "n_arms": 3, "dim": 6, **LINF}, "fliphat", {"epsilon": 4.0, "min_count": 5.0}, True),
    ({"structure": "disjoint", "n_arms": 2, "dim": 8}, "fliphat", {"epsilon": 2.0, "selection": "gumbel",
                                                                   "iterations": 2}, True),
    ({"structure": "disjoint", "n_arms": 3, "dim": 9}, "fliphat", {"epsilon": INF}, True),  # a refit per user
    ({"structure": "shared", "n_arms": 2, "dim": 7, **LINF}, "fliphat", {"epsilon": INF, "iterations": 3}, True),
    ({"structure": "shared", "n_arms": 2, "dim": 6}, "fliphat", {"epsilon": INF, "first_episode": 5}, True),
    ({"structure": "disjoint", "n_arms": 2, "dim": 6}, "fliphat", {"epsilon": INF, "forget": True}, True),
    ({"structure": "disjoint", "n_arms": 2, "dim": 6, "link": "logistic"}, "fliphat", {"epsilon": INF}, True),
    ({"structure": "shared", "n_arms": 2, "dim": 6}, "fliphat", {"epsilon": 1.0, "published_setting_not_private": True},
     True),  # (warns: not private)
]


def _state(agent):
    """What must agree after a run: the release, the curator's counts and buffers, both streams."""
    cur, rel = agent.curator, agent.release
    return (rel.theta, getattr(rel, "gram", None), getattr(rel, "episode", getattr(rel, "releases", None)),
            getattr(rel, "counts", None), cur.t, cur.n_releases, cur.n_buffered, cur._X[: cur.n_buffered],
            cur._rewards[: cur.n_buffered], getattr(cur, "rng", getattr(cur, "_rng", None)).bit_generator.state,
            agent.rng.bit_generator.state)


def _same(a, b):
    for x, y in zip(_state(a), _state(b)):
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            assert x.tobytes() == y.tobytes()
        else:
            assert x == y


def _count_runs(monkeypatch) -> list:
    """The blocks' calls that played rounds other than one by one (runs, and one-user episodes kept)."""
    runs = []
    for name in ("_run", "_kept_users"):
        def counted(*args, _inner=getattr(episodic_blocks, name)):
            played = _inner(*args)
            runs.append(played)
            return played

        monkeypatch.setattr(episodic_blocks, name, counted)
    return runs


@pytest.mark.filterwarnings("ignore::dpbandit.optim.gg_calibration.PublishedSettingWarning")
@pytest.mark.parametrize("env_kwargs, name, params, vectorised", CASES, ids=lambda c: str(c))
def test_blocks_give_the_step_paths_numbers_bit_for_bit(env_kwargs, name, params, vectorised, monkeypatch):
    runs = _count_runs(monkeypatch)
    env = gymnasium.make("dpbandit/GLMBandit-v0", horizon=2600, **env_kwargs)
    blocks, steps = (make_agent(name, env, **params) for _ in range(2))
    assert plays_blocks(blocks) and block_source(env) is env.unwrapped
    for seed in (0, 7):
        frame = simulate(env, blocks, seed, None)
        assert frame.equals(play_steps(env, steps, seed, None))
        _same(blocks, steps)
        assert blocks.privacy_report().to_dict() == steps.privacy_report().to_dict()
    assert blocks.curator.n_releases >= 3
    assert (sum(runs) > 0) == vectorised  # rounds played at once where the rule has vectorised scores


def test_own_data_blocks_give_the_step_paths_numbers(monkeypatch):
    runs = _count_runs(monkeypatch)
    env = gymnasium.make("dpbandit/Digits-v0", horizon=1500)
    for params in ({"epsilon": 1.0}, {"epsilon": 1.0, "rule": "thompson"}):
        blocks, steps = (make_agent("episodic_ridge", env, **params) for _ in range(2))
        assert simulate(env, blocks, 3, None).equals(play_steps(env, steps, 3, None))
        _same(blocks, steps)
    assert any(runs)


@pytest.mark.parametrize("name", ["episodic_ridge", "episodic_glm", "fliphat"])
def test_lockstep_units_give_each_seeds_single_frame(name):
    env = EnvSpec("dpbandit/SparseLogistic-v0", {"horizon": 1200, "dim": 12})
    frames = simulate_batch(env, AgentSpec(name, params={"epsilon": 2.0}), [4, 5, 6], checkpoints=13)
    for seed, frame in zip([4, 5, 6], frames):
        single = gymnasium.make(env.id, **env.kwargs)
        assert frame.equals(play_steps(single, make_agent(name, single, epsilon=2.0), seed, 13))


def _block(obs, rewards, first=1):
    means = np.zeros(rewards.shape)
    return RoundBlock(first, obs, means, rewards, means.max(axis=1))


@pytest.mark.parametrize("params", [{"epsilon": 2.0, "first_episode": 40}, {"epsilon": INF}])
def test_ties_odd_rows_and_refusals_are_the_step_paths(params, monkeypatch):
    """Zero rows (ties: the exploration stream's draws in round order), rows at and a rounding error over the bound,
    rewards beyond the clip; a row over the bound or a NaN reward raises the step path's error."""
    runs = _count_runs(monkeypatch)
    env = gymnasium.make("dpbandit/GLMBandit-v0", n_arms=3, dim=8, horizon=900, **LINF)
    blocks, steps = (make_agent("episodic_ridge", env, **params) for _ in range(2))
    blocks.reset(3)
    steps.reset(3)
    gen = np.random.default_rng(5)
    obs = gen.uniform(-0.4, 0.4, (800, 3, 8))
    obs[::7] = 0.0
    obs[1::9, :, 0] = 0.4
    obs[3::11, :, 1] = 0.4 * (1.0 + 1e-12)
    rewards = gen.normal(0.0, 5.0, (800, 3))
    arms = np.concatenate([blocks.play_block(_block(obs[:300], rewards[:300])),
                           blocks.play_block(_block(obs[300:] * 0.99, rewards[300:], 301))])  # (kept users' checks)
    obs[300:] *= 0.99
    for i in range(800):
        assert arms[i] == steps.act(obs[i])
        steps.update(obs[i], int(arms[i]), rewards[i, arms[i]], {})
    _same(blocks, steps)
    assert any(runs)
    for change, match in (("context", "context_bound"), ("reward", "reward must be")):
        bad_obs, bad_rewards = obs[:30].copy(), rewards[:30].copy()
        if change == "context":
            bad_obs[12] = 0.5
        else:
            bad_rewards[12] = np.nan
        with pytest.raises(ValueError, match=match):
            blocks.play_block(_block(bad_obs, bad_rewards, 801))


@pytest.mark.parametrize("epsilon", [1.0, INF])
def test_a_nan_score_raises_the_step_paths_error(epsilon):
    env = gymnasium.make("dpbandit/GLMBandit-v0", n_arms=2, dim=5, horizon=400)
    agent = make_agent("episodic_ridge", env, epsilon=epsilon)
    agent.reset(0)
    gen = np.random.default_rng(1)
    obs = gen.normal(0.0, 0.05, (50, 2, 5))
    obs[20, 1, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        agent.play_block(_block(obs, gen.normal(size=(50, 2))))


@pytest.mark.parametrize("K, d", [(1, 1), (2, 3), (3, 7), (2, 50), (5, 33), (2, 1000)])
@pytest.mark.parametrize("disjoint", [False, True])
def test_the_runs_clips_and_scores_are_each_rounds(K, d, disjoint):
    """clip_rows and ridge_scores on (m, K, d) rows equal the single round's on (K, d), bit for bit, for the
    environments' layouts (the disjoint rows a broadcast of one context) and for runs starting anywhere."""
    gen = np.random.default_rng(d)
    m = 41
    if disjoint:
        obs = np.broadcast_to(gen.normal(size=(m, 1, d)), (m, K, d))
    else:
        obs = gen.normal(size=(m, K, d))
    theta = gen.normal(size=(K if disjoint else 1, d))
    v_inv = gen.normal(size=(theta.shape[0], d, d))
    v_inv = v_inv @ v_inv.transpose(0, 2, 1)
    radius = 0.8 * np.sqrt(d)
    for start in (0, 3):
        X = obs[start:]
        clipped = clip_rows(X, radius)
        for alpha in (0.0, 0.7):
            scores = ridge_scores(theta, v_inv, alpha, not disjoint, clipped)
            for i in range(len(X)):
                one = clip_rows(np.asarray(X[i], dtype=float), radius)
                assert clipped[i].tobytes() == one.tobytes()
                assert scores[i].tobytes() == ridge_scores(theta, v_inv, alpha, not disjoint, one).tobytes()
                plain = ridge_scores(theta, v_inv, alpha, not disjoint, X[i])
                assert ridge_scores(theta, v_inv, alpha, not disjoint, X)[i].tobytes() == plain.tobytes()


@pytest.mark.parametrize("K, d", [(1, 1), (2, 3), (3, 7), (2, 50), (2, 1000)])
@pytest.mark.parametrize("disjoint", [False, True])
def test_fliphats_block_scores_are_each_rounds(K, d, disjoint):
    """FLIPHAT's greedy scores of a run's rows (m, K, d) equal each round's on its (K, d) rows, bit for bit."""
    gen = np.random.default_rng(d)
    obs = gen.normal(size=(41, K, d))
    release = FLIPHATRelease(gen.normal(size=(K, d) if disjoint else d), None, 1)
    scores = block_scores(release, obs)
    for i in range(len(obs)):
        assert scores[i].tobytes() == greedy_scores(release.theta, obs[i]).tobytes()
        assert block_scores(release, obs[i]).tobytes() == scores[i].tobytes()


def test_observe_rows_is_observe_of_each_row():
    env = gymnasium.make("dpbandit/GLMBandit-v0", n_arms=2, dim=4, horizon=700, **LINF)
    a, b = (make_agent("episodic_ridge", env, epsilon=1.0, first_episode=30) for _ in range(2))
    a.reset(2)
    b.reset(2)
    gen = np.random.default_rng(0)
    X = np.clip(gen.normal(0.0, 0.3, (600, 4)), -0.4, 0.4)
    arms = gen.integers(0, 2, 600)
    rewards = gen.normal(0.0, 3.0, 600)
    t = 0
    while t < 600:
        m = min(600 - t, a.curator.rounds_to_event())
        a.curator.observe_rows(X[t: t + m], arms[t: t + m], rewards[t: t + m])
        t += m
    for x, arm, r in zip(X, arms, rewards):
        obs = np.zeros((2, 4))
        obs[arm] = x
        b.curator.observe(obs, int(arm), float(r))
    a._release, b._release = a.curator.release(), b.curator.release()
    _same(a, b)
    with pytest.raises(ValueError, match="observe_rows takes 1 to"):
        a.curator.observe_rows(X[: a.curator.rounds_to_event() + 1], arms[: a.curator.rounds_to_event() + 1],
                               rewards[: a.curator.rounds_to_event() + 1])


def test_take_hands_out_the_sums_of_a_new_array():
    """The in-place mirror of the sums gives ``G + G^T`` with the diagonal kept, as a new array did."""
    gen = np.random.default_rng(3)
    sums = EpisodeSums(3, 9, gram=True)
    X, models, w = gen.normal(size=(40, 9)), gen.integers(0, 3, 40), gen.normal(size=40)
    sums.absorb(X, models, w)
    lower = sums._gram.copy()
    expected = lower + lower.transpose(0, 2, 1)
    for m in range(3):
        np.fill_diagonal(expected[m], np.diagonal(lower[m]))
    gram, moment, counts = sums.take()
    assert gram.tobytes() == expected.tobytes()
    assert counts.tolist() == np.bincount(models, minlength=3).tolist()
    again, _, _ = sums.take()  # nothing absorbed since: zeros, a new array
    assert again is not gram and not again.any()


def test_pooled_shapes_formed_one_model_at_a_time_are_pool_grams():
    gen = np.random.default_rng(4)
    for K, d in ((2, 6), (3, 40), (5, 9)):
        A = gen.normal(size=(K, d, 2 * d))
        gram = A @ A.transpose(0, 2, 1) + gen.normal(0.0, 2.0, (K, d, d)) * (1 + np.eye(d))
        gram = (gram + gram.transpose(0, 2, 1)) / 2
        b, lam = gen.normal(size=(K, d)), np.full(K, 3.0)
        shape, w = pool_gram(gram, np.ones(K))
        scales, w2 = pooled_shares(gram, np.ones(K))
        assert w.tobytes() == w2.tobytes()
        whole = FlooredRidge(shape, lam, 1.0, draws=True)
        parts = FlooredRidge(gram, lam, 1.0, draws=True, scales=scales, b=b)
        lean = FlooredRidge(gram, lam, 1.0, draws=False, scales=scales, b=b, keep=False)
        assert whole.kinds == parts.kinds == lean.kinds
        theta = whole.solve(b)
        assert theta.tobytes() == parts.theta.tobytes() == lean.theta.tobytes() == parts.solve(b).tobytes()
        assert whole.inverse().tobytes() == parts.inverse().tobytes()
        assert all(x.tobytes() == y.tobytes() for x, y in zip(whole.draw_factor(0.5, np.ones(K)),
                                                            parts.draw_factor(0.5, np.ones(K))))
        with pytest.raises(ValueError, match="keep=False"):
            lean.inverse()


def test_mapped_arrays_are_zeros_that_pickle():
    a = mapped_zeros((3, 4), order="F")
    assert a.flags.f_contiguous and a.dtype == np.float64 and not a.any()
    a[1, 2] = 5.0
    b = pickle.loads(pickle.dumps(a))
    assert b.tobytes() == a.tobytes() and b[1, 2] == 5.0
