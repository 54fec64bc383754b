"""GLMBanditEnv: model, info, seeding, common random numbers, episodes, constants and input validation."""

from __future__ import annotations

import copy
import math
import pickle

import numpy as np
import pytest

from dpbandit.envs import BanditConstants, GLMBanditEnv
from dpbandit.envs.contexts import draw_contexts, normalise
from dpbandit.envs.links import clipped_gaussian_mean, get_link
from dpbandit.envs.parameters import dense_theta, norm_of, sparse_theta
from dpbandit.seeding import stream

SMALL = dict(n_arms=4, dim=6, horizon=40)


def play(env, seed, actions=None, rounds=None):
    """Run an episode with a fixed action sequence (default: round robin); return stacked trajectories."""
    obs, info = env.reset(seed=seed)
    assert info == {}
    rounds = env.horizon if rounds is None else rounds
    out = {"obs": [], "reward": [], "mean_rewards": [], "optimal_arm": [], "regret": [], "rewards": [], "arm": []}
    for t in range(rounds):
        a = int(actions[t]) if actions is not None else t % env.n_arms
        out["obs"].append(np.array(obs))
        obs, reward, terminated, truncated, info = env.step(a)
        assert terminated is False and truncated is (t + 1 == env.horizon)
        out["arm"].append(a)
        out["reward"].append(reward)
        for key in ("mean_rewards", "optimal_arm", "regret", "rewards"):
            if key in info:
                out[key].append(np.array(info[key]))
    return {k: np.array(v) for k, v in out.items()}


CONFIGS = [
    dict(),
    dict(structure="shared", theta="dense", theta_norm="l2", contexts="sphere"),
    dict(link="logistic", context_norm="linf", theta_bound=3.0),
    dict(link="probit", structure="shared", contexts="ar", rho=0.7),
    dict(contexts="equicorrelated", rho=-0.1, reward_clip=0.3, noise_std=0.5),
]


# ---------------------------------------------------------------- model and info
@pytest.mark.parametrize("config", CONFIGS)
def test_info_describes_the_round_just_played(config):
    env = GLMBanditEnv(**SMALL, **config)
    arms = stream(0, "exploration").integers(0, env.n_arms, env.horizon)
    run = play(env, 3, arms)
    link = get_link(env.config["link"])
    for t in range(env.horizon):
        x, means, a = run["obs"][t], run["mean_rewards"][t], run["arm"][t]
        assert x.shape == (env.n_arms, env.dim) and x in env.observation_space
        np.testing.assert_array_equal(env.expected_rewards(x), means)  # bitwise: the Oracle sees the same means
        theta = env.theta if env.theta.ndim == 2 else np.broadcast_to(env.theta, x.shape)
        model = link(np.array([x[k] @ theta[k] for k in range(env.n_arms)]))
        if env.config["reward_clip"] is not None:
            model = clipped_gaussian_mean(model, env.config["noise_std"], env.config["reward_clip"])
        np.testing.assert_allclose(means, model, rtol=1e-12, atol=1e-15)
        assert run["optimal_arm"][t] == np.argmax(means)
        assert run["regret"][t] == means.max() - means[a] >= 0.0
    if env.config["structure"] == "disjoint":
        assert np.all(run["obs"] == run["obs"][:, :1, :])  # every row is x_t
    else:
        assert not np.all(run["obs"] == run["obs"][:, :1, :])  # per-arm feature vectors


def test_oracle_choice_has_zero_regret_and_others_positive():
    env = GLMBanditEnv(n_arms=6, dim=10, horizon=300)
    obs, _ = env.reset(seed=8)
    for _ in range(env.horizon):
        best = int(np.argmax(env.expected_rewards(obs)))
        obs, _, _, _, info = env.step(best)
        assert info["regret"] == 0.0 and info["optimal_arm"] == best
    env.reset(seed=8)
    regrets = [env.step(0)[4]["regret"] for _ in range(env.horizon)]
    assert np.mean(regrets) > 0.05


