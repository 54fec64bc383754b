"""The OCO adapter agent: learners per arm, bandit / full-information feedback, privacy routing (spec §7)."""

from __future__ import annotations

import math

import gymnasium
import numpy as np
import pytest

import dpbandit  # noqa: F401  (registers the environments)
from dpbandit.agents import AGENTS, make_agent
from dpbandit.agents.oco_adapter import OCOAgent, OCORelease
from dpbandit.experiment import AgentSpec, ExperimentConfig, run_experiment, simulate
from dpbandit.experiment.checks import check_agent, check_private_agent

ENV = dict(n_arms=3, dim=5, horizon=200)
INF = math.inf


def env(full: bool = True, env_id: str = "dpbandit/SharedLinear-v0", **kwargs):
    return gymnasium.make(env_id, **{**ENV, **kwargs}, full_information=full)


def test_registered_as_oco():
    assert AGENTS["oco"] is OCOAgent


@pytest.mark.parametrize("feedback", ["bandit", "full"])
@pytest.mark.parametrize("learner, params", [("ldp-coordinatewise", {"tau": 0.5}), ("ldp-reduction", {"tau": 0.5}),
                                             ("pftal", {}), ("pigd", {}), ("wdp-cocop", {"window": 16})])
def test_runs_in_both_feedback_modes_through_simulate(learner, params, feedback):
    e = env()
    own = {"epsilon": None} if "tau" in params else {}
    agent = make_agent("oco", e, learner=learner, feedback=feedback, exploration=0.05, learner_params=params, **own)
    frame = simulate(e, agent, seed=3)
    assert len(frame) == ENV["horizon"] and np.all(np.isfinite(frame["cumulative_regret"]))
    again = simulate(e, make_agent("oco", e, learner=learner, feedback=feedback, exploration=0.05,
                                   learner_params=params, **own), seed=3)
    np.testing.assert_array_equal(frame.to_numpy(), again.to_numpy())  # same seed, same run


def test_ldp_report_names_guarantee_feedback_and_unit():
    e = env()
    tau = 0.5
    for feedback, copies in (("bandit", 1), ("full", ENV["n_arms"])):
        agent = make_agent("oco", e, learner="ldp-coordinatewise", feedback=feedback, epsilon=None,
                           learner_params={"tau": tau})
        report = agent.privacy_report()
        assert report.guarantee == "LDP" and report.delta == 0.0
        assert report.epsilon == pytest.approx(copies * tau * ENV["dim"])
        assert f"{feedback} feedback" in report.composition and f"{feedback} feedback" in report.mechanisms[0]
        assert "one user = one round" in report.privacy_unit
        assert "per-user" in report.note and "logging the action" in report.note
        assert agent.private


def test_central_learners_route_to_jdp_and_compose_the_affected_learners():
    """Bandit feedback: one copy of the learner's ledger for the tree learners, whose zero sample costs at most half
    a replace-one change (tests/optim/test_zero_sample.py), two for POCP (PIGD); full information: K copies."""
    e = env()
    for feedback, copies in (("bandit", 1), ("full", ENV["n_arms"])):
        agent = make_agent("oco", e, learner="pftal", feedback=feedback, epsilon=None, learner_params={"epsilon": 0.5})
        report = agent.privacy_report()
        learner_report = agent.learners[0].privacy_report()
        assert learner_report.guarantee == "DP" and report.guarantee == "JDP"
        assert report.epsilon == pytest.approx(copies * learner_report.epsilon)  # pure DP events add up
        assert len(report.events) == copies * len(learner_report.events)
        assert "billboard" in report.note and f"{copies} cop" in report.composition
    assert "zero_sample_halves_sensitivity" in make_agent("oco", e, learner="pftal").privacy_report().composition
    for learner, params in (("pqftl", {}), ("wdp-cocop", {"window": 16}), ("wdp-cocol", {"window": 16})):
        agent = make_agent("oco", e, learner=learner, epsilon=None, learner_params={"epsilon": 0.5, **params})
        assert len(agent.privacy_report().events) == len(agent.learners[0].privacy_report().events)
        assert agent.privacy_report().epsilon == pytest.approx(agent.learners[0].privacy_report().epsilon)
    gaussian = make_agent("oco", e, learner="pigd", epsilon=None, learner_params={"epsilon": 0.5, "delta": 1e-5})
    assert gaussian.privacy_report().guarantee == "JDP" and gaussian.privacy_report().delta == 1e-5
    assert gaussian.privacy_report().epsilon > gaussian.learners[0].privacy_report().epsilon
    assert "at most 2 learners" in gaussian.privacy_report().composition


