"""The private agents' action distributions (issue 26, item 1): each static action rule's pi(a | x) on its release,
uniform over the tied arms, checked against the frequencies of the agent's own ``act`` (chi-square, p ~ 1e-6), and
used by replay (the IPS/DR intervals narrow against the played-action fallback)."""

import dataclasses
import warnings

import numpy as np
import pytest
from scipy import stats

from dpbandit.agents import EpisodicRidge, hyperparameters, make_agent
from dpbandit.agents.dp_ucb_release import DPUCBRelease
from dpbandit.agents.fliphat import FLIPHATRelease
from dpbandit.agents.oco_adapter import OCORelease
from dpbandit.offline import LoggedData, ReplayEnv, evaluate_offline
from dpbandit.offline.policies import agent_probabilities, rule_probabilities

K, D = 4, 2
X = np.array([0.6, -0.3])  # the current user's context (every arm's row: disjoint structure)
OBS = np.broadcast_to(X, (K, D))
DRAWS = 20_000
#: Episodic ridge's UCB and Thompson rules (``rule=``), where this version has them.
RELEASE_RULES = "rule" in hyperparameters(EpisodicRidge)
needs_rules = pytest.mark.skipif(not RELEASE_RULES, reason="episodic_ridge has no rule= parameter")


def _env(n=500):
    rng = np.random.default_rng(0)
    data = LoggedData(rng.uniform(-1, 1, (n, D)), rng.integers(K, size=n), rng.integers(2, size=n).astype(float), K,
                      pscore=np.full(n, 1 / K))
    return data, ReplayEnv.from_logged(data, n, context_norm="linf", theta_norm="l1", theta_bound=3.0)


def _theta(*scores):
    """(K, d) rows with ``x . theta_a = scores[a]`` (theta_a along x)."""
    return np.array(scores, dtype=float)[:, None] * X[None, :] / (X @ X)


def _planted(name, **params):
    """The agent ``name`` with a planted release whose rule ties arms 0 and 2 on ``OBS``, and the expected pi."""
    _, env = _env()
    agent = make_agent(name, env, **params)
    agent.reset(7)
    release = agent.release
    tie = np.array([0.5, 0.0, 0.5, 0.0])
    if name == "dp_hdb":  # arm 3 has the largest all-sample score but fails the h/2 pre-selection on the forced one
        forced = _theta(0.4, 0.4, 0.4, -1.0)
        planted = dataclasses.replace(release, theta=_theta(0.3, 0.1, 0.3, 0.9), theta_forced=forced)
    elif name == "fliphat":
        planted = FLIPHATRelease(_theta(0.3, 0.1, 0.3, -0.2), np.ones(K), 1)
    elif name == "episodic_ridge" and params.get("rule") == "ucb":  # arm 3: best greedy score, arms 0, 2: best index
        v_inv = np.stack([4 * np.eye(D), np.eye(D), 4 * np.eye(D), np.zeros((D, D))])
        planted = dataclasses.replace(release, theta=_theta(0.3, 0.1, 0.3, 0.9), v_inv=v_inv, beta=np.ones(K))
    elif name == "episodic_ridge" and not params.get("ucb_alpha"):
        planted = dataclasses.replace(release, theta=_theta(0.3, 0.1, 0.3, -0.2), v_inv=np.stack([np.eye(D)] * K))
    elif name == "episodic_ridge":  # arm 3 has the largest greedy score, arms 0 and 2 the largest UCB index
        v_inv = np.stack([4 * np.eye(D), np.eye(D), 4 * np.eye(D), np.zeros((D, D))])
        planted = dataclasses.replace(release, theta=_theta(0.3, 0.1, 0.3, 0.9), v_inv=v_inv)
    elif name == "dp_ucb":  # V_a = c_a^2 I, u_a = c_a^2 theta_a: index x . theta_a + beta ||x|| / c_a; arm 3 as above
        c = np.array([0.5, 1.0, 0.5, 10.0])[:, None]
        planted = DPUCBRelease(5, c[:, :, None] * np.eye(D), c**2 * _theta(0.3, 0.1, 0.3, 0.9), 0.5, False)
    else:  # oco, with exploration e: (1 - e) on the tie, e / K everywhere
        e = params["exploration"]
        planted = OCORelease(_theta(0.3, 0.1, 0.3, -0.2), e)
        tie = (1 - e) * tie + e / K
    agent._release = planted
    return agent, tie


def _frequencies(agent):
    return np.bincount([agent.act(OBS) for _ in range(DRAWS)], minlength=K)


def _check_against_act(agent, expected):
    probs = agent_probabilities(agent, OBS)
    assert probs is not None and np.allclose(probs, expected, atol=1e-12)
    counts = _frequencies(agent)
    support = probs > 0
    assert counts[~support].sum() == 0
    p = stats.chisquare(counts[support], DRAWS * probs[support]).pvalue
    assert p > 1e-6, (counts, probs)


@pytest.mark.parametrize("name, params", [
    ("dp_hdb", {}), ("fliphat", {}), ("episodic_ridge", {}), ("episodic_ridge", {"ucb_alpha": 1.0}),
    ("dp_ucb", {}), ("oco", {"exploration": 0.3, "learner": "dp-tofw"}),
    pytest.param("episodic_ridge", {"rule": "ucb"}, marks=needs_rules),
])
def test_a_planted_tie_is_uniform_over_the_tied_arms_as_act_plays_it(name, params):
    agent, expected = _planted(name, **params)
    _check_against_act(agent, expected)