def test_returned_arrays_are_read_only():
    env = GLMBanditEnv(**SMALL, full_information=True)
    obs, _ = env.reset(seed=0)
    _, _, _, _, info = env.step(0)
    for array in (obs, info["mean_rewards"], info["rewards"], env.theta):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 1.0


# ---------------------------------------------------------------- contexts and parameters
@pytest.mark.parametrize("context_norm", ["l2", "linf"])
@pytest.mark.parametrize("structure", ["disjoint", "shared"])
def test_scaled_contexts_have_norm_exactly_the_bound(context_norm, structure):
    env = GLMBanditEnv(**SMALL, context_norm=context_norm, context_bound=2.5, structure=structure,
                       contexts="ar", context_scale=0.05)
    obs = play(env, 1)["obs"]
    np.testing.assert_allclose(norm_of(obs, context_norm), 2.5, rtol=1e-14)
    assert np.all(np.abs(obs) <= 2.5)


@pytest.mark.parametrize("context_norm", ["l2", "linf"])
def test_clipped_contexts_lie_in_the_ball_and_inner_ones_are_untouched(context_norm):
    env = GLMBanditEnv(n_arms=3, dim=8, horizon=400, normalize="clip", context_norm=context_norm, context_bound=1.0,
                       context_scale=0.4, structure="shared", theta="dense", theta_norm="l2")
    obs = play(env, 2)["obs"]
    raw = draw_contexts(stream(2, "contexts"), (400, 3), 8, "gaussian", scale=0.4)
    norms = norm_of(raw, context_norm)
    inside = norms <= 1.0
    assert 0 < inside.sum() < inside.size  # both cases occur
    np.testing.assert_array_equal(obs[inside], raw[inside])
    assert np.all(norm_of(obs, context_norm) <= 1.0 + 1e-15)
    if context_norm == "l2":
        np.testing.assert_allclose(norm_of(obs[~inside], "l2"), 1.0, rtol=1e-14)
    else:
        np.testing.assert_array_equal(obs[~inside], np.clip(raw[~inside], -1, 1))


@pytest.mark.parametrize("theta_norm", ["l1", "l2"])
def test_sparse_theta_of_the_instance(theta_norm):
    env = GLMBanditEnv(n_arms=7, dim=30, horizon=5, sparsity=4, theta_norm=theta_norm, theta_bound=1.5)
    env.reset(seed=4)
    assert env.theta.shape == (7, 30)
    assert np.all(np.count_nonzero(env.theta, axis=1) == 4)
    np.testing.assert_allclose(norm_of(env.theta, theta_norm), 1.5, rtol=1e-14)
    default = GLMBanditEnv(dim=3, horizon=2)
    default.reset(seed=0)
    assert default.constants.sparsity == 3 and np.all(np.count_nonzero(default.theta, axis=1) == 3)


def test_dense_shared_theta():
    env = GLMBanditEnv(**SMALL, structure="shared", theta="dense", theta_norm="l2", theta_bound=2.0)
    env.reset(seed=4)
    assert env.theta.shape == (6,) and np.all(env.theta != 0)
    assert np.linalg.norm(env.theta) == pytest.approx(2.0, rel=1e-14)
    assert env.constants.sparsity == 6


# ---------------------------------------------------------------- rewards
def test_gaussian_reward_noise_has_the_stated_std():
    env = GLMBanditEnv(n_arms=5, dim=10, horizon=4000, noise_std=0.3, full_information=True)
    run = play(env, 6)
    residual = (run["rewards"] - run["mean_rewards"]).ravel()  # 20,000 i.i.d. N(0, 0.09)
    n = residual.size
    assert abs(residual.mean()) < 6 * 0.3 / math.sqrt(n)
    assert abs(residual.var() / 0.09 - 1) < 6 * math.sqrt(2 / n)


