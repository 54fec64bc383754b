"""Episodic ridge's public l2 row clip (dpbandit/agents/episodic_ridge.py ``row_clip``; docs/episodic-agents.md
§6.6): the default's known answers, the sensitivity uses the clip, the release is ridge on clipped rows (noise off),
the action rule clips the user's own rows, no batched form, and audits at the boundary of the declared domain
(rows beyond the clip) that pass at the calibrated noise and catch a planted x0.5."""

from __future__ import annotations

import dataclasses
import math

import gymnasium
import numpy as np
import pytest

import dpbandit  # noqa: F401  (registers the environments)
from dpbandit.agents import make_agent
from dpbandit.agents.batched import batched_form
from dpbandit.agents.episodic_ridge import EpisodicRidge, clip_rows, default_row_clip
from dpbandit.envs.constants import BanditConstants
from dpbandit.experiment.checks import check_private_agent
from tests.agents.ridge_audit import audit_release_pair


def constants(K=2, d=2, T=2, norm="linf", structure="shared"):
    return BanditConstants(
        n_arms=K, dim=d, horizon=T, structure=structure, link="logistic", context_norm=norm, context_bound=1.0,
        theta_norm="l1", theta_bound=3.0, sparsity=d, noise_std=0.0, reward_low=0.0, reward_high=1.0,
        mean_low=0.0, mean_high=1.0,
    )


def test_default_clip_known_answers():
    # b sqrt(d) * 1.5 / sqrt(2 ln(2 d)): d = 100 -> 15 / 3.25525 = 4.60794; d = 400 -> 30 / 3.65636 = 8.20480
    assert default_row_clip(constants(d=100)) == pytest.approx(15 / math.sqrt(2 * math.log(200)), rel=1e-12)
    assert default_row_clip(constants(d=100)) == pytest.approx(4.60794, abs=1e-5)
    assert default_row_clip(constants(d=400)) == pytest.approx(8.20480, abs=1e-5)
    assert default_row_clip(constants(d=100, norm="l2")) == math.inf  # the declared l2 bound is the clip
    cal = EpisodicRidge(constants(d=100, T=100), epsilon=1.0).cal
    assert cal.L == pytest.approx(4.60794, abs=1e-5)
    assert cal.sigma_G == pytest.approx(cal.L**2 / (math.sqrt(cal.gram_share) * cal.budget.mu) * (1 + 1e-9))
    assert "rows clipped to ||x||_2 <= L = 4.60794" in EpisodicRidge(constants(d=100, T=100),
                                                                      epsilon=1.0).privacy_report().sensitivity_assumption
    assert EpisodicRidge(constants(d=100, T=100), epsilon=1.0, row_clip=math.inf).cal.L == 10.0
    assert EpisodicRidge(constants(d=100, T=100), epsilon=1.0, row_clip=50.0).cal.row_clip == math.inf
    with pytest.raises(ValueError, match="row_clip"):
        EpisodicRidge(constants(d=100, T=100), epsilon=1.0, row_clip=0.0)


def test_noise_off_release_is_ridge_on_clipped_rows_and_the_rule_clips_the_users_rows():
    c = constants(K=3, d=4, T=12)
    agent = EpisodicRidge(c, epsilon=math.inf, first_episode=12, row_clip=1.0, centre=False)
    cur = agent._make_curator(np.random.default_rng(0))
    rng = np.random.default_rng(1)
    X, y = [], []
    for _ in range(12):
        obs = rng.uniform(-1, 1, size=(3, 4))
        arm = int(rng.integers(3))
        X.append(obs[arm] / max(1.0, np.linalg.norm(obs[arm])))  # clipped independently of clip_rows
        y.append(float(rng.integers(2)))
        cur.observe(obs, arm, y[-1])
    X, y = np.array(X), np.array(y)
    rel = cur.release()
    np.testing.assert_allclose(rel.theta[0], np.linalg.solve(X.T @ X + np.eye(4), X.T @ y), rtol=1e-10)
    # shared structure: the rule scores the clipped rows (a long row loses its length advantage)
    obs = np.array([[3.0, 0, 0, 0], [0.9, 0, 0, 0], [0, 0, 0, 0]])
    released = dataclasses.replace(rel, theta=np.array([[1.0, 0, 0, 0]]))
    scores = clip_rows(obs, 1.0) @ released.theta[0]
    assert scores[0] == 1.0 and EpisodicRidge.action_rule(released, obs, rng) == 0
    tie = dataclasses.replace(released, theta=np.array([[1.0, 0, 0, 0]]))
    assert {EpisodicRidge.action_rule(tie, np.array([[3.0, 0, 0, 0], [1.0, 0, 0, 0], [0, 0, 0, 0]]), rng)
            for _ in range(60)} == {0, 1}  # both rows clip to norm 1: a tie


def test_conformance_and_no_batched_form_when_clipping():
    env = gymnasium.make("dpbandit/SparseLogistic-v0", n_arms=3, dim=20, horizon=60)
    agent = make_agent("episodic_ridge", env, epsilon=1.0, first_episode=1)
    assert math.isfinite(agent.cal.row_clip)
    check_private_agent(agent, env, n_rounds=16, audit=True, audit_samples=1000)
    agents = [make_agent("episodic_ridge", env, epsilon=1.0) for _ in range(2)]
    for s, a in enumerate(agents):
        a.reset(s)
    assert batched_form(agents) is None


@pytest.mark.slow
def test_audit_orthogonal_rows_at_the_corners_of_the_declared_domain():
    """d = 2, ||x||_inf <= 1: x = (1, 1) vs x' = (1, -1) (norm sqrt 2, beyond the clip L = 1.2743), orthogonal, so
    the clipped Gram shift has the bound's Frobenius norm sqrt(2) L^2 (tight); 95 % of mu^2 on the Gram matrix."""
    agent = EpisodicRidge(constants(), epsilon=1.0, delta=1e-2, mode="forget", gram_share=0.95)
    L = agent.cal.L
    assert L == pytest.approx(math.sqrt(2) * 1.5 / math.sqrt(2 * math.log(4)))
    other = (np.array([[0.5, 0.0], [0.0, 0.0]]), 0, 0.3)

    def users_of(which):
        row = [1.0, 1.0] if which == "A" else [1.0, -1.0]
        return [(np.array([row, [0.0, 0.0]]), 0, 0.5), other]

    u, v = np.array([1.0, 1.0]) * L / math.sqrt(2), np.array([1.0, -1.0]) * L / math.sqrt(2)
    audit_release_pair(agent, users_of, np.outer(u, u) - np.outer(v, v), np.zeros(2))


@pytest.mark.slow
def test_audit_moment_pair_with_a_row_beyond_the_clip():
    """x = (1, 1) (clipped to norm L) with reward 1 vs 0: the centred moment shift x_c (hi - lo) has norm
    2 L B_c (tight); 95 % of mu^2 on the moment."""
    agent = EpisodicRidge(constants(), epsilon=1.0, delta=1e-2, mode="forget", gram_share=0.05)
    x = np.array([[1.0, 1.0], [0.0, 0.0]])
    other = (np.array([[0.5, 0.0], [0.0, 0.0]]), 0, 0.3)

    def users_of(which):
        return [(x, 0, 1.0 if which == "A" else 0.0), other]

    audit_release_pair(agent, users_of, np.zeros((2, 2)), np.array([1.0, 1.0]) * agent.cal.L / math.sqrt(2))
