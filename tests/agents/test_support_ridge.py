"""support_ridge (dpbandit/agents/support_ridge.py; docs/episodic-agents.md §8): known answers of the calibration and
of the public defaults, checked by an independent computation (the CKS conversion minimised numerically); the
selection's law; the noise-off selection and the projected ridge; the action rule; the privacy report; refusals;
conformance; learning on the sparse logistic problem; audits on worst-case neighbouring pairs at the boundary of the
declared domain (competing coordinates for the selection) that pass at the calibrated noise and catch a planted
x0.5."""

from __future__ import annotations

import copy
import dataclasses
import math

import gymnasium
import numpy as np
import pytest
from scipy import optimize, stats

import dpbandit  # noqa: F401  (registers the environments)
from dpbandit.agents import AGENTS, make_agent
from dpbandit.agents.episodic_ridge import EpisodicRidge
from dpbandit.agents.support_ridge import (SupportRidge, default_entry_clip, default_selection_users,
                                           default_support_size, project_rows)
from dpbandit.envs.constants import BanditConstants
from dpbandit.experiment.checks import check_private_agent
from dpbandit.privacy.audit import audit
from dpbandit.privacy.calibrate import zcdp_rho_for
from dpbandit.privacy.peeling import gumbel_support, gumbel_top_s
from tests.agents.ridge_audit import audit_release_pair


def constants(K=3, d=400, T=20_000, s=5, structure="disjoint", norm="linf"):
    return BanditConstants(
        n_arms=K, dim=d, horizon=T, structure=structure, link="logistic", context_norm=norm, context_bound=1.0,
        theta_norm="l1", theta_bound=3.0, sparsity=s, noise_std=0.0, reward_low=0.0, reward_high=1.0,
        mean_low=0.0, mean_high=1.0,
    )


def cks_epsilon(rho, delta):
    """epsilon of rho-zCDP at delta by the Canonne-Kamath-Steinke bound, minimised over alpha numerically (an
    independent computation of the conversion dpbandit inverts in zcdp_rho_for)."""
    f = lambda a: a * rho + math.log1p(-1 / a) - math.log(delta * a) / (a - 1)  # noqa: E731
    res = optimize.minimize_scalar(f, bounds=(1.0 + 1e-9, 1e4), method="bounded", options={"xatol": 1e-12})
    return res.fun


def test_known_answers_of_the_bench_setting():
    # d = 400, K = 3, s = 5, epsilon = 4, delta = 1/T = 5e-5 (sparse-logistic-*-d400)
    agent = SupportRidge(constants(), epsilon=4.0)
    sel = agent.selection
    assert default_support_size(400, 5) == sel.support_size == 10
    assert sel.entry_clip == pytest.approx(1.5 / math.sqrt(2 * math.log(800)), rel=1e-12)
    assert sel.entry_clip == pytest.approx(0.410240, abs=1e-6)
    assert sel.sensitivity == pytest.approx(2 * sel.entry_clip * 0.5, rel=1e-12)  # 2 tau B_c, B_c = 1/2
    assert sel.scale == pytest.approx(1.394277, abs=1e-6)  # tau sqrt(10 / (2 * 0.43286071))
    # independent: s' picks of (2 Delta / b)-bounded range cost s' (2 Delta / b)^2 / 8, and CKS of that is epsilon
    rho_sel = 10 * (2 * sel.sensitivity / sel.scale) ** 2 / 8
    assert rho_sel == pytest.approx(0.43286071, rel=1e-7)
    assert cks_epsilon(rho_sel, 5e-5) == pytest.approx(4.0, abs=1e-5)
    # n_sel: n_etc = ceil((3 * 25 * ln 400)^(1/3) * 20000^(2/3)) = 5644 > n_priv = ceil(30 ln 400 / rho) = 416,
    # capped at T / 4 = 5000; T = 1e5: ceil(16501.80) = 16502
    assert sel.users == 5000
    assert default_selection_users(20_000, 3, 400, 5, 10, 0.43286071) == 5000
    assert default_selection_users(100_000, 3, 400, 5, 10, 0.43286071) == 16502
    assert default_selection_users(10**6, 3, 400, 5, 10, 1e-3) == 179744  # n_priv = ceil(30 ln 400 / 1e-3)
    # the estimation stage: zCDP calibration at the same rho, rows clipped to sqrt(s') tau
    cal = agent.estimator.cal
    assert cal.calibration == "zcdp" and cal.dim == 10 and not cal.gram_pool
    assert cal.L == pytest.approx(math.sqrt(10) * sel.entry_clip, rel=1e-12)
    assert cal.sigma_G == pytest.approx(cal.L**2 / math.sqrt(0.5 * 2 * 0.43286071), rel=1e-6)
    assert agent.estimator.schedule.horizon == 15_000