@pytest.mark.parametrize("link", ["logistic", "probit"])
def test_bernoulli_rewards_have_the_stated_means(link):
    env = GLMBanditEnv(n_arms=5, dim=10, horizon=4000, link=link, theta_bound=4.0, full_information=True)
    run = play(env, 7)
    rewards, means = run["rewards"], run["mean_rewards"]
    assert set(np.unique(rewards)) <= {0.0, 1.0}
    assert means.min() < 0.2 and means.max() > 0.8  # the test covers a wide range of means
    sd = math.sqrt(np.sum(means * (1 - means)))
    assert abs(np.sum(rewards - means)) < 6 * sd
    high, low = means > 0.7, means < 0.3  # calibration in two regions
    assert abs(np.sum(rewards[high] - means[high])) < 6 * math.sqrt(np.sum(means[high] * (1 - means[high])))
    assert abs(np.sum(rewards[low] - means[low])) < 6 * math.sqrt(np.sum(means[low] * (1 - means[low])))


def test_clipped_rewards_and_their_means():
    env = GLMBanditEnv(n_arms=4, dim=5, horizon=5000, noise_std=1.0, reward_clip=0.5, full_information=True)
    run = play(env, 9)
    rewards, means = run["rewards"], run["mean_rewards"]
    assert rewards.min() == -0.5 and rewards.max() == 0.5
    assert abs(np.sum(rewards - means)) < 6 * 0.5 * math.sqrt(rewards.size)  # |reward| <= 0.5
    assert env.constants.reward_low == -0.5 and env.constants.reward_high == 0.5


def test_zero_noise_rewards_equal_the_means():
    env = GLMBanditEnv(**SMALL, noise_std=0.0, full_information=True)
    run = play(env, 0)
    np.testing.assert_array_equal(run["rewards"], run["mean_rewards"])


# ---------------------------------------------------------------- seeding
def test_same_seed_gives_identical_episodes_and_different_seeds_differ():
    for config in CONFIGS:
        arms = stream(1, "exploration").integers(0, 4, 40)
        a = play(GLMBanditEnv(**SMALL, **config, full_information=True), 11, arms)
        b = play(GLMBanditEnv(**SMALL, **config, full_information=True), 11, arms)
        c = play(GLMBanditEnv(**SMALL, **config, full_information=True), 12, arms)
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])
        assert not np.array_equal(a["obs"], c["obs"]) and not np.array_equal(a["rewards"], c["rewards"])


def test_streams_are_the_named_seed_streams():
    env = GLMBanditEnv(n_arms=3, dim=7, horizon=10, noise_std=0.2, context_norm="linf", full_information=True)
    run = play(env, 21)
    theta = sparse_theta(stream(21, "instance"), 3, 7, 5, "equal", "l1", 1.0)
    np.testing.assert_array_equal(env.theta, theta)
    x = normalise(draw_contexts(stream(21, "contexts"), 10, 7), "linf", 1.0, "scale")
    np.testing.assert_array_equal(run["obs"][:, 0, :], x)
    noise = 0.2 * stream(21, "reward_noise").standard_normal((10, 3))
    np.testing.assert_allclose(run["rewards"], run["mean_rewards"] + noise, rtol=0, atol=1e-15)


def test_instance_seed_fixes_theta_while_contexts_follow_the_reset_seed():
    env = GLMBanditEnv(**SMALL, instance_seed=5, structure="shared", theta="dense")
    theta = dense_theta(stream(5, "instance"), 1, 6, "l1", 1.0)[0]
    np.testing.assert_array_equal(env.theta, theta)  # drawn at construction
    first = play(env, 1)
    np.testing.assert_array_equal(env.theta, theta)
    second = play(env, 2)
    np.testing.assert_array_equal(env.theta, theta)
    assert not np.array_equal(first["obs"], second["obs"])
    other = GLMBanditEnv(**SMALL, instance_seed=5, structure="shared", theta="dense")
    np.testing.assert_array_equal(play(other, 2)["reward"], second["reward"])
    unfixed = GLMBanditEnv(**SMALL, structure="shared", theta="dense")
    unfixed.reset(seed=1)
    theta_1 = unfixed.theta
    unfixed.reset(seed=2)
    assert not np.array_equal(theta_1, unfixed.theta)


