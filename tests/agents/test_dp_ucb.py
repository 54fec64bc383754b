"""DP-UCB (spec/han-frank-wolfe.md §7.4, spec/errata.md E5, E6): calibration known answers, ledger, matrix noise,
reduction to LinUCB with noise off, empirical audit of the release stream, and input validation."""

from __future__ import annotations

import dataclasses
import math

import gymnasium
import numpy as np
import pytest
from scipy import stats

import dpbandit  # noqa: F401  (registers the environments)
from dpbandit.agents import make_agent
from dpbandit.agents.dp_ucb import DPUCB, DPUCBCurator, dpucb_sigma, paper_levels
from dpbandit.agents.base import plays_blocks
from dpbandit.agents.linucb import LinUCB
from dpbandit.envs.blocks import RoundBlock
from dpbandit.envs.constants import BanditConstants
from dpbandit.experiment.checks import check_private_agent
from dpbandit.experiment.loop import play_steps
from dpbandit.experiment.runner import simulate
from dpbandit.privacy.audit import audit
from dpbandit.seeding import stream

Z_1E6 = 4.89  # two-sided normal quantile at p = 1e-6


def constants(K=3, d=4, T=200, structure="shared", norm="l2", bound=1.0, reward=(-1.0, 1.0), noise_std=0.1):
    return BanditConstants(
        n_arms=K, dim=d, horizon=T, structure=structure, link="identity", context_norm=norm, context_bound=bound,
        theta_norm="l2", theta_bound=1.0, sparsity=d, noise_std=noise_std, reward_low=reward[0],
        reward_high=reward[1], mean_low=-1.0, mean_high=1.0,
    )


def exact_epsilon(report) -> float:
    """The analytic-Gaussian (exact) epsilon of a report, chosen or listed among the alternatives."""
    return report.epsilon if "analytic Gaussian" in report.conversion else dict(report.alternatives)["exact"]


def unit_rows(rng, K, d):
    X = rng.normal(size=(K, d))
    return X / np.linalg.norm(X, axis=1, keepdims=True)


# -- calibration known answers (spec/errata.md E6) -------------------------------------------------------------------


def test_node_sigma_known_answers():
    # T = 1e4, epsilon = 1, delta = 1e-4, L = B = 1 (L~^2 = 2): tight 23.8 vs paper 328.3, ratio 13.8
    tight = dpucb_sigma(1.0, 1e-4, 10_000, math.sqrt(2.0), "tight")
    paper = dpucb_sigma(1.0, 1e-4, 10_000, math.sqrt(2.0), "paper")
    assert tight == pytest.approx(23.84, abs=0.005)
    assert paper == pytest.approx(328.32, abs=0.005)
    assert paper / tight == pytest.approx(13.8, abs=0.05)
    # T = 1e5, epsilon = 1, delta = 1e-5: 14.2x smaller
    ratio = dpucb_sigma(1.0, 1e-5, 100_000, 1.0, "paper") / dpucb_sigma(1.0, 1e-5, 100_000, 1.0, "tight")
    assert ratio == pytest.approx(14.2, abs=0.05)
    assert paper_levels(10_000) == 15 and paper_levels(1024) == 11 and paper_levels(1025) == 12
    assert dpucb_sigma(math.inf, 1e-4, 100, 1.0) == 0.0


def test_ledger_reports_configured_epsilon_delta_tight():
    c = constants(T=10_000)
    for eps in (0.5, 1.0, 16.0):
        agent = DPUCB(c, epsilon=eps, delta=1e-4)
        report = agent.privacy_report()
        assert report.guarantee == "JDP" and report.delta == 1e-4
        assert eps * (1 - 1e-3) <= report.epsilon <= eps * (1 + 1e-9)
        assert exact_epsilon(report) == pytest.approx(eps, rel=1e-6)
        assert report.calibration_mode == "correct" and "sigma_n: tight" in report.mechanisms[0]
        assert report.tree_depth == 14 and report.horizon == 10_000
        assert report.sensitivity == pytest.approx(math.sqrt(2.0) * 2.0)  # sqrt(2) L~^2 (E5)
        if eps == 1.0:
            assert agent.cal.sigma_n == report.per_node_sigma == pytest.approx(23.84, abs=0.005)


