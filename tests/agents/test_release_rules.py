"""UCB and Thompson action rules from an episodic ridge release (dpbandit/agents/release_rules.py;
docs/episodic-agents.md §6.3-6.4; spec/episodic-part2-hard-problems.md §2, §5 (vi)): the width's noise-off known
answer (OFUL's radius, computed independently), its coverage by simulation with the noise on, the Thompson draw's
law, the exploration stream, conformance with audits, the batched form (none) and the refusals."""

from __future__ import annotations

import math

import gymnasium
import numpy as np
import pytest
from scipy import stats

import dpbandit  # noqa: F401  (registers the environments)
from dpbandit.agents import make_agent
from dpbandit.agents.batched import batched_form
from dpbandit.agents.episodic_ridge import EpisodicRidge
from dpbandit.agents.release_rules import thompson_scores
from dpbandit.envs.constants import BanditConstants
from dpbandit.experiment.checks import check_agent, check_private_agent

P = 1e-6


def constants(K=3, d=4, T=400, structure="shared", noise_std=0.1):
    return BanditConstants(
        n_arms=K, dim=d, horizon=T, structure=structure, link="identity", context_norm="l2", context_bound=1.0,
        theta_norm="l2", theta_bound=1.0, sparsity=d, noise_std=noise_std, reward_low=-math.inf,
        reward_high=math.inf, mean_low=-1.0, mean_high=1.0,
    )


def _feed(curator, theta, rng, n, K, d, noise_std):
    """n users with contexts on the unit sphere, uniform actions, rewards x^T theta + noise (shared structure)."""
    for _ in range(n):
        obs = rng.normal(size=(K, d))
        obs /= np.linalg.norm(obs, axis=1, keepdims=True)
        arm = int(rng.integers(K))
        curator.observe(obs, arm, float(obs[arm] @ theta + noise_std * rng.normal()))


def test_ucb_width_noise_off_is_oful_radius():
    """Noise off: beta = R sqrt(2 ln(3/alpha) + d ln(1 + N L^2/(d ridge))) + S sqrt(ridge) (Abbasi-Yadkori et al.
    2011 with a union share alpha/3), computed here from the formula's parts."""
    c = constants(T=60)
    agent = EpisodicRidge(c, epsilon=math.inf, rule="ucb", alpha=0.1, first_episode=20, ridge=2.0)
    cur = agent._make_curator(np.random.default_rng(0))
    _feed(cur, np.array([0.6, 0.8, 0, 0]), np.random.default_rng(1), 60, 3, 4, 0.1)
    rel = cur.release()
    R = 1.4  # rewards clipped to [-1.4, 1.4] (mean bounds -/+ 4 noise std)
    expected = R * math.sqrt(2 * math.log(30) + 4 * math.log(1 + 60 / (4 * 2.0))) + 1.0 * 2.0 / math.sqrt(2.0)
    assert rel.rule == "ucb" and rel.beta.shape == (1,)
    assert rel.beta[0] == pytest.approx(expected, rel=1e-12)


@pytest.mark.slow
def test_ucb_width_covers_theta_with_the_noise_on():
    """spec §5 (vi): on a linear Gaussian problem the fraction of runs with ||theta_hat - theta||_V <= beta is
    >= 1 - alpha (the bound is conservative: expect all)."""
    K, d, n = 3, 4, 300
    agent = EpisodicRidge(constants(K=K, d=d, T=n), epsilon=2.0, rule="ucb", alpha=0.1, first_episode=20)
    theta = np.array([0.5, -0.5, 0.5, 0.5])
    rng = np.random.default_rng(4)
    inside = []
    for _ in range(200):
        cur = agent._make_curator(rng)
        _feed(cur, theta, rng, n, K, d, 0.1)
        rel = cur.release()
        err = rel.theta[0] - theta
        inside.append(err @ np.linalg.solve(rel.v_inv[0], err) <= rel.beta[0] ** 2)
    assert np.mean(inside) >= 0.9
    assert rel.beta[0] > EpisodicRidge(constants(K=K, d=d, T=n), epsilon=math.inf, rule="ucb",
                                       alpha=0.1)._release.beta[0]  # the noise widens it


@pytest.mark.parametrize("lam, floor_acts", [(None, False), (1.0, True)])
def test_thompson_draw_has_the_stated_law(lam, floor_acts):
    """theta~ - theta_hat ~ N(0, R^2 V^{-1} + tau_w^2 V^{-2}), tau_w^2 = sigma_b^2 + sigma_G^2 ||theta_hat||^2
    (||w|| = 1 for one release): whitened draws are N(0, I) (KS and chi^2 at p = 1e-6). The factor V^{-1} C with the
    floor inactive (default lam) and acting (lam = ridge: the noise leaves eigenvalues below it). V^{-1} is
    recomputed here from the released Gram matrix by np.linalg.eigh, floored."""
    d = 4
    agent = EpisodicRidge(constants(K=d, d=d, T=40), epsilon=0.5, rule="thompson", mode="forget", first_episode=40,
                          lam=lam)
    cur = agent._make_curator(np.random.default_rng(0))
    _feed(cur, np.array([0.5, -0.5, 0.5, 0.5]), np.random.default_rng(1), 40, d, d, 0.1)
    rel = cur.release()
    cal = agent.cal
    assert np.all(rel.scale == 1.0)
    evals, evecs = np.linalg.eigh(rel.gram[0] + cal.regulariser(1) * np.eye(d))
    v_inv = (evecs / np.maximum(evals, cal.ridge)) @ evecs.T
    assert (evals.min() < cal.ridge) == floor_acts
    tau2 = cal.sigma_b**2 + cal.sigma_G**2 * float(rel.theta[0] @ rel.theta[0])
    cov = cal.spread**2 * v_inv + tau2 * v_inv @ v_inv
    assert np.allclose(np.einsum("ij,j,kj->ik", rel.basis[0], rel.scale[0] ** 2, rel.basis[0]), cov,
                       rtol=1e-9, atol=1e-12 * np.abs(cov).max())
    rng = np.random.default_rng(2)
    draws = np.array([thompson_scores(rel.theta, rel.basis, rel.scale, True, np.eye(d), rng) for _ in range(4000)])
    white = np.linalg.solve(np.linalg.cholesky(cov), (draws - rel.theta[0]).T).ravel()
    assert stats.kstest(white, "norm").pvalue > P
    chi2 = float(white @ white)
    assert stats.chi2.sf(chi2, white.size) > P / 2 and stats.chi2.cdf(chi2, white.size) > P / 2