def test_default_entry_clip_and_support_size():
    assert default_entry_clip(constants(d=100)) == pytest.approx(1.5 / math.sqrt(2 * math.log(200)))
    assert default_entry_clip(constants(d=100, norm="l2")) == pytest.approx(0.15)  # 1.5 / sqrt(d)
    assert default_entry_clip(constants(d=2)) == pytest.approx(0.900842, abs=1e-6)  # 1.5 / sqrt(2 ln 4)
    assert default_entry_clip(constants(d=1, s=1)) == 1.0  # min(1, 1.5 / sqrt(2 ln 2))
    assert default_support_size(6, 5) == 3 and default_support_size(100, 5) == 10


def test_gumbel_support_is_the_selection_of_gumbel_top_s_and_has_the_sequential_exponential_mechanism_law():
    v = np.array([[0.3, -1.0, 2.0, 0.0, 1.5]])
    for seed in range(5):
        a = gumbel_support(np.random.default_rng(seed), v, 2, 0.7)
        _, b = gumbel_top_s(np.random.default_rng(seed), v, 2, 0.7)
        np.testing.assert_array_equal(a, b)
    n, b = 60_000, 0.8
    support = gumbel_support(np.random.default_rng(1), np.broadcast_to(v, (n, 5)), 2, b)
    w = np.exp(np.abs(v[0]) / b)
    expected = {}
    for i in range(5):
        for j in range(5):
            if i != j:
                expected[(i, j)] = w[i] / w.sum() * w[j] / (w.sum() - w[i])  # ordered pair: pick i, then j
    keys = list(expected)
    counts = np.array([np.sum((support[:, 0] == i) & (support[:, 1] == j)) for i, j in keys])
    p = np.array([expected[k] for k in keys])
    assert stats.chisquare(counts, p * n).pvalue > 1e-6


def test_staged_noise_off_selects_the_largest_scores_and_fits_ridge_on_projected_rows():
    c = constants(K=2, d=6, T=40, s=1)
    agent = SupportRidge(c, epsilon=math.inf, support_size=2, selection_users=10, noise_off_form="staged",
                         ridge_params={"row_clip": math.inf, "first_episode": 6, "mode": "forget"})
    tau = agent.selection.entry_clip
    rng = np.random.default_rng(0)
    cur = agent._make_curator(rng)
    X = rng.uniform(-1, 1, (40, 6))
    arms = np.arange(40) % 2
    y = (rng.random(40) < 0.5).astype(float)
    for t in range(10):
        assert cur.release().support is None
        cur.observe(np.stack([X[t], X[t]]), arms[t], y[t])
    scores = np.zeros((2, 6))
    for t in range(10):
        scores[arms[t]] += np.clip(X[t], -tau, tau) * (y[t] - 0.5)
    expected = np.sort(np.argsort(-np.abs(scores), axis=1)[:, :2], axis=1)
    np.testing.assert_array_equal(cur.release().support, expected)
    for t in range(10, 16):  # the first ridge episode: 6 users
        cur.observe(np.stack([X[t], X[t]]), arms[t], y[t])
    theta = cur.release().ridge.theta
    for a in range(2):
        mine = np.arange(10, 16)[arms[10:16] == a]
        Z = X[mine][:, expected[a]]
        want = np.linalg.solve(Z.T @ Z + np.eye(2), Z.T @ (y[mine] - 0.5))
        np.testing.assert_allclose(theta[a], want, rtol=1e-10, atol=1e-12)


def test_action_rule_uniform_before_the_selection_then_ridge_on_projected_rows():
    c = constants(K=3, d=8, T=60, s=1)
    agent = SupportRidge(c, epsilon=2.0, support_size=2, selection_users=6)
    cur = agent._make_curator(np.random.default_rng(3))
    obs = np.tile(np.linspace(-1, 1, 8), (3, 1))
    rng = np.random.default_rng(0)
    arms = [SupportRidge.action_rule(cur.release(), obs, rng) for _ in range(3000)]
    assert stats.chisquare(np.bincount(arms, minlength=3)).pvalue > 1e-6
    data = np.random.default_rng(4)
    for t in range(20):
        x = data.uniform(-1, 1, 8)
        cur.observe(np.tile(x, (3, 1)), t % 3, float(data.random() < 0.5))
    release = cur.release()
    assert release.support.shape == (3, 2) and not release.support.flags.writeable
    for _ in range(20):
        o = np.tile(data.uniform(-1, 1, 8), (3, 1))
        X = project_rows(o, release.support)
        np.testing.assert_array_equal(X, np.stack([o[a, release.support[a]] for a in range(3)]))
        assert (SupportRidge.action_rule(release, o, np.random.default_rng(9))
                == EpisodicRidge.action_rule(release.ridge, X, np.random.default_rng(9)))