def test_ledger_paper_calibration_certifies_less_than_configured():
    report = DPUCB(constants(T=10_000), epsilon=1.0, delta=1e-4, calibration="paper").privacy_report()
    assert report.guarantee == "JDP" and report.delta == 1e-4
    assert report.per_node_sigma == pytest.approx(328.32, abs=0.005)
    assert exact_epsilon(report) == pytest.approx(0.0512, abs=5e-4)  # spec/errata.md E6
    assert report.epsilon <= 1.0 and "sigma_n: paper" in report.mechanisms[0]


def test_disjoint_ledger_accounts_the_per_arm_trees_as_one_mechanism():
    report = DPUCB(constants(K=4, T=1000, structure="disjoint"), epsilon=2.0, delta=1e-5).privacy_report()
    assert report.guarantee == "JDP" and len(report.events) == 1
    assert 2.0 * (1 - 1e-3) <= report.epsilon <= 2.0 * (1 + 1e-9)
    assert "4 per-arm blocks on one clock" in report.mechanisms[0] and "which arm" in report.note


def test_noise_off_reports_no_guarantee():
    report = DPUCB(constants(), epsilon=math.inf).privacy_report()
    assert report.guarantee == "none" and report.epsilon == math.inf


def test_linf_contexts_use_sqrt_d_bound_and_unbounded_rewards_are_clipped():
    c = constants(d=9, norm="linf", bound=0.5, reward=(-math.inf, math.inf), noise_std=0.05)
    cal = DPUCB(c, epsilon=1.0).cal
    assert cal.L == pytest.approx(3 * 0.5)
    assert cal.B == pytest.approx(1.0 + 4 * 0.05)  # max |mean| + 4 noise_std
    assert cal.l_tilde == pytest.approx(math.hypot(1.5, 1.2))
    assert DPUCB(c, epsilon=1.0, reward_clip=0.7).cal.B == 0.7
    assert "sqrt(d)" in DPUCB(c, epsilon=1.0).privacy_report().sensitivity_assumption


def test_rewards_are_clipped_before_entering_the_tree():
    c = constants(K=2, d=2, reward=(-math.inf, math.inf))
    agent = DPUCB(c, epsilon=math.inf, reward_clip=0.5)
    obs = np.array([[1.0, 0.0], [0.0, 1.0]])
    agent.update(obs, 0, 1e6, {})
    # ridge with lam = 1 on one sample x = e1, y = B = 0.5: theta_1 = 0.5 / 2
    assert agent._release.theta[0] == pytest.approx([0.25, 0.0])


# -- matrix noise ----------------------------------------------------------------------------------------------------


def test_gram_tree_noise_is_symmetric_with_e5_variances():
    d, K = 12, 2
    c = constants(K=K, d=d, T=8)
    cal = DPUCB(c, epsilon=1.0, delta=1e-3).cal
    obs = unit_rows(np.random.default_rng(0), K, d)
    v = np.append(obs[0], 0.3)
    off, diag, col = [], [], []
    for seed in range(200):
        curator = DPUCBCurator(cal, K, stream(seed, "privacy"))
        curator.observe(obs, 0, 0.3)
        raw = curator.noisy_statistics()[0]
        assert np.array_equal(raw, raw.T)  # exactly symmetric
        # the published release reconstructs the noisy Gram block and response column
        r = curator.release()
        V = r.cholesky[0] @ r.cholesky[0].T
        G = V - cal.shift * np.eye(d)
        noise = G - np.outer(v[:d], v[:d])
        off.append(noise[np.triu_indices(d, 1)])
        diag.append(np.diag(noise))
        col.append(V @ r.theta[0] - v[d] * v[:d])
        np.testing.assert_allclose(noise, (raw - np.outer(v, v))[:d, :d], atol=1e-8 * cal.shift)
    s = cal.sigma_n
    assert stats.kstest(np.concatenate(off) / s, "norm").pvalue > 1e-6  # off-diagonal N(0, sigma_n^2)
    assert stats.kstest(np.concatenate(col) / s, "norm").pvalue > 1e-6
    assert stats.kstest(np.concatenate(diag) / (math.sqrt(2) * s), "norm").pvalue > 1e-6  # diagonal 2 sigma_n^2
    assert stats.kstest(np.concatenate(diag) / s, "norm").pvalue < 1e-6  # the variances differ


