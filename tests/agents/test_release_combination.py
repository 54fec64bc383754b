"""Episodic ridge part 2 (dpbandit/agents/release_combination.py, the weighted mode and centring of
dpbandit/agents/episodic_ridge.py; docs/episodic-agents.md §6; spec/episodic-part2-hard-problems.md §1, §5):
optimal weights against a numerical minimisation, known answers, the noise-off limit (ridge on every user; the same
actions as greedy), the single-release and equal-weight limits, the regulariser's tail bound by simulation, the
combination reads released arrays only, and audits of the centred release that catch a planted x0.5 noise."""

from __future__ import annotations

import inspect
import math

import gymnasium
import numpy as np
import pytest
from scipy import optimize

import dpbandit  # noqa: F401  (registers the environments)
from dpbandit.agents import make_agent
from dpbandit.agents.episodic_ridge import EpisodicRidge
from dpbandit.agents.release_combination import ReleaseCombination, combination_weights, noise_regulariser
from dpbandit.envs.constants import BanditConstants
from dpbandit.experiment.checks import check_agent, check_private_agent
from dpbandit.privacy.noise import SymmetricGaussianNoise
from tests.agents.ridge_audit import audit_release_pair


def constants(K=2, d=2, T=100, structure="shared", reward=(0.0, 1.0), theta_bound=1.0, link="logistic"):
    return BanditConstants(
        n_arms=K, dim=d, horizon=T, structure=structure, link=link, context_norm="l2", context_bound=1.0,
        theta_norm="l2", theta_bound=theta_bound, sparsity=d, noise_std=0.0, reward_low=reward[0],
        reward_high=reward[1], mean_low=reward[0], mean_high=reward[1],
    )


# -- the weights -----------------------------------------------------------------------------------------------------


def test_weights_minimise_the_first_order_variance():
    """Closed form w_k ~ t_k / (v t_k + tau^2) against a numerical minimisation of
    sum w_k^2 (v t_k + tau^2) / (sum w_k t_k)^2 (an independent computation)."""
    rng = np.random.default_rng(0)
    for _ in range(5):
        t = rng.uniform(0.5, 50.0, size=5)
        v, tau2 = rng.uniform(0.1, 1.0), rng.uniform(0.0, 100.0)

        def variance(w):
            return float(np.sum(w**2 * (v * t + tau2)) / np.sum(w * t) ** 2)

        best = optimize.minimize(variance, np.ones(5), bounds=[(1e-9, None)] * 5, method="L-BFGS-B",
                                 options={"ftol": 1e-15, "gtol": 1e-12}).x
        grams = t[:, None, None] * np.eye(3)  # tr / d = t
        w = combination_weights(grams, v, tau2)
        np.testing.assert_allclose(w / w.max(), best / best.max(), rtol=1e-4)
        assert variance(w) <= variance(np.ones(5)) + 1e-15 and variance(w) <= variance(np.eye(5)[-1]) + 1e-15


@pytest.mark.parametrize("ell, ratio", [(1, 1.118), (2, 1.146), (3, 1.152), (4, 1.154)])
def test_noise_dominated_doubling_gains_the_known_snr_over_forget(ell, ratio):
    """spec §5: with tau^2 >> v t_k the weights are ~ t_k = 2^k and the signal-to-noise ratio
    sum w_k t_k / ||w||_2 is sqrt(sum_k 4^k) = (1.118, 1.146, 1.152, 1.154) x t_ell (forget: t_ell)."""
    comb = ReleaseCombination(1, 4, v_y=0.25, tau2=1e12)
    for k in range(ell + 1):
        gram, moment, w_norm = comb.add(2.0**k * np.eye(4)[None], np.zeros((1, 4)))
    snr = np.trace(gram[0]) / 4 / w_norm[0] / 2.0**ell
    assert snr == pytest.approx(ratio, abs=5e-4)
    assert snr == pytest.approx(math.sqrt(sum(4.0**k for k in range(ell + 1))) / 2.0**ell, rel=1e-9)