def test_privacy_report():
    agent = SupportRidge(constants(), epsilon=4.0)
    report = agent.privacy_report()
    assert report.guarantee == "JDP" and report.epsilon == pytest.approx(4.0) and report.delta == 5e-5
    (event,) = report.events
    assert event["kind"] == "zcdp" and event["parallel"] and event["count"] == 1 + agent.estimator.schedule.n_episodes
    assert event["value"] == pytest.approx(zcdp_rho_for(4.0, 5e-5), rel=1e-8)
    assert "Delta = 2 tau B_c = 0.41024" in report.sensitivity_assumption
    off = SupportRidge(constants(), epsilon=math.inf).privacy_report()
    assert off.guarantee == "none"


@pytest.mark.parametrize("kwargs, match", [
    (dict(c=constants(d=10, s=10)), "sparsity s = 10 is d = 10"),
    (dict(c=constants(d=10, s=6)), "support_size in \\[6, 9\\]"),
    (dict(c=constants(), support_size=3), "support_size = 3 must be >= the sparsity s = 5"),
    (dict(c=constants(), support_size=400), "support_size"),
    (dict(c=constants(), selection_users=20_000), "selection_users"),
    (dict(c=constants(), ridge_params={"epsilon": 2.0}), "may not set 'epsilon'"),
    (dict(c=constants(), ridge_params={"gram_pool": True}), "gram_pool must be False"),
    (dict(c=constants(), entry_clip=0.0), "entry_clip"),
    (dict(c=constants(d=1, s=1)), "dim >= 2"),
])
def test_refusals_name_the_parameter_in_one_line(kwargs, match):
    c = kwargs.pop("c")
    with pytest.raises(ValueError, match=match) as info:
        SupportRidge(c, epsilon=1.0, **kwargs)
    assert "\n" not in str(info.value)
    with pytest.raises(TypeError, match="ridge_params"):
        SupportRidge(constants(), ridge_params=[1])


def test_registered_and_conformant_in_both_structures():
    assert AGENTS["support_ridge"] is SupportRidge
    env = gymnasium.make("dpbandit/SparseLogistic-v0", n_arms=3, dim=20, horizon=60)
    agent = make_agent("support_ridge", env, epsilon=1.0, selection_users=4, ridge_params={"first_episode": 3})
    check_private_agent(agent, env, n_rounds=16, audit=True, audit_samples=1000)
    env = gymnasium.make("dpbandit/GLMBandit-v0", n_arms=2, dim=20, structure="shared", theta="sparse", sparsity=2,
                         theta_norm="l1", theta_bound=1.0, horizon=60)
    agent = make_agent("support_ridge", env, epsilon=1.0, selection_users=4, ridge_params={"first_episode": 3})
    assert agent.selection.support_size == 4 and agent.estimator.cal.n_models == 1
    check_private_agent(agent, env, n_rounds=16, audit=True, audit_samples=1000)


def _regret(env, name, params, seed):
    agent = make_agent(name, env, **params)
    obs, _ = env.reset(seed=seed)
    agent.reset(seed)
    total = 0.0
    for _ in range(env.unwrapped.constants.horizon):
        arm = agent.act(obs)
        nxt, reward, _, _, info = env.step(arm)
        agent.update(obs, arm, reward, info)
        total += info["regret"]
        obs = nxt
    return total


def test_learns_on_the_sparse_logistic_problem():
    env = gymnasium.make("dpbandit/SparseLogistic-v0", n_arms=3, dim=100, contexts="ar", rho=0.5, horizon=10_000)
    for seed in range(2):
        ratio = _regret(env, "support_ridge", {"epsilon": 4.0}, seed) / _regret(env, "random", {}, seed)
        assert ratio < 0.7, ratio