def test_full_information_rewards_equal_bandit_rewards_whatever_was_played_before():
    arms_a = stream(2, "exploration").integers(0, 4, 40)
    arms_b = (arms_a + 1) % 4
    full = play(GLMBanditEnv(**SMALL, full_information=True), 30, arms_b)
    bandit_a = play(GLMBanditEnv(**SMALL), 30, arms_a)
    bandit_b = play(GLMBanditEnv(**SMALL), 30, arms_b)
    np.testing.assert_array_equal(bandit_a["reward"], full["rewards"][np.arange(40), arms_a])
    np.testing.assert_array_equal(bandit_b["reward"], full["rewards"][np.arange(40), arms_b])
    np.testing.assert_array_equal(bandit_a["obs"], bandit_b["obs"])  # contexts never depend on the agent
    assert "rewards" not in GLMBanditEnv(**SMALL).reset(seed=0)[1] and not bandit_a["rewards"].size


@pytest.mark.parametrize("structure", ["disjoint", "shared"])
def test_block_size_and_horizon_do_not_change_results(structure):
    config = dict(n_arms=3, dim=5, structure=structure, full_information=True, link="logistic")
    reference = play(GLMBanditEnv(**config, horizon=50), 4)
    small_blocks = GLMBanditEnv(**config, horizon=50)
    small_blocks.block_size = 7
    longer = play(GLMBanditEnv(**config, horizon=500), 4, rounds=50)
    for other in (play(small_blocks, 4), longer):
        for key in ("obs", "reward", "rewards", "mean_rewards", "regret"):
            np.testing.assert_array_equal(other[key], reference[key])


def test_unseeded_reset_continues_the_streams_with_the_same_instance():
    def two_episodes():
        env = GLMBanditEnv(**SMALL)
        first = play(env, 3)
        theta = env.theta
        obs, _ = env.reset()
        assert env.theta is theta
        return first["obs"][0], np.array(obs)

    first_a, second_a = two_episodes()
    first_b, second_b = two_episodes()
    np.testing.assert_array_equal(second_a, second_b)  # deterministic continuation
    assert not np.array_equal(first_a, second_a)  # a new episode, not a replay


def test_reset_without_any_seed_uses_fresh_entropy():
    a, b = GLMBanditEnv(**SMALL), GLMBanditEnv(**SMALL)
    assert not np.array_equal(a.reset()[0], b.reset()[0])


# ---------------------------------------------------------------- episodes and actions
def test_truncation_at_the_horizon_and_stepping_after_the_end():
    env = GLMBanditEnv(n_arms=2, dim=3, horizon=3)
    with pytest.raises(RuntimeError, match=r"step\(\) called before reset\(\)"):
        env.step(0)
    env.reset(seed=0)
    flags = [env.step(1)[2:4] for _ in range(3)]
    assert flags == [(False, False), (False, False), (False, True)]
    with pytest.raises(RuntimeError, match=r"after the episode ended at round T=3: call reset\(\)"):
        env.step(0)
    env.reset()
    assert env.step(0)[3] is False


def test_single_round_horizon():
    env = GLMBanditEnv(n_arms=2, dim=1, horizon=1)
    env.reset(seed=0)
    obs, reward, terminated, truncated, _ = env.step(1)
    assert truncated is True and terminated is False and obs in env.observation_space and isinstance(reward, float)


@pytest.mark.parametrize("action", [4, -1, 1.0, 1.5, True, "0", None, np.float64(2.0)])
def test_invalid_actions_are_rejected(action):
    env = GLMBanditEnv(**SMALL)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"action must be an integer in \[0, 3\]"):
        env.step(action)


def test_numpy_integer_actions_are_accepted():
    env = GLMBanditEnv(**SMALL)
    env.reset(seed=0)
    env.step(np.int64(3))
    env.step(np.array(2))


def test_expected_rewards_checks_its_input():
    env = GLMBanditEnv(**SMALL)
    with pytest.raises(RuntimeError, match="theta is not drawn yet"):
        env.expected_rewards(np.zeros((4, 6)))
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"observation must have shape \(n_arms, dim\) = \(4, 6\), got \(6,\)"):
        env.expected_rewards(np.zeros(6))


def test_reset_options_are_rejected():
    with pytest.raises(ValueError, match="options must be None or empty"):
        GLMBanditEnv(**SMALL).reset(seed=0, options={"horizon": 3})