def test_releases_are_read_only_and_fresh():
    c = constants(K=3, d=4)
    agent = DPUCB(c, epsilon=1.0)
    rng = np.random.default_rng(1)
    first = agent._release
    agent.update(unit_rows(rng, 3, 4), 1, 0.2, {})
    second = agent._release
    for r in (first, second):
        assert not r.cholesky.flags.writeable and not r.response.flags.writeable and not r.theta.flags.writeable
        with pytest.raises(ValueError):
            r.response[0, 0] = 1.0
        with pytest.raises(dataclasses.FrozenInstanceError):
            r.beta = 0.0
    assert not np.shares_memory(first.response, second.response) and first.t == 0 and second.t == 1
    assert not np.shares_memory(first.cholesky, second.cholesky)


@pytest.mark.parametrize("structure", ["shared", "disjoint"])
def test_conformance(structure):
    env = gymnasium.make("dpbandit/GLMBandit-v0", n_arms=3, dim=5, horizon=60, structure=structure)
    check_private_agent(make_agent("dp_ucb", env, epsilon=2.0), env, n_rounds=30)


def test_disjoint_zero_items_and_shared_clock():
    c = constants(K=3, d=3, structure="disjoint")
    agent = DPUCB(c, epsilon=math.inf)
    obs = np.tile([1.0, 0.0, 0.0], (3, 1))
    agent.update(obs, 2, 1.0, {})
    theta = agent._release.theta
    assert np.all(theta[:2] == 0.0) and theta[2, 0] == pytest.approx(0.5)
    noisy = DPUCB(c, epsilon=1.0)
    before = noisy._release.cholesky.copy()
    noisy.update(obs, 2, 1.0, {})
    assert noisy.curator._noise.t == noisy.curator.t == 1 and noisy.curator.noisy_statistics().shape == (3, 4, 4)  # one clock, 3 blocks
    assert np.all(np.any(noisy._release.cholesky != before, axis=(1, 2)))  # every tree released fresh noise


@pytest.mark.parametrize("structure", ["shared", "disjoint"])
def test_every_release_is_the_trees_noisy_sums_plus_the_shift(structure):
    """Round after round (every node level of the tree closes), the published factors and responses are the tree's
    noisy prefix sums (exact sums of the items plus the path's noise) with the 2 Upsilon + lam shift: the compiled
    kernel computes exactly the release of the mechanism the ledger accounts."""
    K, d, T = 3, 5, 40
    cal = DPUCB(constants(K=K, d=d, T=T, structure=structure), epsilon=1.0, delta=1e-3).cal
    curator = DPUCBCurator(cal, K, np.random.default_rng(0))
    rng, items = np.random.default_rng(1), np.zeros((cal.n_models, d + 1, d + 1))
    for t in range(T):
        obs, arm, y = unit_rows(rng, K, d), int(rng.integers(K)), float(rng.uniform(-1, 1))
        curator.observe(obs, arm, y)
        v = np.append(obs[arm], y)
        items[0 if structure == "shared" else arm] += np.outer(v, v)
        noisy, r = curator.noisy_statistics(), curator.release()
        np.testing.assert_allclose(noisy - items, noisy - items.transpose(0, 2, 1), atol=1e-9)  # the noise is symmetric
        V = r.cholesky @ r.cholesky.transpose(0, 2, 1)
        np.testing.assert_allclose(V, noisy[:, :d, :d] + cal.shift * np.eye(d), rtol=1e-10, atol=1e-8)
        np.testing.assert_allclose(r.response, noisy[:, d, :d], rtol=1e-10, atol=1e-8)
        assert r.t == t + 1 and r.beta == cal.beta(t + 1)
        assert np.allclose(np.triu(r.cholesky, 1), 0.0)  # lower factors
    # the noise is the tree's: about popcount(T) nodes of sd sigma_n per entry, never zero
    assert 0.1 * cal.sigma_n < np.std(noisy - items) < 10 * cal.sigma_n


def test_indefinite_noisy_gram_is_lifted():
    c = constants(K=2, d=6, T=16)
    cal = DPUCB(c, epsilon=0.5, delta=1e-3).cal
    cal = dataclasses.replace(cal, upsilon=0.0, lam=0.0, rho_min=1.0)  # no shift: V_t is pure noise
    curator = DPUCBCurator(cal, 2, np.random.default_rng(0))
    curator.observe(unit_rows(np.random.default_rng(1), 2, 6), 0, 0.5)
    C = curator.release().cholesky[0]
    assert np.linalg.eigvalsh(C @ C.T)[0] == pytest.approx(1.0, rel=1e-6)


