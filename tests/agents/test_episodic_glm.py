"""Private episodic GLM agent (dpbandit/agents/episodic_glm.py; docs/episodic-agents.md §7; spec/episodic-part2-hard-
problems.md §3.3, §5): calibration known answers, the released noise's law, the noise-off Newton steps against an
independent computation, learning, conformance, refusals, and audits at theta_0 = 0 (tight pairs) that catch a
planted x0.5 noise."""

from __future__ import annotations

import dataclasses
import math

import gymnasium
import numpy as np
import pytest
from scipy import stats
from scipy.special import expit

import dpbandit  # noqa: F401  (registers the environments)
from dpbandit.agents import AGENTS, make_agent
from dpbandit.agents.batched import batched_form
from dpbandit.agents.episodic import EpisodeSchedule
from dpbandit.agents.episodic_glm import EpisodicGLM, EpisodicGLMCurator
from dpbandit.envs.constants import BanditConstants
from dpbandit.experiment.checks import check_agent, check_private_agent
from dpbandit.experiment.runner import simulate
from dpbandit.privacy.audit import audit, projection
from dpbandit.privacy.calibrate import gaussian_sigma_analytic

P = 1e-6


def constants(K=2, d=2, T=100, structure="shared", theta_bound=math.inf):
    return BanditConstants(
        n_arms=K, dim=d, horizon=T, structure=structure, link="logistic", context_norm="l2", context_bound=1.0,
        theta_norm="l2", theta_bound=theta_bound, sparsity=d, noise_std=0.0, reward_low=0.0, reward_high=1.0,
        mean_low=0.0, mean_high=1.0,
    )


def test_calibration_known_answers():
    """spec §5: epsilon = 4, delta = 5e-5, L = 1, w = 1/2: sigma_H = 0.35243, sigma_g = 1.4097 at theta = 0
    (Delta_g = 2 L mu(0) = L); the two Gaussian parts compose to mu*."""
    cal = EpisodicGLM(constants(T=20_000), epsilon=4.0, delta=5e-5).cal
    mu = 1.0 / gaussian_sigma_analytic(4.0, 5e-5, 1.0)
    assert cal.sigma_H == pytest.approx(0.35243, abs=1e-5)
    assert cal.sigma_H == pytest.approx(0.25 / (math.sqrt(0.5) * mu), rel=1e-8)
    assert cal.sigma_g(np.zeros(1))[0] == pytest.approx(1.4097, abs=1e-4)
    # at ||theta|| = 2: Delta_g = 2 mu(2) = 1.7616
    assert cal.sigma_g(np.array([2.0]))[0] == pytest.approx(2 * expit(2.0) / (math.sqrt(0.5) * mu), rel=1e-8)
    probit = EpisodicGLM(constants(T=20_000), epsilon=4.0, delta=5e-5, link="probit").cal
    assert probit.sigma_H == pytest.approx(1 / math.sqrt(2 * math.pi) / (math.sqrt(0.5) * mu), rel=1e-8)
    report = EpisodicGLM(constants(T=20_000), epsilon=4.0, delta=5e-5).privacy_report()
    assert report.guarantee == "JDP" and report.epsilon == pytest.approx(4.0, abs=1e-6)
    assert report.rho == pytest.approx(mu**2 / 2, rel=1e-6)


def _users(n, K, d, rng, theta):
    out = []
    for _ in range(n):
        x = rng.normal(size=d)
        x /= max(1.0, np.linalg.norm(x))
        arm = int(rng.integers(K))
        out.append((np.tile(x, (K, 1)), arm, float(rng.random() < expit(x @ theta[arm]))))
    return out