# ---------------------------------------------------------------- constants
def test_constants_are_complete_and_follow_hoelder():
    env = GLMBanditEnv(n_arms=3, dim=9, horizon=77, sparsity=4, theta_norm="l2", theta_bound=2.0,
                       context_norm="linf", context_bound=0.5, noise_std=0.2)
    c = env.constants
    assert isinstance(c, BanditConstants)
    assert (c.n_arms, c.dim, c.horizon, c.structure, c.link, c.sparsity) == (3, 9, 77, "disjoint", "identity", 4)
    assert (c.context_norm, c.context_bound, c.theta_norm, c.theta_bound, c.noise_std) == ("linf", 0.5, "l2", 2.0, 0.2)
    # |x.theta| <= ||x||_inf ||theta||_1 <= 0.5 * sqrt(4) * 2
    assert (c.mean_low, c.mean_high) == (-2.0, 2.0)
    assert (c.reward_low, c.reward_high) == (-math.inf, math.inf)
    assert None not in c.to_dict().values()


@pytest.mark.parametrize(
    "config,mean_bound",
    [(dict(context_norm="l2", theta_norm="l1"), 1.5), (dict(context_norm="l2", theta_norm="l2"), 1.5),
     (dict(context_norm="linf", theta_norm="l1"), 1.5), (dict(context_norm="linf", theta_norm="l2"), 1.5 * 3)],
)
def test_mean_bounds_for_every_norm_pair_hold(config, mean_bound):
    env = GLMBanditEnv(n_arms=2, dim=9, horizon=2000, sparsity=9, theta_bound=1.5, contexts="sphere", **config)
    assert (env.constants.mean_low, env.constants.mean_high) == (-mean_bound, mean_bound)
    means = play(env, 0)["mean_rewards"]
    assert np.all(np.abs(means) <= mean_bound)


def test_bernoulli_and_clipped_constants():
    logistic = GLMBanditEnv(**SMALL, link="logistic", theta_bound=2.0).constants
    assert logistic.noise_std == 0.0 and (logistic.reward_low, logistic.reward_high) == (0.0, 1.0)
    assert logistic.mean_low == pytest.approx(1 / (1 + math.exp(2.0))) and logistic.mean_high == pytest.approx(
        1 / (1 + math.exp(-2.0)))
    probit = GLMBanditEnv(**SMALL, link="probit").constants
    assert probit.mean_high == pytest.approx(0.8413447460685429, rel=1e-14)
    clipped = GLMBanditEnv(**SMALL, theta_bound=2.0, noise_std=0.5, reward_clip=1.0).constants
    assert (clipped.reward_low, clipped.reward_high, clipped.reward_bound) == (-1.0, 1.0, 1.0)
    assert clipped.mean_high == pytest.approx(float(clipped_gaussian_mean(np.array(2.0), 0.5, 1.0)))
    assert 0.9 < clipped.mean_high < 1.0
    noiseless = GLMBanditEnv(**SMALL, noise_std=0).constants
    assert (noiseless.reward_low, noiseless.reward_high) == (-1.0, 1.0)
    assert GLMBanditEnv(**SMALL).constants.noise_std == 0.1  # the identity link's default