def test_same_seed_same_releases_and_privacy_noise_off_the_exploration_stream():
    env = gymnasium.make("dpbandit/GLMBandit-v0", structure="shared", horizon=50, dim=5, normalize="clip",
                         context_scale=0.1)  # contexts of distinct norms: no tie even at t = 1
    a, b = make_agent("dp_ucb", env, epsilon=1.0), make_agent("dp_ucb", env, epsilon=1.0)
    fa, fb = simulate(env, a, seed=4), simulate(env, b, seed=4)
    assert fa.equals(fb)
    np.testing.assert_array_equal(a._release.theta, b._release.theta)
    # continuous contexts: no ties, so the exploration stream is untouched by 50 rounds of privacy noise
    assert a.rng.bit_generator.state == stream(4, "exploration").bit_generator.state
    simulate(env, b, seed=5)
    assert not np.array_equal(a._release.theta, b._release.theta)


# -- noise off = ridge LinUCB ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("structure", ["shared", "disjoint"])
def test_noise_off_is_ridge_linucb_with_the_oful_width(structure):
    """epsilon = inf: theta_hat equals LinUCB's ridge estimate and every action is LinUCB's with alpha = beta_t (one
    of its tied arms on a tie)."""
    K, d, T = 4, 6, 300
    env = gymnasium.make("dpbandit/GLMBandit-v0", n_arms=K, dim=d, horizon=T, structure=structure, noise_std=0.1)
    dp = make_agent("dp_ucb", env, epsilon=math.inf, lam=1.0)
    lin = LinUCB(env.unwrapped.constants, alpha=1.0, lam=1.0)
    obs, _ = env.reset(seed=3)
    dp.reset(3)
    lin.reset(3)
    for t in range(T):
        release = dp._release
        np.testing.assert_allclose(release.theta.reshape(lin.ridge.theta.shape), lin.ridge.theta, atol=1e-9)
        lin.alpha = release.beta
        arm = dp.act(obs)
        scores = lin.scores(obs)
        tied = np.flatnonzero(scores == scores.max())
        # a unique best is LinUCB's arm; a tie (first rounds) each breaks at random by its own draws (LinUCB: the
        # round's uniform, DP-UCB: an integers draw), so DP-UCB's arm must be one of LinUCB's tied arms
        assert arm == tied[0] if tied.size == 1 else arm in tied
        next_obs, reward, _, _, info = env.step(arm)
        dp.update(obs, arm, reward, info)
        lin.update(obs, arm, reward, info)
        obs = next_obs
    assert dp.cal.beta(T) == pytest.approx(
        0.1 * math.sqrt(2 * math.log(2 * T) + d * math.log(1 + T / d)) + 1.0)  # OFUL: rho_min = rho_max = lam


def test_noise_off_regret_matches_linucb_within_sampling_error():
    env = gymnasium.make("dpbandit/SharedLinear-v0", horizon=600, dim=8)
    dp = make_agent("dp_ucb", env, epsilon=math.inf)
    lin = make_agent("linucb", env, alpha=dp.cal.beta(600))
    seeds = range(16)
    a = np.array([simulate(env, dp, s, checkpoints=2)["cumulative_regret"].iloc[-1] for s in seeds])
    b = np.array([simulate(env, lin, s, checkpoints=2)["cumulative_regret"].iloc[-1] for s in seeds])
    se = math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    assert abs(a.mean() - b.mean()) <= Z_1E6 * se
    rnd = np.array([simulate(env, make_agent("random", env), s, checkpoints=2)["cumulative_regret"].iloc[-1]
                    for s in seeds[:4]])
    assert a.mean() < 0.2 * rnd.mean()  # and it learns


# -- empirical audit of the release stream ---------------------------------------------------------------------------


def _released_u(release) -> float:
    """The noisy response sum u (d = 1) reconstructed from a release: V theta_hat."""
    C = release.cholesky[0]
    return float((C @ C.T @ release.theta[0])[0])


def _stream_mechanism(cal):
    """n runs of the real curator on a two-user stream whose first user is ``y1``; the white-box statistic is the
    sum of the released noisy nodes that contain user 1 (T = 2: the releases at t = 1 and t = 2), u entry."""
    obs1, obs2 = np.array([[1.0], [0.5]]), np.array([[1.0], [-0.4]])

    def mechanism(y1, rng, n):
        out = np.empty(n)
        for i in range(n):
            curator = DPUCBCurator(cal, 2, rng)
            curator.observe(obs1, 0, y1)
            u1 = _released_u(curator.release())
            curator.observe(obs2, 1, 0.2)
            out[i] = u1 + _released_u(curator.release())
        return out

    return mechanism