def test_released_noise_has_the_stated_law():
    """First release (theta_0 = 0): H~ - H has off-diagonal sd sigma_H, diagonal sqrt(2) sigma_H; g~ - g has sd
    sigma_g(0)."""
    K, d = 2, 3
    agent = EpisodicGLM(constants(K=K, d=d, T=4, structure="disjoint"), epsilon=1.0, delta=1e-3, first_episode=4)
    users = _users(4, K, d, np.random.default_rng(0), np.zeros((K, d)))
    H, g = np.zeros((K, d, d)), np.zeros((K, d))
    for obs, arm, y in users:
        H[arm] += 0.25 * np.outer(obs[0], obs[0])
        g[arm] += (0.5 - y) * obs[0]
    rng = np.random.default_rng(1)
    dH, dg = [], []
    for _ in range(3000):
        cur = agent._make_curator(rng)
        for u in users:
            cur.observe(*u)
        dH.append(cur.release().hessian - H)
        dg.append(cur.release().gradient - g)
    dH, dg = np.array(dH), np.array(dg)
    iu = np.triu_indices(d, 1)
    for z, sigma in ((dH[:, :, iu[0], iu[1]].ravel(), agent.cal.sigma_H),
                     (np.diagonal(dH, axis1=2, axis2=3).ravel(), math.sqrt(2) * agent.cal.sigma_H),
                     (dg.ravel(), agent.cal.sigma_g(np.zeros(1))[0])):
        assert stats.kstest(z / sigma, "norm").pvalue > P


def test_noise_off_newton_steps_match_an_independent_computation():
    """Noise off, equal weights: release 1 is the Newton step from 0, (H_1 + lam I)^{-1}(-g_1) with H_1 = sum x x^T / 4,
    g_1 = sum (1/2 - y) x; release 2 solves (H_1 + H_2 + lam I) theta = H_1 theta_0 - g_1 + H_2 theta_1 - g_2 with H_2,
    g_2 at theta_1 (lam = ridge / 4)."""
    d, ridge = 3, 2.0
    agent = EpisodicGLM(constants(d=d, T=30), epsilon=math.inf, first_episode=10, ridge=ridge, episode_scale=math.inf)
    cur = agent._make_curator(np.random.default_rng(0))
    users = _users(30, 2, d, np.random.default_rng(3), np.array([[1.5, -1.0, 0.5]] * 2))
    X = np.array([u[0][0] for u in users])
    y = np.array([u[2] for u in users])
    for u in users[:10]:
        cur.observe(*u)
    H1 = 0.25 * X[:10].T @ X[:10]
    g1 = X[:10].T @ (0.5 - y[:10])
    lam = ridge / 4
    theta1 = np.linalg.solve(H1 + lam * np.eye(d), -g1)
    np.testing.assert_allclose(cur.release().theta[0], theta1, rtol=1e-10)
    for u in users[10:30]:
        cur.observe(*u)
    z = X[10:30] @ theta1
    p = expit(z)
    H2 = (X[10:30] * (p * (1 - p))[:, None]).T @ X[10:30]
    g2 = X[10:30].T @ (p - y[10:30])
    theta2 = np.linalg.solve(H1 + H2 + lam * np.eye(d), -g1 + H2 @ theta1 - g2)
    np.testing.assert_allclose(cur.release().theta[0], theta2, rtol=1e-9)


