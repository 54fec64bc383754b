"""Registered presets: Gymnasium conformance, gymnasium.make overrides, the CLI listing and the paper's Figure 5.1."""

from __future__ import annotations

import importlib
import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import dpbandit.envs
from dpbandit.envs import PRESETS, GLMBanditEnv, registered_envs
from dpbandit.envs.glm import default_kwargs

IDS = sorted(PRESETS)


def test_expected_ids_are_registered():
    assert {"dpbandit/GLMBandit-v0", "dpbandit/SparseLinear-v0", "dpbandit/SparseLogistic-v0",
            "dpbandit/SparseProbit-v0", "dpbandit/SharedLinear-v0", "dpbandit/HanFigure51-K2-v0",
            "dpbandit/HanFigure51-K5-v0"} <= set(gymnasium.registry)


@pytest.mark.parametrize("env_id", IDS)
def test_check_env_passes_without_any_warning(env_id):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env = gymnasium.make(env_id)
        check_env(env.unwrapped)
        env.close()


@pytest.mark.parametrize("overrides", [dict(full_information=True, horizon=50),
                                       dict(structure="shared", contexts="equicorrelated", rho=0.3, horizon=50)])
def test_check_env_passes_for_full_information_and_shared_variants(overrides):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(gymnasium.make("dpbandit/GLMBandit-v0", **overrides).unwrapped)


@pytest.mark.parametrize("env_id", IDS)
def test_make_builds_the_preset_and_accepts_overrides(env_id):
    env = gymnasium.make(env_id, horizon=25, instance_seed=3)
    base = env.unwrapped
    assert isinstance(base, GLMBanditEnv)
    expected = registered_envs()[env_id]
    for key, value in expected.items():
        if key not in ("horizon", "instance_seed") and value is not None:
            assert base.config[key] == value, key
    assert base.constants.horizon == 25 and base.config["instance_seed"] == 3
    env.reset(seed=0)
    truncated = False
    for _ in range(25):
        *_, truncated, _ = env.step(env.action_space.sample())
    assert truncated is True


def test_registered_envs_lists_complete_keyword_arguments():
    envs = registered_envs()
    assert set(PRESETS) <= set(envs)
    for env_id in PRESETS:
        assert set(envs[env_id]) == set(default_kwargs())
        GLMBanditEnv(**envs[env_id])  # every listed configuration is valid
    assert envs["dpbandit/GLMBandit-v0"] == default_kwargs()
    envs["dpbandit/GLMBandit-v0"]["n_arms"] = 99  # a copy: the registry is unchanged
    assert registered_envs()["dpbandit/GLMBandit-v0"]["n_arms"] == 5


def test_registration_is_idempotent_on_reimport():
    specs = {env_id: gymnasium.registry[env_id] for env_id in PRESETS}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # re-registering would warn "Overriding environment"
        importlib.reload(dpbandit.envs)
    assert {env_id: gymnasium.registry[env_id] for env_id in PRESETS} == specs


def test_sync_vector_env():
    envs = gymnasium.make_vec("dpbandit/SharedLinear-v0", num_envs=3, vectorization_mode="sync", horizon=10)
    obs, _ = envs.reset(seed=5)
    assert obs.shape == (3, 10, 20)
    obs, reward, terminated, truncated, info = envs.step(np.array([0, 1, 2]))
    assert reward.shape == (3,) and info["regret"].shape == (3,) and info["_regret"].all()
    single = gymnasium.make("dpbandit/SharedLinear-v0", horizon=10).unwrapped
    single.reset(seed=6)  # the vector env seeds its second sub-environment with seed + 1
    assert reward[1] == single.step(1)[1]
    envs.close()


@pytest.mark.parametrize("k", [2, 5])
def test_han_figure_51_environment(k):
    """spec/han-frank-wolfe.md §8.2 with l_inf contexts (not the l_1 normalisation of defect D7, §9.1)."""
    env = gymnasium.make(f"dpbandit/HanFigure51-K{k}-v0").unwrapped
    c = env.constants
    assert (c.n_arms, c.dim, c.horizon, c.noise_std, c.sparsity) == (k, 50, 10_000, 0.05, 5)
    assert (c.context_norm, c.context_bound, c.theta_norm, c.theta_bound) == ("linf", 1.0, "l1", 1.0)
    assert env.config["context_scale"] == 0.05 and env.config["structure"] == "disjoint"
    per_step = []
    for seed in range(3):
        obs, _ = env.reset(seed=seed)
        # 5-sparse, entries 1/5, support without replacement: ||theta_a||_1 = 1 exactly
        assert np.all(np.count_nonzero(env.theta, axis=1) == 5)
        np.testing.assert_allclose(env.theta[env.theta != 0], 0.2, rtol=1e-15)
        total, obs_norms = 0.0, []
        for _ in range(env.horizon):
            obs_norms.append(np.abs(obs[0]).max())
            obs, _, _, _, info = env.step(0)
            m = info["mean_rewards"]
            total += m.max() - m.mean()  # expected regret of uniformly random play
        np.testing.assert_allclose(obs_norms, 1.0, rtol=1e-15)
        per_step.append(total / env.horizon)
    # §9.1 D7 [measured]: random play loses 0.092 (K=2) / 0.189 (K=5) per step with l_inf contexts (with-
    # replacement supports, ||theta||_1 <= 1), 0.0057 / 0.0117 with the code's l_1 normalisation. Exact l1 norms
    # give slightly more; the windows are +-6 sd of the 3-seed mean over instances.
    low, high = {2: (0.075, 0.12), 5: (0.18, 0.22)}[k]
    assert low < np.mean(per_step) < high


def test_shared_linear_is_the_linucb_model():
    env = gymnasium.make("dpbandit/SharedLinear-v0").unwrapped
    obs, _ = env.reset(seed=0)
    assert env.theta.shape == (20,) and np.linalg.norm(env.theta) == pytest.approx(1.0, rel=1e-14)
    np.testing.assert_allclose(np.linalg.norm(obs, axis=1), 1.0, rtol=1e-14)
    assert len({tuple(row) for row in obs}) == 10  # per-arm feature vectors
    c = env.constants
    assert (c.structure, c.link, c.context_norm, c.theta_norm, c.mean_low, c.mean_high) == (
        "shared", "identity", "l2", "l2", -1.0, 1.0)