@pytest.mark.slow
def test_audit_finds_no_violation_and_flags_noise_scaled_down_5x():
    # neighbours differ in user 1's reward: v = (1, 1) vs w = (1, -1), ||vv^T - ww^T||_F = 2 sqrt 2 = sqrt(2) L~^2
    c = constants(K=2, d=1, T=2)
    eps, delta = 1.0, 1e-3
    agent = DPUCB(c, epsilon=eps, delta=delta, alpha=0.5)
    claimed = agent.privacy_report().epsilon
    good = audit(_stream_mechanism(agent.cal), 1.0, -1.0, n_samples=15_000, delta=delta,
                 rng=np.random.default_rng(2), confidence=1 - 1e-6)
    assert not good.violates(claimed), str(good)
    assert good.epsilon_lower_bound > 0.2  # the statistic has power (a lower bound only)
    broken = dataclasses.replace(agent.cal, sigma_n=agent.cal.sigma_n / 5)  # built here, never in the library
    bad = audit(_stream_mechanism(broken), 1.0, -1.0, n_samples=4_000, delta=delta,
                rng=np.random.default_rng(3), confidence=1 - 1e-6)
    assert bad.violates(claimed), str(bad)


# -- validation ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({"epsilon": 0.0}, ValueError, "epsilon"),
        ({"epsilon": -1.0}, ValueError, "epsilon"),
        ({"epsilon": math.nan}, ValueError, "epsilon"),
        ({"epsilon": True}, TypeError, "epsilon"),
        ({"delta": 0.0}, ValueError, "delta"),
        ({"delta": 1.0}, ValueError, "delta"),
        ({"delta": 1.5}, ValueError, "delta"),
        ({"delta": -1e-3}, ValueError, "delta"),
        ({"horizon": 199}, ValueError, "horizon"),
        ({"calibration": "published"}, ValueError, "calibration"),
        ({"alpha": 1.0}, ValueError, "alpha"),
        ({"lam": -1.0}, ValueError, "lam"),
        ({"epsilon": math.inf, "lam": 0.0}, ValueError, "lam"),
        ({"reward_clip": 0.0}, ValueError, "reward_clip"),
    ],
)
def test_bad_inputs_raise_naming_the_parameter(kwargs, error, words):
    with pytest.raises(error, match=words):
        DPUCB(constants(T=200), **kwargs)


def test_horizon_must_match_the_environment():
    env = gymnasium.make("dpbandit/SharedLinear-v0", horizon=100)
    assert make_agent("dp_ucb", env, horizon=100).cal.horizon == 100
    with pytest.raises(ValueError, match="horizon must equal the environment's horizon T = 100"):
        make_agent("dp_ucb", env, horizon=1000)
    agent = make_agent("dp_ucb", env)
    obs = unit_rows(np.random.default_rng(0), 10, 20)
    for _ in range(100):
        agent.update(obs, 0, 0.1, {})
    with pytest.raises(ValueError, match="horizon T = 100"):
        agent.update(obs, 0, 0.1, {})


def test_contexts_beyond_the_declared_bound_raise():
    agent = DPUCB(constants(K=2, d=3, norm="l2", bound=1.0), epsilon=1.0)
    with pytest.raises(ValueError, match="context_bound"):
        agent.update(np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]]), 0, 0.0, {})
    linf = DPUCB(constants(K=2, d=3, norm="linf", bound=1.0), epsilon=1.0)
    linf.update(np.array([[1.0, -1.0, 1.0], [0.0, 0.0, 1.0]]), 0, 0.0, {})  # ||x||_2 = sqrt 3 is fine for l_inf
    with pytest.raises(ValueError, match="context_bound"):
        linf.update(np.array([[1.5, 0.0, 0.0], [0.0, 0.0, 1.0]]), 0, 0.0, {})


def test_bad_update_arguments():
    agent = DPUCB(constants(K=2, d=3), epsilon=1.0)
    obs = unit_rows(np.random.default_rng(0), 2, 3)
    with pytest.raises(ValueError, match="arm"):
        agent.update(obs, 2, 0.0, {})
    with pytest.raises(ValueError, match="reward"):
        agent.update(obs, 0, math.nan, {})
    with pytest.raises(ValueError, match="shape"):
        agent.update(obs[:, :2], 0, 0.0, {})
    with pytest.raises(TypeError, match="unknown hyperparameter"):
        make_agent("dp_ucb", gymnasium.make("dpbandit/SharedLinear-v0"), sigma_n=1.0)