def test_dp_hdb_warm_up_is_a_point_mass_on_its_round_robin_arm():
    _, env = _env()
    agent = make_agent("dp_hdb", env)
    agent.reset(0)
    for t in range(3):  # the rule reads the round from the release: arm t mod K, deterministic
        assert agent.release.theta_forced is None
        assert np.array_equal(agent_probabilities(agent, OBS), np.eye(K)[t % K])
        assert {agent.act(OBS) for _ in range(50)} == {t % K}
        agent.update(OBS, t % K, 1.0, {})


PRIVATE = [("dp_hdb", {}), ("fliphat", {}), ("episodic_ridge", {}), ("dp_ucb", {}),
           ("oco", {"exploration": 0.2, "learner": "dp-tofw"})] + ([("episodic_ridge", {"rule": "ucb"})] * RELEASE_RULES)


@pytest.mark.parametrize("name, params", PRIVATE)
def test_every_private_agent_has_its_distribution_in_every_replayed_round(name, params):
    data, env = _env(400)
    agent = make_agent(name, env, **params)
    agent.reset(0)
    for i in range(data.n_rounds):  # along a replay: a distribution in every round, and the played arm is in it
        obs = np.broadcast_to(data.context[i], (K, D))
        probs = agent_probabilities(agent, obs)
        arm = agent.act(obs)
        assert probs is not None and probs[arm] > 0 and probs.sum() == pytest.approx(1)
        if arm == data.action[i]:
            agent.update(obs, arm, float(data.reward[i]), {})
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no played-action fallback warning
        result = evaluate_offline(data, make_agent(name, env, **params), 0, estimators=("ips",))
    assert result.played_rounds == 0


def test_an_undefined_distribution_is_stated():
    data, env = _env(400)
    with pytest.warns(RuntimeWarning, match=r"LassoBandit: its action distribution is not defined in 400 of 400"):
        result = evaluate_offline(data, make_agent("lasso", env), 0, estimators=("ips",))
    assert result.played_rounds == 400 and (result.table()["played_rounds"] == 400).all()
    assert set(np.unique(result.pi)) == {0.0, 1.0}


@needs_rules
def test_thompson_rule_is_undefined_and_stated():
    """No closed form for the chance that each arm wins a Gaussian draw: the played action stands in, said so."""
    data, env = _env(400)
    with pytest.warns(RuntimeWarning, match=r"EpisodicRidge: its action distribution is not defined in 400 of 400"):
        result = evaluate_offline(data, make_agent("episodic_ridge", env, rule="thompson"), 0, estimators=("ips",))
    assert result.played_rounds == 400


def test_replay_uses_the_distribution_and_its_intervals_narrow():
    """Episodic ridge before its first release ties every arm: uniform play, as its distribution says. On a uniform
    log its IPS weights are then 1 (IPS = the log's mean reward), against K or 0 for the played action's one-hot."""
    n = 4000
    rng = np.random.default_rng(3)
    context = rng.uniform(-1, 1, (n, D))
    means = 0.5 + 0.3 * context @ rng.normal(size=(D, K)) / 2
    action = rng.integers(K, size=n)
    reward = (rng.random(n) < means[np.arange(n), action]).astype(float)
    data = LoggedData(context, action, reward, K, pscore=np.full(n, 1 / K), extra={"expected_reward": means})
    env = ReplayEnv.from_logged(data, n, context_norm="linf")

    class PlayedAction(type(make_agent("episodic_ridge", env))):  # overrides act: its distribution is undefined
        def act(self, observation):
            return super().act(observation)

    options = dict(estimators=("ips", "dr"), n_resamples=499)
    exact = evaluate_offline(data, make_agent("episodic_ridge", env, first_episode=n), 0, **options)
    with pytest.warns(RuntimeWarning, match="not defined in 4000 of 4000"):
        played = evaluate_offline(data, PlayedAction(env.constants, first_episode=n), 0, **options)
    assert np.allclose(exact.pi, 1 / K) and exact.played_rounds == 0 and played.played_rounds == n
    assert exact.estimates["ips"].value == pytest.approx(reward.mean())
    for name in ("ips", "dr"):
        ratio = exact.estimates[name].half_width / played.estimates[name].half_width
        assert ratio < 0.75, (name, ratio)
        assert exact.estimates[name].covers(exact.truth)


def test_a_plug_in_rule_is_enumerated_exactly_or_left_undefined():
    """A rule's uniform integer draws are enumerated (here nested ones: arm 0 w.p. 1/2, arms 1-3 w.p. 1/6 each);
    any other draw leaves the distribution undefined; a rule without draws is a point mass."""
    def nested(release, observation, rng):  # integers(n), choice(n) and integers(low, high[, endpoint])
        if rng.integers(2) == 0:
            return 0
        return int(rng.integers(1, 4)) if rng.choice(2) else int(rng.integers(1, 3, endpoint=True))

    def coin(release, observation, rng):
        return int(rng.random() < 0.5)

    assert np.allclose(rule_probabilities(nested, None, OBS), [1 / 2, 1 / 6, 1 / 6, 1 / 6])
    rng = np.random.default_rng(1)
    counts = np.bincount([nested(None, OBS, rng) for _ in range(DRAWS)], minlength=K)
    assert stats.chisquare(counts, DRAWS * rule_probabilities(nested, None, OBS)).pvalue > 1e-6
    assert rule_probabilities(coin, None, OBS) is None
    assert np.array_equal(rule_probabilities(lambda r, x, rng: 2, None, OBS), np.eye(K)[2])
