"""GLMBanditVectorEnv: S seeds stepped together give every seed exactly the single-seed environment's values."""

import gymnasium
import numpy as np
import pytest

import dpbandit.envs  # noqa: F401
from dpbandit.envs import GLMBanditEnv, GLMBanditVectorEnv

KW = {"n_arms": 3, "dim": 70, "horizon": 700, "theta": "dense"}  # several pre-generated blocks (d = 70)


@pytest.mark.parametrize("extra", [{"structure": "disjoint"}, {"structure": "shared", "full_information": True},
                                   {"link": "logistic"}])
def test_every_seed_sees_the_single_environment_bit_for_bit(extra):
    kwargs = {**KW, **extra}
    seeds = [4, 0, 9]
    vec = gymnasium.make_vec("dpbandit/GLMBandit-v0", num_envs=3, vectorization_mode="vector_entry_point", **kwargs)
    assert isinstance(vec, GLMBanditVectorEnv) and vec.observation_space.shape == (3, 3, 70)
    singles = [GLMBanditEnv(**kwargs) for _ in seeds]
    obs, _ = vec.reset(seed=seeds)
    single_obs = [env.reset(seed=s)[0] for env, s in zip(singles, seeds)]
    rng = np.random.default_rng(0)
    for t in range(kwargs["horizon"]):
        assert all(np.array_equal(obs[s], single_obs[s]) for s in range(3))
        if kwargs.get("structure") == "disjoint":
            assert obs.strides[1] == 0 == single_obs[0].strides[0]  # the single layout: one context on every arm
        actions = rng.integers(0, 3, size=3)
        obs, rewards, terminated, truncated, infos = vec.step(actions)
        for s, env in enumerate(singles):
            single_obs[s], reward, _, trunc, info = env.step(int(actions[s]))
            assert rewards[s] == reward and truncated[s] == trunc and not terminated[s]
            assert infos["regret"][s] == info["regret"] and infos["optimal_arm"][s] == info["optimal_arm"]
            assert np.array_equal(infos["mean_rewards"][s], info["mean_rewards"])
            if "rewards" in info:
                assert np.array_equal(infos["rewards"][s], info["rewards"])
    assert truncated.all() and not obs.any()
    with pytest.raises(RuntimeError, match="after the episode ended"):
        vec.step(np.zeros(3, dtype=int))


def test_int_seed_follows_gymnasiums_convention_and_bad_actions_are_refused():
    vec = GLMBanditVectorEnv(2, **KW)
    with pytest.raises(RuntimeError, match="before reset"):
        vec.step([0, 0])
    obs, _ = vec.reset(seed=10)
    assert np.array_equal(obs[1], GLMBanditEnv(**KW).reset(seed=11)[0])
    for bad in ([0, 3], [0], [0.0, 1.0], [-1, 0], [True, False], np.array([-1, 0], dtype=np.int8),
                np.array([0, 2**64 - 1], dtype=np.uint64), np.array([0, 3], dtype=np.uint8)):
        with pytest.raises(ValueError, match=r"actions must be 2 integers in \[0, 2\]"):
            vec.step(bad)
    _, rewards, *_ = vec.step(np.array([2, 1], dtype=np.uint8))  # any integer dtype in range is accepted
    assert rewards.shape == (2,)
    with pytest.raises(ValueError, match="list of 2 seeds"):
        vec.reset(seed=[1, 2, 3])
    with pytest.raises(ValueError, match="num_envs"):
        GLMBanditVectorEnv(0, **KW)
    with pytest.raises(ValueError, match="one configuration"):
        GLMBanditVectorEnv.from_envs([GLMBanditEnv(**KW), GLMBanditEnv(**{**KW, "dim": 5})])
    vec.close()