def test_window_learners_report_window_jdp_never_jdp():
    agent = make_agent("oco", env(), learner="wdp-cocop", learner_params={"window": 16})
    report = agent.privacy_report()
    assert report.guarantee == "window-JDP" and report.window == 16
    assert report.label.startswith("window-JDP W=16")
    assert "older" in report.note


def test_noise_off_is_not_private():
    agent = make_agent("oco", env(), learner="ldp-coordinatewise", epsilon=None, learner_params={"tau": INF})
    report = agent.privacy_report()
    assert report.guarantee == "none" and report.epsilon == INF and not agent.private
    assert "bandit feedback" in report.mechanisms[0]


def test_full_information_needs_rewards_of_every_arm():
    with pytest.raises(ValueError, match="full_information=True"):
        make_agent("oco", env(full=False), feedback="full")
    agent = OCOAgent(env(full=False).unwrapped.constants, feedback="full")
    with pytest.raises(ValueError, match="info\\['rewards'\\]"):
        agent.update(np.zeros((3, 5)), 0, 0.0, {"regret": 0.0})


def test_bandit_feedback_feeds_zero_samples_to_the_arms_not_played():
    e = env()
    agent = make_agent("oco", e, learner="ldp-coordinatewise", epsilon=None, learner_params={"tau": INF})
    obs, _ = e.reset(seed=0)
    agent.reset(0)
    _, reward, _, _, info = e.step(1)
    agent.update(obs, 1, reward, info)
    thetas = agent._release.thetas
    assert np.any(thetas[1] != 0.0)
    assert np.all(thetas[[0, 2]] == 0.0)  # a zero gradient leaves a parameter-free learner at 0
    assert all(learner.t == 1 for learner in agent.learners)  # one shared clock
    full = make_agent("oco", e, learner="ldp-coordinatewise", feedback="full", epsilon=None,
                      learner_params={"tau": INF})
    full.reset(0)
    full.update(obs, 1, reward, info)
    assert np.all(np.any(full._release.thetas != 0.0, axis=1))  # every arm learned from its own reward


def test_action_rule_is_greedy_or_epsilon_greedy_on_the_release():
    rng = np.random.default_rng(0)
    thetas = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    obs = np.array([[0.2, 0.0], [0.0, 0.9], [0.5, 0.5]])
    greedy = OCORelease(thetas, 0.0)
    assert all(OCOAgent.action_rule(greedy, obs, rng) == 1 for _ in range(20))
    explore = OCORelease(thetas, 1.0)
    counts = np.bincount([OCOAgent.action_rule(explore, obs, rng) for _ in range(3000)], minlength=3)
    assert np.all(np.abs(counts - 1000) < 5 * np.sqrt(3000 * (1 / 3) * (2 / 3)))


def test_conformance_checks_pass():
    e = env(horizon=60)
    check_agent(make_agent("oco", e, learner="ldp-coordinatewise", epsilon=None, learner_params={"tau": INF}), e)
    check_private_agent(make_agent("oco", e, learner="ldp-coordinatewise", epsilon=None,
                                   learner_params={"tau": 1.0}), e)
    check_private_agent(make_agent("oco", e, learner="pftal", exploration=0.1), e)


