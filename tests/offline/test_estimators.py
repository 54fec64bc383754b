"""The off-policy estimators, policies, reward models, positions and the Open Bandit Dataset layout (issue 26)."""

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.linear_model import LogisticRegression, Ridge

from dpbandit.agents import make_agent
from dpbandit.offline import (LoggedData, ReplayEnv, evaluate_offline, evaluate_positions, fit_reward_model,
                              fixed_arm, positions_frame, read_open_bandit, uniform_policy)
from dpbandit.offline.estimators import ESTIMATORS, RARE_EVENTS, estimate
from dpbandit.offline.policies import agent_probabilities, policy_matrix


def _log(n=3000, k=4, seed=0, rate=None):
    rng = np.random.default_rng(seed)
    context = rng.uniform(-1, 1, size=(n, 2))
    means = np.clip(0.5 + 0.3 * context @ rng.normal(size=(2, k)) / 2, 0, 1) if rate is None else np.full((n, k), rate)
    action = rng.integers(k, size=n)
    reward = (rng.random(n) < means[np.arange(n), action]).astype(float)
    return LoggedData(context, action, reward, k, pscore=np.full(n, 1 / k), extra={"expected_reward": means})


def test_bca_interval_equals_scipys_bca_for_mean_and_ratio_estimators():
    """The O(n) jackknife gives exactly scipy.stats.bootstrap(method='BCa')'s interval (same resamples)."""
    data = _log(n=400)
    rng = np.random.default_rng(1)
    pi = rng.dirichlet(np.ones(4), 400)
    w = pi[np.arange(400), data.action] / data.pscore
    for name, args, statistic in [
        ("ips", (w * data.reward,), lambda x, axis=-1: x.mean(axis=axis)),
        ("snips", (w * data.reward, w), lambda x, y, axis=-1: x.sum(axis=axis) / y.sum(axis=axis)),
    ]:
        ours = estimate(name, data.reward, data.action, data.pscore, pi, rng=np.random.default_rng(5))
        ref = stats.bootstrap(args, statistic, method="BCa", n_resamples=999, paired=len(args) > 1, vectorized=True,
                              random_state=np.random.default_rng(5)).confidence_interval
        assert (ours.low, ours.high) == pytest.approx((ref.low, ref.high), abs=1e-12), name
        assert ours.method == "bca"


def test_t_interval_and_effective_sample_size():
    data = _log(n=2000)
    pi = fixed_arm(0, 2000, 4)
    e = estimate("ips", data.reward, data.action, data.pscore, pi, interval="t")
    terms = 4 * (data.action == 0) * data.reward
    half = stats.t.ppf(0.975, 1999) * terms.std(ddof=1) / math.sqrt(2000)
    assert e.value == pytest.approx(terms.mean()) and e.half_width == pytest.approx(half)
    assert e.ess == pytest.approx(np.count_nonzero(data.action == 0))  # equal weights: the matched rounds


def test_rare_rewards_never_give_a_zero_width_interval():
    """No rewarded matched round: the interval is [0, exact bound], not 0 +- 0; with the full distribution of
    uniform play every logged reward counts (issue 26: 13 clicks in 3,322 rounds, 80 actions)."""
    n, k = 3322, 80
    rng = np.random.default_rng(2)
    action = rng.integers(k, size=n)
    reward = np.zeros(n)
    reward[rng.choice(n, 13, replace=False)] = 1.0
    pscore = np.full(n, 1 / k)
    arm = int(np.setdiff1d(np.arange(k), action[reward > 0])[0])
    fixed = estimate("ips", reward, action, pscore, fixed_arm(arm, n, k), reward_range=(0, 1))
    bound = k * stats.beta.ppf(0.975, 1, n)  # w_max * Clopper-Pearson upper bound of 0 events in n rounds
    assert fixed.value == 0 and fixed.low == 0 and fixed.high == pytest.approx(bound) and fixed.method == "bca+exact"
    uniform = estimate("ips", reward, action, pscore, uniform_policy(n, k))
    assert uniform.value == pytest.approx(13 / n) and uniform.low > 0 and uniform.high > uniform.low
    assert RARE_EVENTS > 0 and uniform.ess == pytest.approx(n)
    ones = np.ones(n)  # the mirror image: every matched reward at the top of the range
    top = estimate("ips", ones, action, pscore, fixed_arm(0, n, k), reward_range=(0, 1))
    assert top.high >= 1 and top.low < 1 - 0.5 * k * stats.beta.ppf(0.975, 1, n)