# ---------------------------------------------------------------- input validation
BAD_INPUT = [
    (dict(n_arms=1), ValueError, r"n_arms must be an integer >= 2, got 1"),
    (dict(n_arms=2.0), TypeError, r"n_arms must be an integer"),
    (dict(dim=0), ValueError, r"dim must be an integer >= 1, got 0"),
    (dict(horizon=0), ValueError, r"horizon must be an integer >= 1, got 0"),
    (dict(structure="joint"), ValueError, r"structure must be one of \('disjoint', 'shared'\), got 'joint'"),
    (dict(link="cloglog"), ValueError, r"link must be one of \('identity', 'logistic', 'probit'\), got 'cloglog'"),
    (dict(noise_std=-0.1), ValueError, r"noise_std must be a finite number >= 0, got -0.1"),
    (dict(noise_std=float("nan")), ValueError, r"noise_std must be a number >= 0, got nan"),
    (dict(noise_std=float("inf")), ValueError, r"noise_std must be a finite number >= 0, got inf"),
    (dict(link="logistic", noise_std=0.1), ValueError, r"noise_std must be None or 0 for the 'logistic' link"),
    (dict(theta="diffuse"), ValueError, r"theta must be one of \('sparse', 'dense'\), got 'diffuse'"),
    (dict(sparsity=0), ValueError, r"sparsity must be an integer in \[1, 20\], got 0"),
    (dict(sparsity=21), ValueError, r"sparsity must be an integer in \[1, 20\], got 21"),
    (dict(theta="dense", sparsity=5), ValueError, r"sparsity must be None or dim=20 for dense parameters, got 5"),
    (dict(theta_values="bogus"), ValueError, r"theta_values must be one of \('equal', 'gaussian', 'uniform'\)"),
    (dict(theta="dense", theta_values="equal"), ValueError, r"theta_values must be None or 'gaussian' for dense"),
    (dict(theta_norm="linf"), ValueError, r"theta_norm must be one of \('l1', 'l2'\), got 'linf'"),
    (dict(theta_bound=0.0), ValueError, r"theta_bound must be a finite number > 0, got 0.0"),
    (dict(contexts="uniform"), ValueError,
     r"contexts must be one of \('gaussian', 'ar', 'equicorrelated', 'sphere'\), got 'uniform'"),
    (dict(context_scale=-1.0), ValueError, r"context_scale must be a finite number > 0, got -1.0"),
    (dict(contexts="ar", rho=1.0), ValueError, r"rho must be a finite number in \(-1, 1\) for the 'ar' context law"),
    (dict(contexts="equicorrelated", rho=-0.1), ValueError,
     r"rho must be a finite number in \(-1/\(d-1\), 1\) = \(-0.0526316, 1\) for the 'equicorrelated' context law"),
    (dict(rho=float("nan")), ValueError, r"rho must be a number, got nan"),
    (dict(context_norm="l1"), ValueError, r"context_norm must be one of \('l2', 'linf'\), got 'l1'"),
    (dict(context_bound=0.0), ValueError, r"context_bound must be a finite number > 0, got 0.0"),
    (dict(context_bound=-2), ValueError, r"context_bound must be a finite number > 0, got -2.0"),
    (dict(normalize="project"), ValueError, r"normalize must be one of \('scale', 'clip'\), got 'project'"),
    (dict(reward_clip=0.0), ValueError, r"reward_clip must be a finite number > 0, got 0.0"),
    (dict(link="probit", reward_clip=1.0), ValueError, r"reward_clip must be None for the 'probit' link"),
    (dict(full_information="yes"), TypeError, r"full_information must be a bool, got 'yes'"),
    (dict(instance_seed=-1), ValueError, r"instance_seed must be an integer >= 0, got -1"),
]


@pytest.mark.parametrize("kwargs,error,match", BAD_INPUT, ids=[str(k) for k, _, _ in BAD_INPUT])
def test_bad_input_is_rejected_with_a_message_naming_the_parameter(kwargs, error, match):
    with pytest.raises(error, match=match):
        GLMBanditEnv(**kwargs)


def test_unknown_keyword_is_rejected():
    with pytest.raises(TypeError, match="unexpected keyword argument 'n_actions'"):
        GLMBanditEnv(n_actions=3)


def test_copies_and_pickles_continue_the_episode_identically():
    env = GLMBanditEnv(n_arms=3, dim=4, horizon=2000, full_information=True)
    env.reset(seed=3)
    for _ in range(1500):  # mid-way through the second block
        env.step(0)
    twins = [copy.deepcopy(env), pickle.loads(pickle.dumps(env))]
    for _ in range(500):
        obs, reward, _, _, info = env.step(2)
        for twin in twins:
            twin_obs, twin_reward, _, _, twin_info = twin.step(2)
            assert twin_reward == reward
            np.testing.assert_array_equal(twin_obs, obs)
            np.testing.assert_array_equal(twin_info["rewards"], info["rewards"])