# -- audits ------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_audit_selection_with_competing_coordinates():
    """Two users on arm 0 in the selection stage (d = 32, s' = 16, epsilon = 2, delta = 1e-2). Entries at the corners
    of the declared domain ||x||_inf <= 1 (clipped to tau in the scores): user 1 x = 1 (all coordinates), reward 1;
    user 2 x = (+1 on A, -1 on B) vs (-1 on A, +1 on B), reward 1, A and B the two halves. The scores are
    tau B_c (2 on A, 0 on B) vs (0 on A, 2 on B): every coordinate moves by Delta = 2 tau B_c, in opposite directions
    on the competing halves (the bounded-range bound is attained). Statistic |S cap A|, sufficient by symmetry."""
    c = constants(K=2, d=32, T=4, s=8)
    agent = SupportRidge(c, epsilon=2.0, delta=1e-2, support_size=16, selection_users=2)
    half = np.r_[np.ones(16), -np.ones(16)]
    users = {"A": [(np.ones((2, 32)), 0, 1.0), (np.tile(half, (2, 1)), 0, 1.0)],
             "B": [(np.ones((2, 32)), 0, 1.0), (np.tile(-half, (2, 1)), 0, 1.0)]}

    def mechanism_of(a):
        def mechanism(which, rng, n):
            out = np.empty(n)
            for i in range(n):
                cur = a._make_curator(rng)
                for u in users[which]:
                    cur.observe(*u)
                out[i] = np.sum(cur.release().support[0] < 16)
            return out
        return mechanism

    claimed = agent.privacy_report().epsilon
    kw = dict(n_samples=8_000, n_pilot=1_000, delta=1e-2, confidence=1 - 1e-6)
    good = audit(mechanism_of(agent), "A", "B", rng=np.random.default_rng(2), **kw)
    assert not good.violates(claimed), str(good)
    planted = copy.copy(agent)
    planted.selection = dataclasses.replace(agent.selection, scale=agent.selection.scale / 2)
    bad = audit(mechanism_of(planted), "A", "B", rng=np.random.default_rng(3), **kw)
    assert bad.violates(claimed), str(bad)


def _estimation_agent(gram_share):
    """d = 4 reduced to s' = 2 selected coordinates, shared, T = 4 (2 selection users, then one ridge episode of 2);
    the audited release is the estimation stage's first (the mechanism of agent.estimator at support_ridge's
    calibration: zCDP, rows clipped to sqrt(s') tau)."""
    c = constants(K=2, d=4, T=4, s=1, structure="shared")
    return SupportRidge(c, epsilon=1.0, delta=1e-2, support_size=2, selection_users=2,
                        ridge_params={"mode": "forget", "gram_share": gram_share, "first_episode": 2}).estimator


@pytest.mark.slow
def test_audit_estimation_stage_gram_pair_orthogonal_rows_beyond_the_clip():
    est = _estimation_agent(0.95)
    L = est.cal.L
    assert L == pytest.approx(math.sqrt(2) * 1.5 / math.sqrt(2 * math.log(8)))  # sqrt(s') tau at d = 4
    other = (np.array([[0.5, 0.0], [0.0, 0.0]]), 0, 0.5)

    def users_of(which):
        row = [1.0, 1.0] if which == "A" else [1.0, -1.0]
        return [(np.array([row, [0.0, 0.0]]), 0, 0.5), other]

    u, v = np.array([1.0, 1.0]) * L / math.sqrt(2), np.array([1.0, -1.0]) * L / math.sqrt(2)
    audit_release_pair(est, users_of, np.outer(u, u) - np.outer(v, v), np.zeros(2))


@pytest.mark.slow
def test_audit_estimation_stage_moment_pair_reward_at_both_ends():
    est = _estimation_agent(0.05)
    x = np.array([[1.0, 1.0], [0.0, 0.0]])
    other = (np.array([[0.5, 0.0], [0.0, 0.0]]), 0, 0.3)

    def users_of(which):
        return [(x, 0, 1.0 if which == "A" else 0.0), other]

    audit_release_pair(est, users_of, np.zeros((2, 2)), np.array([1.0, 1.0]) * est.cal.L / math.sqrt(2))


def test_rows_beyond_the_bound_are_refused_in_both_stages_and_an_infinite_bound_is_refused():
    """Review findings: after the selection a row whose out-of-support entries exceed the bound (or are NaN) was
    accepted (only x[S] enters a statistic, but it is bad input); an infinite context bound ended in a message about
    gram_share."""
    agent = SupportRidge(constants(K=2, d=6, T=40, s=1), epsilon=1.0, support_size=2, selection_users=4)
    cur = agent._make_curator(np.random.default_rng(0))
    row = np.full((2, 6), 0.5)
    for _ in range(4):
        cur.observe(row, 0, 1.0)
    outside = int(np.setdiff1d(np.arange(6), cur.release().support[0])[0])
    for bad in (5.0, math.nan):
        wrong = row.copy()
        wrong[0, outside] = bad
        with pytest.raises(ValueError, match="context_bound = 1"):
            cur.observe(wrong, 0, 1.0)
    with pytest.raises(ValueError, match="finite context_bound") as info:
        SupportRidge(dataclasses.replace(constants(), context_bound=math.inf), epsilon=1.0)
    assert "\n" not in str(info.value)