def test_tiny_propensities_warn_once_with_the_effective_sample_size():
    data = _log(n=500)
    pscore = data.pscore.copy()
    pscore[7] = 1e-6
    pi = fixed_arm(int(data.action[7]), 500, 4)
    with pytest.warns(RuntimeWarning) as record:
        e = estimate("ips", data.reward, data.action, pscore, pi)
    messages = [str(r.message) for r in record]
    assert len(messages) == 1 and "\n" not in messages[0]
    assert messages[0].startswith("ips: importance weights up to 1e+06 (propensity 1e-06 at round 7); effective "
                                  "sample size")
    assert math.isfinite(e.value) and math.isfinite(e.low) and math.isfinite(e.high)


def test_estimators_check_their_inputs():
    data = _log(n=50)
    pi = uniform_policy(50, 4)
    with pytest.raises(ValueError, match="estimator must be one of"):
        estimate("magic", data.reward, data.action, data.pscore, pi)
    with pytest.raises(ValueError, match=r"estimator 'dr' needs a reward model q of shape \(50, 4\)"):
        estimate("dr", data.reward, data.action, data.pscore, pi)
    with pytest.raises(ValueError, match=r"pi must have shape \(n_rounds, K\) = \(50, K\)"):
        estimate("ips", data.reward, data.action, data.pscore, pi[:10])
    with pytest.raises(ValueError, match="clip"):
        estimate("clipped_ips", data.reward, data.action, data.pscore, pi, clip=0)
    with pytest.raises(ValueError, match=r"row 3 sums to 2"):
        policy_matrix(np.where(np.arange(50)[:, None] == 3, 0.5, 0.25) * np.ones((50, 4)), data.context, 4)
    with pytest.raises(ValueError, match=r"shape \(n_rounds, K\) = \(50, 4\), got \(50, 3\)"):
        policy_matrix(lambda x: np.full((50, 3), 1 / 3), data.context, 4)
    with pytest.raises(TypeError, match="must be a dpbandit Agent or a policy"):
        evaluate_offline(data, "uniform", 0)


def test_a_policy_given_as_a_callable_equals_the_same_array():
    data = _log(n=800)

    def softmax(x):
        scores = np.column_stack([x[:, 0], -x[:, 0], x[:, 1], 0 * x[:, 1]])
        e = np.exp(scores)
        return e / e.sum(axis=1, keepdims=True)

    a = evaluate_offline(data, softmax, 0, estimators=("ips", "dr"))
    b = evaluate_offline(data, softmax(data.context), 0, estimators=("ips", "dr"))
    assert a.estimates == b.estimates and a.privacy_report is None


def test_built_in_agents_expose_their_action_probabilities():
    data = _log(n=200)
    env = ReplayEnv.from_logged(data, 200, context_norm="linf", theta_norm="l1", theta_bound=3.0)
    obs = np.broadcast_to(data.context[0], (4, 2))
    assert np.allclose(agent_probabilities(make_agent("random", env), obs), 0.25)
    greedy = make_agent("greedy", env)
    assert np.allclose(agent_probabilities(greedy, obs), 0.25)  # all scores tie before any data
    eps = make_agent("egreedy", env, epsilon=0.2)
    greedy.update(obs, 2, 1.0, {})
    eps.update(obs, 2, 1.0, {})
    assert np.allclose(agent_probabilities(greedy, obs), np.eye(4)[2])
    assert np.allclose(agent_probabilities(eps, obs), 0.8 * np.eye(4)[2] + 0.05)
    dp = make_agent("dp_ucb", env, epsilon=1.0)  # every arm ties before any data (one context for all)
    assert np.allclose(agent_probabilities(dp, obs), 0.25)  # (tests/offline/test_rule_probabilities.py)
    result = evaluate_offline(data, make_agent("linucb", env), 0, estimators=("ips",))
    assert np.allclose(result.pi.sum(axis=1), 1) and result.logged == 200


def test_reward_models_any_sklearn_estimator_and_folds():
    data = _log(n=1200)
    ridge = fit_reward_model(data, "ridge", folds=3)
    sk = fit_reward_model(data, Ridge(alpha=1.0), folds=3)
    logistic = fit_reward_model(data, LogisticRegression(), folds=2)
    for q in (ridge, sk, logistic):
        assert q.shape == (1200, 4) and np.isfinite(q).all()
    truth = data.extra["expected_reward"]
    assert np.corrcoef(ridge.ravel(), truth.ravel())[0, 1] > 0.8
    assert np.corrcoef(logistic.ravel(), truth.ravel())[0, 1] > 0.8
    with pytest.raises(ValueError, match="reward_model must be one of"):
        fit_reward_model(data, "neural")
    with pytest.raises(TypeError, match="reward_model must be a name"):
        fit_reward_model(data, object())
    with pytest.raises(ValueError, match="folds"):
        fit_reward_model(data, "ridge", folds=1)
    boosted = evaluate_offline(data, uniform_policy(1200, 4), 0, estimators=("dm", "dr"), reward_model="boosting",
                               folds=2)
    assert boosted.estimates["dm"].method == "bca-fixed-model" and boosted.estimates["dr"].method == "bca"