def test_limits_noise_off_single_release_and_equal_weights():
    rng = np.random.default_rng(1)
    grams = [SymmetricGaussianNoise(1.0).sample(rng, (2, 3, 3)) + 5 * np.eye(3) for _ in range(3)]
    moments = [rng.normal(size=(2, 3)) for _ in range(3)]
    off = ReleaseCombination(2, 3, v_y=0.25, tau2=0.0)  # noise off: weights exactly 1, plain sums
    for g, b in zip(grams, moments):
        G, bb, w_norm = off.add(g, b)
    np.testing.assert_array_equal(G, grams[0] + grams[1] + grams[2])
    np.testing.assert_array_equal(bb, moments[0] + moments[1] + moments[2])
    np.testing.assert_array_equal(w_norm, math.sqrt(3))
    # equal weights: the regulariser of "sum" (ridge + 2 sigma_G sqrt(m d)); one release: "forget"
    assert noise_regulariser(1.0, 2.0, w_norm, 3)[0] == pytest.approx(1 + 2 * 2.0 * math.sqrt(9))
    one = ReleaseCombination(2, 3, v_y=0.25, tau2=30.0)
    G, bb, w_norm = one.add(grams[0], moments[0])
    np.testing.assert_allclose(G, grams[0], rtol=1e-15)
    np.testing.assert_allclose(w_norm, 1.0)
    # a model no user fed (trace 0) gets weight 0 and keeps the estimate at 0
    G, bb, w_norm = ReleaseCombination(1, 2, v_y=0.25, tau2=0.0).add(np.zeros((1, 2, 2)), np.ones((1, 2)))
    assert w_norm[0] == 0 and not bb.any()
    # the combination receives released arrays only (spec §5 (iv)): enforced by its signature
    assert list(inspect.signature(ReleaseCombination.add).parameters) == ["self", "gram", "moment"]


def test_regulariser_tail_bound_by_simulation():
    """P(lambda_min(sum_k w_k Z_k) < -(lam_w - ridge)) <= alpha with the tail term (spec §5 (v)): 10^4 draws, d = 20."""
    d, sigma, w = 20, 1.3, np.array([0.25, 0.5, 1.0])
    rng = np.random.default_rng(2)
    Z = sum(wk * SymmetricGaussianNoise(sigma).sample(rng, (10_000, d, d)) for wk in w)
    low = np.linalg.eigvalsh(Z)[:, 0]
    for alpha in (0.05, 0.2):
        margin = noise_regulariser(1.0, sigma, np.array([np.linalg.norm(w)]), d, tail_alpha=alpha)[0] - 1.0
        assert np.mean(low < -margin) <= alpha
    edge = noise_regulariser(1.0, sigma, np.array([np.linalg.norm(w)]), d)[0] - 1.0  # no tail: the edge only
    assert 0.01 < np.mean(low < -edge) < 0.5  # the floor handles these (docs/episodic-agents.md §3.5)