def test_environment_bounds_are_passed_to_the_learners():
    e = gymnasium.make("dpbandit/SparseLinear-v0", horizon=50)
    agent = make_agent("oco", e, learner="pftal")
    c = e.unwrapped.constants
    learner = agent.learners[0]
    assert learner.x_bound == pytest.approx(c.context_bound * math.sqrt(c.dim))  # l_inf contexts in l2
    assert learner.y_bound == pytest.approx(max(abs(c.mean_low), abs(c.mean_high)) + 4 * c.noise_std)
    own = make_agent("oco", e, learner="pftal", mu=0.5, learner_params={"x_bound": 2.0})
    assert own.learners[0].x_bound == 2.0 and own.learners[0].mu == 0.5
    assert learner.mu == 0.1  # DEFAULT_MU for a learner that needs strong convexity
    assert make_agent("oco", e, learner="ldp-coordinatewise").learners[0].mu == 0.0
    assert make_agent("oco", e).loss_name == "squared"
    assert make_agent("oco", gymnasium.make("dpbandit/SparseLogistic-v0", horizon=50)).loss_name == "logistic"


@pytest.mark.parametrize("params, exc, text", [
    (dict(learner="sgd"), ValueError, "unknown learner"),
    (dict(loss="hinge"), ValueError, "loss"),
    (dict(feedback="partial"), ValueError, "feedback"),
    (dict(exploration=1.5), ValueError, "exploration"),
    (dict(learner_params=[("tau", 1.0)]), TypeError, "learner_params"),
    (dict(learner_params={"rng": None}), TypeError, "must not set"),
    (dict(epsilon=None, learner_params={"tau": -1.0}), ValueError, "tau"),
    (dict(learner_params={"eta": 1.0}), TypeError, "unknown hyperparameter 'eta'"),
    (dict(learner="pftal", mu=0.0), ValueError, "mu"),
    (dict(learner_params={"mu": 0.1}), TypeError, "use mu="),
    (dict(mu=-1.0), ValueError, "mu"),
    (dict(tau=1.0), TypeError, "unknown hyperparameter 'tau' for agent 'oco'"),
])
def test_bad_hyperparameters_fail_at_construction(params, exc, text):
    with pytest.raises(exc, match=text):
        make_agent("oco", env(), **params)


def test_runs_as_an_experiment_agent():
    config = ExperimentConfig(
        env_id="dpbandit/SharedLinear-v0", env_kwargs={**ENV, "full_information": True}, seeds=(0, 1), checkpoints=10,
        agents=[AgentSpec("oco", "LDP bandit", {"learner": "ldp-coordinatewise", "epsilon": 2.0}),
                AgentSpec("oco", "PFTAL full", {"learner": "pftal", "feedback": "full", "mu": 0.05})])
    result = run_experiment(config, out=False, progress=False)
    assert set(result.summary["agent"]) == {"LDP bandit", "PFTAL full"}


@pytest.mark.parametrize("learner, params, feedback", [
    ("ldp-coordinatewise", {}, "bandit"), ("ldp-coordinatewise", {}, "full"), ("ldp-reduction", {}, "bandit"),
    ("pftal", {}, "bandit"), ("pftal", {}, "full"), ("pqftl", {}, "bandit"), ("pigd", {}, "bandit"),
    ("pgiga", {}, "full"), ("dp-pofw", {}, "bandit"), ("wdp-cocop", {"window": 16}, "bandit")])
def test_default_budget_is_epsilon_one_for_the_agent(learner, params, feedback):
    """Issue 12 item 5: the agent's composed report states the budget it was given (default epsilon = 1, delta =
    1/T for Gaussian-noise learners), whatever the learner and the number of learners one user affects."""
    e = env()
    for epsilon in (1.0, 0.3):
        kwargs = {} if epsilon == 1.0 else {"epsilon": epsilon}
        report = make_agent("oco", e, learner=learner, feedback=feedback, learner_params=params, **kwargs
                            ).privacy_report()
        assert report.guarantee in ("JDP", "window-JDP", "LDP")
        assert report.epsilon == pytest.approx(epsilon, rel=1e-6) and report.epsilon <= epsilon * (1 + 1e-12)
        assert report.delta in (0.0, 1.0 / ENV["horizon"])


def test_default_ldp_budget_spreads_epsilon_over_coordinates():
    agent = make_agent("oco", env())
    assert agent.epsilon == 1.0
    np.testing.assert_allclose(agent.learners[0].tau, 1.0 / ENV["dim"])
    assert agent.privacy_report().label == "LDP (ε=1, δ=0)"
    off = make_agent("oco", env(), epsilon=INF)
    assert off.privacy_report().guarantee == "none" and not off.private