def test_multi_position_logs_per_position_and_pooled(tmp_path):
    data = _log(n=1500)
    position = np.arange(1500) % 3
    logged = LoggedData(data.context, data.action, data.reward, 4, pscore=data.pscore, position=position)
    path = logged.write(tmp_path / "log.csv")
    back = pd.read_csv(path)
    assert "position" in back.columns
    results = evaluate_positions(logged, uniform_policy(1500, 4), 0, estimators=("ips",))
    assert list(results) == ["0", "1", "2", "pooled"]
    frame = positions_frame(results)
    assert list(frame["position"]) == ["0", "1", "2", "pooled"]
    assert frame.loc[3, "value"] == pytest.approx(data.reward.mean())
    assert "position independence" not in frame.loc[0, "assumption"] and "position" in frame.loc[3, "assumption"]
    only_one = LoggedData(data.context, data.action, data.reward, 4, pscore=data.pscore, position=np.ones(1500))
    assert list(evaluate_positions(only_one, uniform_policy(1500, 4), 0, estimators=("ips",))) == ["1"]


def test_open_bandit_dataset_layout(tmp_path):
    """A small synthetic campaign in the Open Bandit Dataset's layout: positions 1..3 ranked from 0, user features
    one-hot (drop_first), K from item_context.csv, rows sorted by timestamp."""
    rng = np.random.default_rng(0)
    n, k = 60, 5
    folder = tmp_path / "random" / "all"
    folder.mkdir(parents=True)
    frame = pd.DataFrame({"timestamp": pd.date_range("2019-11-24", periods=n, freq="min")[::-1].astype(str),
                          "item_id": rng.integers(k - 1, size=n), "position": rng.integers(1, 4, size=n),
                          "click": rng.integers(2, size=n), "propensity_score": np.full(n, 1 / k),
                          "user_feature_0": rng.choice(["a1f", "b2e", "c3d"], size=n),
                          "user_feature_1": rng.choice(["x", "y"], size=n)})
    for i in range(k):
        frame[f"user-item_affinity_{i}"] = rng.integers(3, size=n)
    frame.to_csv(folder / "all.csv")
    pd.DataFrame({"item_id": range(k), "item_feature_0": rng.normal(size=k),
                  "item_feature_1": rng.choice(["p", "q"], size=k)}).to_csv(folder / "item_context.csv")
    data = read_open_bandit(folder)
    order = np.argsort(frame["timestamp"].to_numpy(), kind="stable")
    assert data.n_actions == k and data.n_rounds == n and data.dim == 3  # 3 - 1 + 2 - 1 one-hot columns
    assert np.array_equal(data.action, frame["item_id"].to_numpy()[order])
    assert np.array_equal(data.position, frame["position"].to_numpy()[order] - 1) and data.positions == [0, 1, 2]
    assert data.action_context.shape == (k, 2)
    assert read_open_bandit(folder / "all.csv", affinity=True).dim == 3 + k
    frame.drop(columns=["click"]).to_csv(folder / "all.csv")
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['click'\]: not the Open Bandit Dataset layout"):
        read_open_bandit(folder)