@pytest.mark.parametrize("structure", ["shared", "disjoint"])
def test_noise_off_default_is_a_newton_step_after_every_user(structure):
    """Noise off, the default schedule (n* = 0, docs §6.5): one-user episodes, and after user t the estimate solves
    (sum_i a_i x_i x_i^T + lam I) theta_t = sum_i x_i (a_i z_i - (mu(z_i) - y_i)) over that model's users, a_i, z_i
    taken at the estimate user i saw, then projected on ||theta|| <= S; recomputed here by dense solves."""
    d, K, S = 3, 2, 0.8
    agent = EpisodicGLM(constants(K=K, d=d, T=40, structure=structure, theta_bound=S), epsilon=math.inf)
    assert agent.schedule.max_length == 1 and agent.cal.row_clip == math.inf
    cur = agent._make_curator(np.random.default_rng(0))
    users = _users(40, K, d, np.random.default_rng(5), np.array([[1.5, -1.0, 0.5], [-1.0, 0.5, 1.0]]))
    M = K if structure == "disjoint" else 1
    A, b, theta = np.tile(np.eye(d) / 4, (M, 1, 1)), np.zeros((M, d)), np.zeros((M, d))
    for obs, arm, y in users:
        m = arm if M > 1 else 0
        x = obs[arm]
        z = x @ theta[m]
        a = expit(z) * expit(-z)
        A[m] += a * np.outer(x, x)
        b[m] += x * (a * z - (expit(z) - y))
        cur.observe(obs, arm, y)
        new = np.linalg.solve(A[m], b[m])
        theta[m] = new * min(1.0, S / np.linalg.norm(new))
        np.testing.assert_allclose(cur.release().theta, theta, rtol=1e-9, atol=1e-12)
    assert cur.n_releases == 40 and cur.release().hessian is None


def test_learns_on_logistic_rewards_noise_off_and_private():
    env = gymnasium.make("dpbandit/SparseLogistic-v0", horizon=3000, n_arms=3, dim=10, sparsity=3, instance_seed=1)

    def regret(name, **kw):
        return np.array([simulate(env, make_agent(name, env, **kw), s, checkpoints=2)["cumulative_regret"].iloc[-1]
                         for s in range(3)])

    rnd = regret("random")
    assert np.all(regret("episodic_glm", epsilon=math.inf) < 0.5 * rnd)
    assert np.all(regret("episodic_glm", epsilon=8.0) < rnd)


@pytest.mark.parametrize("structure", ["shared", "disjoint"])
def test_conformance_quick_audit_and_no_batched_form(structure):
    env = gymnasium.make("dpbandit/GLMBandit-v0", n_arms=3, dim=4, horizon=60, structure=structure, link="logistic")
    agent = make_agent("episodic_glm", env, epsilon=1.0, first_episode=1)
    check_private_agent(agent, env, n_rounds=16, audit=True, audit_samples=1000)
    check_agent(make_agent("episodic_glm", env, epsilon=math.inf, link="probit"), env)
    agents = [make_agent("episodic_glm", env, epsilon=1.0) for _ in range(2)]
    for s, a in enumerate(agents):
        a.reset(s)
    assert batched_form(agents) is None and AGENTS["episodic_glm"] is EpisodicGLM


def test_refusals():
    gaussian = gymnasium.make("dpbandit/SharedLinear-v0", horizon=10)
    with pytest.raises(ValueError, match=r"episodic_glm fits a logistic model to rewards in \[0, 1\]") as info:
        make_agent("episodic_glm", gaussian)
    assert "\n" not in str(info.value)
    for kwargs, error, word in (({"link": "identity"}, ValueError, "link"), ({"gram_share": 1.0}, ValueError,
                                "gram_share"), ({"ridge": 0.0}, ValueError, "ridge"), ({"growth": 0}, ValueError,
                                "growth"), ({"epsilon": 0.0}, ValueError, "epsilon")):
        with pytest.raises(error, match=word):
            EpisodicGLM(constants(), **kwargs)


def _mechanism(cal, users_of):
    iu = np.triu_indices(2)
    scale = np.where(iu[0] == iu[1], math.sqrt(2), 1.0)

    def mechanism(which, rng, n):
        out = []
        for _ in range(n):
            cur = EpisodicGLMCurator(cal, EpisodeSchedule(2, 2), 2, rng)
            for u in users_of(which):
                cur.observe(*u)
            r = cur.release()
            out.append(np.concatenate([r.hessian[0, iu[0], iu[1]] / scale, r.gradient[0]]))
        return np.array(out)

    return mechanism