# -- the agent -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("centre", [False, True])
def test_noise_off_weighted_release_is_ridge_on_every_user(centre):
    c = constants(K=3, d=3, T=40, structure="disjoint")
    agent = EpisodicRidge(c, epsilon=math.inf, first_episode=3, ridge=0.5, centre=centre, episode_scale=math.inf)
    assert agent.cal.mode == "weighted"
    cur = agent._make_curator(np.random.default_rng(0))
    rng = np.random.default_rng(1)
    X, A, Y = [], [], []
    for t in range(21):  # episodes end after 3, 9, 21 users
        obs = np.tile(rng.uniform(-0.5, 0.5, size=3), (3, 1))
        arm = int(rng.integers(3))
        y = float(rng.integers(2))
        cur.observe(obs, arm, y)
        X.append(obs[arm]), A.append(arm), Y.append(y - (0.5 if centre else 0.0))
    X, A, Y = np.array(X), np.array(A), np.array(Y)
    rel = cur.release()
    assert rel.episode == 3 and rel.n_summed == 3
    for a in range(3):
        Xa, ya = X[A == a], Y[A == a]
        np.testing.assert_allclose(rel.theta[a], np.linalg.solve(Xa.T @ Xa + 0.5 * np.eye(3), Xa.T @ ya),
                                   rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("env_id, kwargs", [
    ("dpbandit/SharedLinear-v0", {"horizon": 300}),
    ("dpbandit/GLMBandit-v0", {"horizon": 300, "n_arms": 3, "dim": 5, "link": "logistic", "instance_seed": 3}),
])
def test_noise_off_with_one_user_episodes_plays_as_greedy(env_id, kwargs):
    """Noise off, the default schedule has episodes of one user (n* = 0; docs §6.5) and no centring or row clip:
    every round's estimate is ridge on every user so far, so on greedy's history the agent's release equals greedy's
    estimate and it plays greedy's arm wherever that arm is the unique best (ties, e.g. at theta = 0, each agent
    breaks with its own draws). The explicit form (first_episode=1, growth=1, centre=False) is the same agent."""
    env = gymnasium.make(env_id, **kwargs)
    for seed, params in ((0, {}), (1, {"first_episode": 1, "growth": 1, "centre": False})):
        greedy = make_agent("greedy", env)
        ours = make_agent("episodic_ridge", env, epsilon=math.inf, **params)
        assert ours.schedule.max_length == 1
        obs, _ = env.reset(seed=seed)
        greedy.reset(seed), ours.reset(seed)
        unique = 0
        for _ in range(300):
            arm, mine = greedy.act(obs), ours.act(obs)
            scores = greedy.ridge.predict(obs)
            if np.sum(scores == scores.max()) == 1:
                assert mine == arm
                unique += 1
            next_obs, reward, _, _, info = env.step(arm)
            greedy.update(obs, arm, reward, info), ours.update(obs, arm, reward, info)
            np.testing.assert_allclose(ours.release.theta.reshape(greedy.ridge.theta.shape), greedy.ridge.theta,
                                       rtol=1e-9, atol=1e-12)
            obs = next_obs
        assert unique >= 290


def test_privacy_report_does_not_depend_on_the_estimate_mode():
    c = constants(d=5, T=2000)
    reports = [EpisodicRidge(c, epsilon=1.0, mode=m).privacy_report() for m in ("weighted", "forget", "sum")]
    assert len({(r.epsilon, r.rho, r.composition) for r in reports}) == 1
    assert "centred at c = 0.5" in reports[0].note and "|y - 0.5| (centred) <= B = 0.5" in reports[0].sensitivity_assumption


def test_centred_calibration_known_answers():
    """spec §5 (epsilon = 4, delta = 5e-5, L = 1): mu* = 1.0032; centred [0, 1] rewards, w = 1/2:
    sigma_G = sigma_b = 1.4097; uncentred (B = 1) with S = 15, w = 15/17: sigma_G = 1.0612, sigma_b = 5.8124."""
    c = constants(d=4, T=20_000, theta_bound=15.0)
    centred = EpisodicRidge(c, epsilon=4.0, delta=5e-5, gram_share=0.5).cal
    assert centred.budget.mu == pytest.approx(1.0032, abs=1e-4)
    assert centred.B == 0.5 and centred.centre == 0.5
    assert centred.sigma_G == pytest.approx(1.4097, abs=1e-4) and centred.sigma_b == pytest.approx(1.4097, abs=1e-4)
    old = EpisodicRidge(c, epsilon=4.0, delta=5e-5, centre=False, target_bound=15.0).cal
    assert old.gram_share == pytest.approx(15 / 17)
    # the spec's 5.8124 is 2 sqrt(17/2) / 1.0032 (mu* rounded); with mu* = 1.003214 it is 5.81227
    assert old.sigma_G == pytest.approx(1.0612, abs=1e-4) and old.sigma_b == pytest.approx(5.81227, abs=1e-5)
    assert old.sigma_b == pytest.approx(2 * math.sqrt(17 / 2) / old.budget.mu, rel=1e-8)
    # the default share: S_r = min(15, 2 B / L) = 1 -> w = 1/2; a symmetric clip is not shifted
    assert EpisodicRidge(c, epsilon=4.0).cal.gram_share == pytest.approx(0.5)
    sym = EpisodicRidge(constants(reward=(-1.4, 1.4), link="identity"), epsilon=1.0).cal
    assert sym.centre == 0.0 and sym.B == pytest.approx(1.4)


@pytest.mark.parametrize("structure", ["shared", "disjoint"])
def test_conformance_and_quick_audit_of_the_defaults(structure):
    env = gymnasium.make("dpbandit/GLMBandit-v0", n_arms=3, dim=4, horizon=60, structure=structure, link="logistic")
    check_private_agent(make_agent("episodic_ridge", env, epsilon=1.0, first_episode=1), env, n_rounds=16,
                        audit=True, audit_samples=1000)
    check_agent(make_agent("episodic_ridge", env, epsilon=math.inf, growth=3), env)


# -- audits of the centred release: worst pairs at the boundary, a planted x0.5 caught -----------------------------


@pytest.mark.slow
def test_audit_centred_moment_pair_reward_at_both_ends():
    """(x, hi) vs (x, lo), ||x|| = L: the centred moment shift is x (hi - lo) = 2 L B (tight); the share puts 95 % of
    mu^2 on the moment so the pair attains nearly the whole budget."""
    agent = EpisodicRidge(constants(T=2), epsilon=1.0, delta=1e-2, mode="forget", gram_share=0.05)
    x = np.array([[0.6, 0.8], [0.0, 0.0]])
    other = (np.array([[0.0, 1.0], [0.0, 0.0]]), 0, 0.3)

    def users_of(which):
        return [(x, 0, 1.0 if which == "A" else 0.0), other]

    audit_release_pair(agent, users_of, np.zeros((2, 2)), x[0] * 1.0)


@pytest.mark.slow
def test_audit_gram_pair_orthogonal_contexts():
    """(e1, y) vs (e2, y): the Gram shift e1 e1^T - e2 e2^T has the bound's Frobenius norm sqrt(2) L^2 (tight),
    the moment shift (e1 - e2)(y - c) is small at y = c; 95 % of mu^2 on the Gram matrix."""
    agent = EpisodicRidge(constants(T=2), epsilon=1.0, delta=1e-2, mode="forget", gram_share=0.95)
    other = (np.array([[0.6, 0.8], [0.0, 0.0]]), 0, 0.3)

    def users_of(which):
        row = [1.0, 0.0] if which == "A" else [0.0, 1.0]
        return [(np.array([row, [0.0, 0.0]]), 0, 0.5), other]

    audit_release_pair(agent, users_of, np.array([[1.0, 0.0], [0.0, -1.0]]), np.zeros(2))


# -- the pooled Gram shape (disjoint; docs/episodic-agents.md §6.7) -------------------------------------------------


def test_pooled_gram_shape_known_answers_and_noise_scale():
    from dpbandit.agents.release_combination import pool_gram

    shape = np.array([[2.0, 0.5], [0.5, 1.0]])
    gram = np.array([10 * shape, 30 * shape, 0 * shape])  # one shape: pooling changes nothing
    pooled, w = pool_gram(gram, np.ones(3))
    np.testing.assert_allclose(pooled, gram, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(w, np.array([0.25, 0.75, 0.0]) * math.sqrt(3))
    # noise of the pooled arm a: c_a times the sum of K independent symmetric noises, sd c_a sqrt(K) sigma
    rng = np.random.default_rng(4)
    Z = SymmetricGaussianNoise(1.0).sample(rng, (20_000, 3, 2, 2))
    noisy = gram + Z
    pooled = np.array([pool_gram(g, np.ones(3))[0][1] for g in noisy[:4000]])  # arm 1's pooled matrix
    c = np.array([max(np.trace(g[1]), 0) / np.maximum(np.trace(g, axis1=1, axis2=2), 0).sum() for g in noisy[:4000]])
    noise = pooled[:, 0, 1] - c * gram.sum(0)[0, 1]  # c_a (sum_b Z_b)[0, 1]
    assert np.std(noise) == pytest.approx(0.75 * math.sqrt(3), rel=0.05)


def test_gram_pool_option():
    c = constants(K=3, d=3, T=60, structure="disjoint")
    agent = EpisodicRidge(c, epsilon=1.0, gram_pool=True)
    assert agent.cal.gram_pool and "pooled across arms" in agent.privacy_report().note
    assert not EpisodicRidge(constants(K=3, d=3, T=60), epsilon=1.0, gram_pool=True).cal.gram_pool  # shared: none
    assert not EpisodicRidge(c, epsilon=math.inf, gram_pool=True).cal.gram_pool  # noise off: nothing to trade
    with pytest.raises(ValueError, match="gram_pool must be False with rule='ucb'"):
        EpisodicRidge(c, epsilon=1.0, gram_pool=True, rule="ucb")
    with pytest.raises(TypeError, match="gram_pool"):
        EpisodicRidge(c, epsilon=1.0, gram_pool=1)
    env = gymnasium.make("dpbandit/GLMBandit-v0", n_arms=3, dim=4, horizon=60, link="logistic")
    check_private_agent(make_agent("episodic_ridge", env, epsilon=1.0, first_episode=1, gram_pool=True), env,
                        n_rounds=16, audit=True, audit_samples=1000)
    # the released statistics are the unpooled agent's; the estimate solves (c_a sum_b G~_b + lam_a I) theta = b~_a,
    # lam_a = ridge + 2 sigma_G c_a sqrt(K d) (computed here from the released arrays)
    users = [(np.tile(np.random.default_rng(t).uniform(-0.5, 0.5, 3), (3, 1)), t % 3, float(t % 2)) for t in range(9)]
    rels = []
    for pool in (False, True):
        agent = EpisodicRidge(c, epsilon=1.0, first_episode=9, mode="forget", gram_pool=pool)
        cur = agent._make_curator(np.random.default_rng(0))
        for u in users:
            cur.observe(*u)
        rels.append(cur.release())
    np.testing.assert_array_equal(rels[0].moment, rels[1].moment)
    np.testing.assert_array_equal(rels[0].gram, rels[1].gram)
    G = rels[1].gram
    traces = np.maximum(np.trace(G, axis1=1, axis2=2), 0)
    for a in range(3):
        share = traces[a] / traces.sum()
        lam = 1.0 + 2 * agent.cal.sigma_G * share * math.sqrt(3 * 3)
        evals, evecs = np.linalg.eigh(share * G.sum(0) + lam * np.eye(3))
        V_inv = evecs @ np.diag(1 / np.maximum(evals, 1.0)) @ evecs.T
        np.testing.assert_allclose(rels[1].theta[a], V_inv @ rels[1].moment[a], rtol=1e-9)