def test_every_estimator_is_finite_on_a_log_where_the_policy_never_matches():
    data = _log(n=300, k=3)
    action = np.minimum(data.action, 1)
    never = LoggedData(data.context, action, data.reward, 3, pscore=np.full(300, 1 / 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        result = evaluate_offline(never, fixed_arm(2, 300, 3), 0, estimators=ESTIMATORS)
    for e in result.estimates.values():
        assert all(math.isfinite(v) for v in (e.value, e.low, e.high)) and e.high > e.low, e


def test_the_logging_distribution_and_the_truth_when_the_log_keeps_them():
    """OBP-style extra['pi_b'] (n, K, len_list) gives the propensities when pscore is missing and makes the
    rare-reward bound's largest weight exact; extra['expected_reward'] gives OfflineResult.truth."""
    data = _log(n=2000)
    pi_b = np.tile([0.4, 0.3, 0.2, 0.1], (2000, 1))
    rng = np.random.default_rng(4)
    action = np.array([rng.choice(4, p=row) for row in pi_b])
    logged = LoggedData(data.context, action, data.reward, 4, extra={"pi_b": pi_b[:, :, None],
                                                                     "expected_reward": data.extra["expected_reward"]})
    result = evaluate_offline(logged, uniform_policy(2000, 4), 0, estimators=("ips", "dr"))
    assert np.allclose(result.estimates["ips"].ess, (0.25 / pi_b[np.arange(2000), action]).sum() ** 2
                       / ((0.25 / pi_b[np.arange(2000), action]) ** 2).sum())
    assert result.truth == pytest.approx(data.extra["expected_reward"].mean())
    assert "truth" in result.table().columns
    zero = pi_b.copy()
    zero[:, 3], zero[:, 0] = 0.0, 0.5
    with pytest.warns(RuntimeWarning, match=r"ips: the policy plays an action the logging policy never plays"):
        estimate("ips", data.reward, np.minimum(action, 2), zero[np.arange(2000), np.minimum(action, 2)],
                 uniform_policy(2000, 4), pi_b=zero)


def test_a_static_policys_replay_draws_are_not_the_loggers_own():
    """log_policy draws the logged actions from stream(seed, 'exploration'); replaying uniform play with the same
    seed must not reuse those draws (before: 2/3 of a K = 3 uniform log was accepted instead of 1/3)."""
    import gymnasium

    import dpbandit.envs  # noqa: F401
    from dpbandit.offline import log_policy

    env = gymnasium.make("dpbandit/SparseLogistic-v0", horizon=10_000, n_arms=3, dim=5, sparsity=2, instance_seed=0)
    data = log_policy(env, 3000, seed=1)
    accepted = evaluate_offline(data, uniform_policy(3000, 3), 1, estimators=("replay",)).accepted
    assert abs(accepted - 1000) < 4 * math.sqrt(3000 * (1 / 3) * (2 / 3))


def test_dm_refit_bootstrap_equals_a_refit_per_resample_in_any_memory_budget():
    """``ridge_dm_deviations`` is the direct method refitted on each resample (checked against an explicit loop that
    refits ridge per resample), whatever pieces it works in: the resamples' draws and the sums do not depend on the
    memory budget beyond rounding."""
    from dpbandit.offline import LoggedData
    from dpbandit.offline.reward_model import ridge_dm_deviations

    rng = np.random.default_rng(4)
    n, d, k = 300, 3, 2
    context = rng.normal(size=(n, d))
    action = rng.integers(k, size=n)
    reward = context[:, 0] * (action == 0) + rng.normal(scale=0.1, size=n)
    data = LoggedData(context, action, reward, k)
    pi = rng.dirichlet(np.ones(k), size=n)
    big = ridge_dm_deviations(data, pi, np.random.default_rng(9), n_resamples=13)
    small = ridge_dm_deviations(data, pi, np.random.default_rng(9), n_resamples=13, memory=n + 1)  # 1 resample, 1 row
    np.testing.assert_allclose(small, big, rtol=0, atol=1e-12)

    x = np.hstack([context, np.ones((n, 1))])
    draws = np.random.default_rng(9).multinomial(n, np.full(n, 1.0 / n), size=13)

    def dm(weights):
        value = 0.0
        for a in range(k):
            w = weights * (action == a)
            theta = np.linalg.solve(np.eye(d + 1) + (x * w[:, None]).T @ x, (x * w[:, None]).T @ reward)
            value += (weights * pi[:, a]) @ (x @ theta) / n
        return value

    expected = np.array([dm(c.astype(float)) for c in draws]) - dm(np.ones(n))
    np.testing.assert_allclose(big, expected, rtol=1e-9, atol=1e-12)
    assert big.std() > 0


def test_replay_dm_interval_uses_the_requested_resamples(monkeypatch):
    """``n_resamples`` reaches DM's refit bootstrap (it used to stay at 199 whatever was asked)."""
    import gymnasium

    import dpbandit.envs  # noqa: F401
    from dpbandit.offline import evaluate_offline, log_policy
    from dpbandit.offline import replay as replay_module

    seen = []
    original = replay_module.ridge_dm_deviations
    monkeypatch.setattr(replay_module, "ridge_dm_deviations",
                        lambda *a, **kw: seen.append(a[3]) or original(*a, **kw))
    env = gymnasium.make("dpbandit/SparseLogistic-v0", horizon=2000, n_arms=2, dim=3, sparsity=2, instance_seed=0)
    data = log_policy(env, 400, seed=1)
    result = evaluate_offline(data, lambda x: np.full((len(x), 2), 0.5), seed=0, estimators=("dm",), n_resamples=301)
    assert seen == [301]
    assert result.estimates["dm"].low < result.estimates["dm"].value < result.estimates["dm"].high


def test_dm_refit_bootstrap_refuses_a_bad_budget_naming_it():
    from dpbandit.offline import LoggedData
    from dpbandit.offline.reward_model import ridge_dm_deviations

    data = LoggedData(np.zeros((4, 2)), np.array([0, 1, 0, 1]), np.ones(4), 2)
    pi = np.full((4, 2), 0.5)
    for kwargs, name in (({"n_resamples": 0}, "n_resamples"), ({"memory": 0}, "memory"),
                         ({"memory": 1.5}, "memory")):
        with pytest.raises((ValueError, TypeError), match=name):
            ridge_dm_deviations(data, pi, np.random.default_rng(0), **kwargs)