def test_updates_take_numpy_and_integer_arms_and_rewards_as_python_ones():
    """The curator passes a Python int arm in range and a float reward straight to its kernel and checks anything
    else first: numpy integers, integer and numpy rewards give the same releases; a refused update counts no user."""
    rng = np.random.default_rng(3)
    data = [(unit_rows(rng, 3, 4), int(rng.integers(3)), float(rng.integers(-1, 2))) for _ in range(20)]
    releases = []
    for cast_arm, cast_reward in ((int, float), (np.int64, int), (np.uint8, np.float64), (int, np.float32)):
        agent = DPUCB(constants(), epsilon=1.0)
        agent.reset(5)
        for obs, arm, reward in data:
            agent.update(obs, cast_arm(arm), cast_reward(reward), {})
        releases.append(agent._release)
    for r in releases[1:]:
        assert r.beta == releases[0].beta
        np.testing.assert_array_equal(r.cholesky, releases[0].cholesky)
        np.testing.assert_array_equal(r.response, releases[0].response)
    agent = DPUCB(constants(), epsilon=1.0)
    for arm, reward, error in ((np.int64(3), 0.0, ValueError), (True, 0.0, TypeError), (-1, 0.0, ValueError),
                               (0, math.inf, ValueError), (0, "1", TypeError), (2**70, 0.0, ValueError)):
        with pytest.raises(error):
            agent.update(data[0][0], arm, reward, {})
    assert agent.curator.t == 0


def test_load_items_refuses_shapes_it_would_read_out_of_bounds():
    from dpbandit.agents.dp_ucb_kernels import load_items

    obs, arms, rewards = np.zeros((2, 3, 4)), np.zeros(2, dtype=np.intp), np.zeros(2)
    with pytest.raises(ValueError, match="load_items"):
        load_items(obs, arms, rewards, -1.0, 1.0, False, np.empty((2, 4)))  # v must be (S, d+1)
    with pytest.raises(ValueError, match="load_items"):
        load_items(obs, np.zeros(1, dtype=np.intp), rewards, -1.0, 1.0, False, np.empty((2, 5)))
    assert load_items(obs, np.array([0, 3]), rewards, -1.0, 1.0, False, np.empty((2, 5))) == np.inf  # arm 3


# -- the block path (issue 25): play_block is act + update round by round, bit for bit ------------------------------


def _steps_and_blocks(env_kwargs, agent_kwargs, seed=3, cal=None):
    """Frames, final releases and stream states of one seed through ``play_steps`` and through blocks."""
    out = []
    for path in ("steps", "blocks"):
        env = gymnasium.make("dpbandit/GLMBandit-v0", **env_kwargs)
        agent = make_agent("dp_ucb", env, **agent_kwargs)
        if cal is not None:
            agent.cal = cal(agent.cal)
        frame = play_steps(env, agent, seed, None) if path == "steps" else simulate(env, agent, seed)
        noise = agent.curator._noise
        out.append((frame, agent.release, agent.rng.bit_generator.state,
                    None if noise is None else (noise.t, noise._rng.bit_generator.state, noise.suffix.copy())))
    return out


@pytest.mark.parametrize("structure,epsilon,calibration", [
    ("shared", 1.0, "tight"), ("disjoint", 1.0, "tight"), ("shared", 0.05, "paper"), ("disjoint", math.inf, "tight"),
    ("shared", math.inf, "tight")])
def test_play_block_is_act_and_update_bit_for_bit(structure, epsilon, calibration):
    # 1100 rounds: two environment blocks, node levels up to 10; in the disjoint form round 1 ties every arm
    env_kwargs = dict(structure=structure, n_arms=4, dim=6, horizon=1100, theta="dense")
    (steps, r1, e1, n1), (blocks, r2, e2, n2) = _steps_and_blocks(env_kwargs, dict(epsilon=epsilon,
                                                                                    calibration=calibration))
    assert plays_blocks(DPUCB) and blocks.equals(steps)
    assert (r1.t, r1.beta) == (r2.t, r2.beta) == (1100, r2.beta)
    np.testing.assert_array_equal(r1.cholesky, r2.cholesky)
    np.testing.assert_array_equal(r1.response, r2.response)
    assert not r2.cholesky.flags.writeable and not r2.response.flags.writeable
    assert e1 == e2 and (structure == "shared" or e1 != stream(3, "exploration").bit_generator.state)  # the ties
    if n1 is not None:
        assert n1[:2] == n2[:2]  # the same node draws from the privacy stream, no more
        np.testing.assert_array_equal(n1[2], n2[2])