def _audit(agent, users_of, dH, dg):
    cal = agent.cal
    iu = np.triu_indices(2)
    scale = np.where(iu[0] == iu[1], math.sqrt(2), 1.0)
    sigma_g = cal.sigma_g(np.zeros(1))[0]
    direction = np.concatenate([dH[iu] / scale / cal.sigma_H**2, dg / sigma_g**2])
    claimed = agent.privacy_report().epsilon
    good = audit(_mechanism(cal, users_of), "A", "B", n_samples=6_000, n_pilot=1_000, delta=agent.delta,
                 rng=np.random.default_rng(2), statistic=projection(direction), confidence=1 - 1e-6)
    assert not good.violates(claimed), str(good)
    # the planted defect: both noise scales x0.5 (built here, never in the library)
    planted = dataclasses.replace(cal, sigma_H=cal.sigma_H / 2, mu=cal.mu * 2)
    bad = audit(_mechanism(planted, users_of), "A", "B", n_samples=6_000, n_pilot=1_000, delta=agent.delta,
                rng=np.random.default_rng(3), statistic=projection(direction), confidence=1 - 1e-6)
    assert bad.violates(claimed), str(bad)


@pytest.mark.slow
def test_audit_gradient_pair_reward_at_both_ends():
    """At theta_0 = 0 (the first release), (x, 0) vs (x, 1) with ||x|| = L: g - g' = x (mu(0) - 0 - mu(0) + 1), norm
    L = Delta_g(0): tight; 95 % of mu^2 on the gradient."""
    agent = EpisodicGLM(constants(T=2), epsilon=1.0, delta=1e-2, gram_share=0.05)
    x = np.array([[0.6, 0.8], [0.0, 0.0]])
    other = (np.array([[0.0, 1.0], [0.0, 0.0]]), 0, 1.0)

    def users_of(which):
        return [(x, 0, 0.0 if which == "A" else 1.0), other]

    _audit(agent, users_of, np.zeros((2, 2)), x[0])


@pytest.mark.slow
def test_audit_hessian_pair_orthogonal_contexts():
    """At theta_0 = 0, x = e1 vs x' = e2 (reward 1/2... here 1 for both): the Hessian shift (e1 e1^T - e2 e2^T)/4 has
    the bound's Frobenius norm sqrt(2) L^2 / 4 (tight); 95 % of mu^2 on the Hessian."""
    agent = EpisodicGLM(constants(T=2), epsilon=1.0, delta=1e-2, gram_share=0.95)
    other = (np.array([[0.6, 0.8], [0.0, 0.0]]), 0, 1.0)

    def users_of(which):
        row = [1.0, 0.0] if which == "A" else [0.0, 1.0]
        return [(np.array([row, [0.0, 0.0]]), 0, 1.0), other]

    _audit(agent, users_of, np.array([[0.25, 0.0], [0.0, -0.25]]), np.array([-0.5, 0.5]))


@pytest.mark.parametrize("link, z", [("probit", 40.0), ("logistic", 720.0)])
def test_a_user_far_out_on_the_link_keeps_the_sums_finite(link, z):
    """Found by review: mu'(z) underflowed to 0 at |z| > 38.6 (probit) / 709.8 (logistic), and the user's gradient
    weight (mu - y)/sqrt(mu') became inf or NaN: a NaN release, which no noise hides (epsilon = inf). The floor keeps
    the Hessian term within a_max and the gradient exact."""
    agent = EpisodicGLM(dataclasses.replace(constants(d=3), link=link), epsilon=1.0, first_episode=10)
    cur = agent._make_curator(np.random.default_rng(0))
    cur._theta = np.array([[z, 0.0, 0.0]])  # a public release far out (|x^T theta| = z for x = e_1)
    for y in (0.0, 1.0):
        cur._absorb(np.array([[1.0, 0.0, 0.0]]), np.array([0]), np.array([y]))
    H, g, _ = cur._sums.take()
    assert np.isfinite(H).all() and np.isfinite(g).all()
    np.testing.assert_allclose(g[0], [1.0, 0.0, 0.0], atol=1e-12)  # (mu - 0) + (mu - 1) with mu = 1