def test_thompson_randomness_is_the_exploration_stream():
    env = gymnasium.make("dpbandit/GLMBandit-v0", n_arms=3, dim=4, horizon=200)
    agent = make_agent("episodic_ridge", env, epsilon=1.0, rule="thompson")
    obs, _ = env.reset(seed=0)
    agent.reset(0)
    rel = agent.release
    a = [EpisodicRidge.action_rule(rel, obs, np.random.default_rng(5)) for _ in range(3)]
    one = np.random.default_rng(6)
    b = [EpisodicRidge.action_rule(rel, obs, one) for _ in range(50)]
    assert len(set(a)) == 1 and len(set(b)) > 1  # same stream, same draw; other streams, other draws
    # the agent's draws come from its exploration stream: the privacy stream of another seed changes nothing before
    # the first release (no noise drawn yet), the exploration stream does
    acts = {}
    for seed in (0, 1):
        agent.reset(seed)
        acts[seed] = [agent.act(obs) for _ in range(30)]
    assert acts[0] != acts[1]


@pytest.mark.parametrize("rule", ["ucb", "thompson"])
@pytest.mark.parametrize("structure", ["shared", "disjoint"])
def test_conformance_quick_audit_and_no_batched_form(rule, structure):
    env = gymnasium.make("dpbandit/GLMBandit-v0", n_arms=3, dim=4, horizon=60, structure=structure)
    agent = make_agent("episodic_ridge", env, epsilon=1.0, first_episode=1, rule=rule)
    check_private_agent(agent, env, n_rounds=16, audit=True, audit_samples=1000)
    check_agent(make_agent("episodic_ridge", env, epsilon=math.inf, rule=rule), env)
    agents = [make_agent("episodic_ridge", env, epsilon=1.0, rule=rule) for _ in range(2)]
    for s, a in enumerate(agents):
        a.reset(s)
    assert batched_form(agents) is None  # explicitly none: the seeds run one by one


def test_refusals():
    with pytest.raises(ValueError, match="rule"):
        EpisodicRidge(constants(), rule="optimistic")
    with pytest.raises(ValueError, match="alpha"):
        EpisodicRidge(constants(), rule="ucb", alpha=1.0)
    with pytest.raises(ValueError, match="lam must be None with rule='ucb'"):
        EpisodicRidge(constants(), rule="ucb", lam=5.0)
    with pytest.raises(TypeError, match="centre"):
        EpisodicRidge(constants(), centre="yes")
    unbounded = BanditConstants(
        n_arms=3, dim=4, horizon=100, structure="disjoint", link="identity", context_norm="l2", context_bound=1.0,
        theta_norm="l2", theta_bound=math.inf, sparsity=4, noise_std=0.0, reward_low=0.0, reward_high=1.0,
        mean_low=0.0, mean_high=1.0)
    with pytest.raises(ValueError, match="episodic_ridge with rule='ucb' needs a finite theta_bound") as info:
        EpisodicRidge(unbounded, rule="ucb")
    assert "\n" not in str(info.value)
    EpisodicRidge(unbounded, rule="thompson")  # Thompson needs no bound on theta


@pytest.mark.parametrize("theta_bound", [None, 1.0])
@pytest.mark.parametrize("rule", ["greedy", "ucb", "thompson"])
def test_on_own_data_every_rule_refuses_in_one_line_or_acts_on_the_data(rule, theta_bound):
    """Own data (iris through Classification-v0), the parameter bound unknown or stated: UCB refuses without a
    bound (naming theta_bound), and every rule that runs beats uniform random play (check_acts_on_data)."""
    from sklearn.datasets import load_iris

    from dpbandit.experiment.checks import check_acts_on_data

    X, y = load_iris(return_X_y=True)
    env = gymnasium.make("dpbandit/Classification-v0", X=X, y=y, horizon=400,
                         **({} if theta_bound is None else {"theta_bound": theta_bound}))
    result = check_acts_on_data("episodic_ridge", env, {"epsilon": 1e3, "rule": rule}, n_rounds=400)
    if rule == "ucb" and theta_bound is None:
        assert result.outcome == "refused" and "theta_bound" in result.message
    else:
        assert result.outcome == "acts"