@pytest.mark.parametrize("structure", ["shared", "disjoint"])
def test_play_block_lifts_an_indefinite_v_as_update_does(structure):
    def no_shift(cal):  # no 2 Upsilon shift: V_t is mostly noise, lifted in most rounds
        return dataclasses.replace(cal, upsilon=0.0, lam=0.0, rho_min=1.0)

    env_kwargs = dict(structure=structure, n_arms=3, dim=5, horizon=300, theta="dense")
    (steps, r1, _, n1), (blocks, r2, _, n2) = _steps_and_blocks(env_kwargs, dict(epsilon=1.0), cal=no_shift)
    assert blocks.equals(steps) and n1[:2] == n2[:2]
    np.testing.assert_array_equal(r1.cholesky, r2.cholesky)
    C = r2.cholesky[0]
    assert np.linalg.eigvalsh(C @ C.T)[0] == pytest.approx(1.0, rel=1e-6)  # the last round was lifted


def test_play_block_refuses_what_update_refuses():
    c = constants(K=2, d=3, T=10)
    obs = np.zeros((4, 2, 3))
    obs[:, :, 0] = 1.0
    obs[2, :, 1] = 1.0  # round 3: ||x||_2 = sqrt 2 > 1
    block = RoundBlock(1, obs, np.zeros((4, 2)), np.full((4, 2), 0.5), np.zeros(4))
    agent = DPUCB(c, epsilon=1.0)
    agent.reset(0)
    with pytest.raises(ValueError, match=r"\|\|x\|\|_2 = 1.41421 > context_bound = 1"):
        agent.play_block(block)
    assert agent.curator.t == agent.release.t == agent.curator._noise.t == 2  # two users served, the third refused
    bad = RoundBlock(3, obs[:2], np.zeros((2, 2)), np.full((2, 2), np.nan), np.zeros(2))
    with pytest.raises(ValueError, match="reward"):
        agent.play_block(bad)
    with pytest.raises(ValueError, match=r"horizon T = 10 .* cannot serve users 3-14"):
        agent.play_block(RoundBlock(3, np.zeros((12, 2, 3)), np.zeros((12, 2)), np.zeros((12, 2)), np.zeros(12)))
    with pytest.raises(ValueError, match=r"observations \(n, K, d\)"):
        agent.play_block(RoundBlock(3, np.zeros((2, 2, 4)), np.zeros((2, 2)), np.zeros((2, 2)), np.zeros(2)))


def test_play_rounds_refuses_shapes_it_would_read_out_of_bounds():
    from dpbandit.agents.dp_ucb_kernels import DONE, play_rounds

    agent = DPUCB(constants(K=2, d=3, T=4), epsilon=1.0)
    agent.reset(0)
    cur = agent.curator
    P = cur._noise.suffix.shape[1]

    def run(n=2, stop=2, rewards=None, draws=None, t0=0, suffix=None):
        obs = np.zeros((n, 2, 3))
        obs[:, :, 0] = 1.0, 0.5  # arm 0 ahead: no tie
        return play_rounds(obs, np.zeros((n, 2)) if rewards is None else rewards, 0, stop, -1, False, -1.0, 1.0,
                           False, 1.0, np.ones(n + 1), t0, cur._noise.suffix if suffix is None else suffix,
                           np.zeros((n, P)) if draws is None else draws, 0, 1.0, cur._gram, cur._v,
                           cur.release().cholesky.copy(), cur.release().response.copy(), cur._failed, np.empty(2),
                           np.empty(n, dtype=np.intp))

    for bad in (dict(rewards=np.zeros((2, 3))), dict(stop=3), dict(draws=np.zeros((1, P))),
                dict(draws=np.zeros((2, P - 1))), dict(t0=6)):  # user 8's node is beyond a tree of T = 4
        with pytest.raises(ValueError, match="play_rounds"):
            run(**bad)
    assert run() == (2, DONE)
