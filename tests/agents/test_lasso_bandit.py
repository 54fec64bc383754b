"""LassoBandit (Bastani & Bayati 2020): forced-sampling schedule, the Lasso fits, decisions and validation;
non-converged fits are counted and reported by one warning per agent (not one per fit)."""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pytest

from sklearn.exceptions import ConvergenceWarning

from dpbandit.agents.baselines import UniformRandom
from dpbandit.agents.lasso_bandit import LassoBandit, default_hyperparameters, forced_arm, forced_sampling_times
from dpbandit.envs.constants import BanditConstants


def constants(K: int = 3, d: int = 20, noise_std: float = 0.05, **changes) -> BanditConstants:
    base = BanditConstants(
        n_arms=K, dim=d, horizon=2000, structure="disjoint", link="identity", context_norm="l2",
        context_bound=1.0, theta_norm="l2", theta_bound=1.0, sparsity=min(5, d), noise_std=noise_std,
        reward_low=-np.inf, reward_high=np.inf, mean_low=-1.0, mean_high=1.0,
    )
    return dataclasses.replace(base, **changes)


def sparse_thetas(rng: np.random.Generator, K: int, d: int, s: int) -> np.ndarray:
    theta = np.zeros((K, d))
    for a in range(K):
        support = rng.choice(d, s, replace=False)
        theta[a, support] = rng.normal(size=s)
        theta[a] /= np.linalg.norm(theta[a])
    return theta


def unit_context(rng: np.random.Generator, d: int) -> np.ndarray:
    x = rng.normal(size=d)
    return x / np.linalg.norm(x)


# --------------------------------------------------------------------------- forced sampling
def test_forced_sampling_times_small_case_by_hand():
    # K = 3, q = 2: blocks of Kq = 6 rounds start at rounds 1, 7, 19, 43 ((2^n - 1) * 6 + 1).
    assert forced_sampling_times(0, 3, 2, 50).tolist() == [1, 2, 7, 8, 19, 20, 43, 44]
    assert forced_sampling_times(1, 3, 2, 50).tolist() == [3, 4, 9, 10, 21, 22, 45, 46]
    assert forced_sampling_times(2, 3, 2, 50).tolist() == [5, 6, 11, 12, 23, 24, 47, 48]
    assert forced_sampling_times(2, 3, 2, 47).tolist() == [5, 6, 11, 12, 23, 24, 47]
    # K = 2, q = 1: arm i (1-based) at rounds 2^n * 2 - 2 + i
    assert forced_sampling_times(0, 2, 1, 40).tolist() == [1, 3, 7, 15, 31]
    assert forced_sampling_times(1, 2, 1, 40).tolist() == [2, 4, 8, 16, 32]


@pytest.mark.parametrize("K, q", [(1, 1), (2, 1), (3, 2), (4, 3), (5, 1)])
def test_forced_arm_matches_the_set_formula(K, q):
    horizon = 600
    expected = {}
    for i in range(1, K + 1):  # the formula with 1-based arms, as in the paper
        for n in range(12):
            for j in range(q * (i - 1) + 1, q * i + 1):
                t = (2**n - 1) * K * q + j
                if t <= horizon:
                    expected[t] = i - 1
    got = {t: forced_arm(t, K, q) for t in range(1, horizon + 1)}
    assert {t: a for t, a in got.items() if a is not None} == expected
    for arm in range(K):
        assert forced_sampling_times(arm, K, q, horizon).tolist() == sorted(t for t, a in expected.items() if a == arm)


def test_agent_plays_the_forced_arms():
    K, q, d = 3, 2, 4
    agent = LassoBandit(constants(K=K, d=d), q=q)
    rng = np.random.default_rng(0)
    for t in range(1, 120):
        obs = np.tile(unit_context(rng, d), (K, 1))
        arm = agent.act(obs)
        if forced_arm(t, K, q) is not None:
            assert arm == forced_arm(t, K, q)
        agent.update(obs, arm, float(rng.normal()), {})
    forced_counts = [agent.forced[a].n for a in range(K)]
    assert forced_counts == [len(forced_sampling_times(a, K, q, 119)) for a in range(K)]
    assert sum(agent.samples[a].n for a in range(K)) == 119


# --------------------------------------------------------------------------- the Lasso fits
def test_fit_solves_the_papers_objective():
    """KKT conditions of (1/n)||y - X b||^2 + lambda ||b||_1 (so sklearn's alpha = lambda / 2 is right)."""
    rng = np.random.default_rng(1)
    d, n, lam = 30, 200, 0.02
    agent = LassoBandit(constants(K=2, d=d), lambda1=1.0, lambda2_0=1.0, h=1.0, refit_growth=0.0, tol=1e-12,
                        max_iter=100000)
    theta = sparse_thetas(rng, 1, d, 4)[0]
    obs_rows = []
    for _ in range(n):
        x = unit_context(rng, d)
        obs_rows.append(x)
        agent.update(np.tile(x, (2, 1)), 0, float(x @ theta + 0.05 * rng.normal()), {})
    data = agent.samples[0]
    beta = agent._fit(agent._lasso_all[0], data, lam)
    gradient = 2.0 / n * data.X.T @ (data.y - data.X @ beta)  # minus the gradient of the smooth part
    active = beta != 0
    assert active.any()
    np.testing.assert_allclose(gradient[active], lam * np.sign(beta[active]), rtol=1e-5, atol=1e-7)
    assert np.all(np.abs(gradient[~active]) <= lam * (1 + 1e-6))


def test_all_sample_estimator_recovers_a_sparse_theta():
    rng = np.random.default_rng(2)
    K, d, s, n = 2, 60, 5, 400
    theta = sparse_thetas(rng, K, d, s)
    agent = LassoBandit(constants(K=K, d=d, noise_std=0.05))
    for _ in range(n):
        x = unit_context(rng, d)
        arm = int(rng.integers(K))
        agent.update(np.tile(x, (K, 1)), arm, float(x @ theta[arm] + 0.05 * rng.normal()), {})
    for a in range(K):
        beta = agent.beta_all[a]
        # every clearly non-zero coefficient is among the s largest estimates (measured errors: 0.19, 0.17 in l2;
        # off-support mass below 0.5 % of ||theta||_1)
        assert set(np.flatnonzero(np.abs(theta[a]) >= 0.15)) <= set(np.argsort(-np.abs(beta))[:s])
        assert np.linalg.norm(beta - theta[a]) < 0.3
        assert np.abs(beta[theta[a] == 0]).sum() < 0.05 * np.abs(theta[a]).sum()


def test_refit_schedule():
    agent = LassoBandit(constants(K=1, d=3), refit_growth=0.5, refit_min=2)
    rng = np.random.default_rng(3)
    fits = []
    for n in range(1, 40):
        agent.update(np.ones((1, 3)) * rng.normal(size=3), 0, 1.0, {})
        if agent._n_fit[0] == n:
            fits.append(n)
    # refit when n - n_fit >= max(2, 0.5 n_fit): 2, 4, 6, 9, 14, 21, 32
    assert fits == [2, 4, 6, 9, 14, 21, 32]


def test_lambda2_schedule():
    agent = LassoBandit(constants(K=2, d=50), lambda2_0=0.3)
    for t in (1, 10, 1000):
        assert agent.lambda2(t) == pytest.approx(0.3 * math.sqrt((math.log(t) + math.log(50)) / t))
    one_dim = LassoBandit(constants(K=2, d=1), lambda2_0=0.3)
    assert one_dim.lambda2(1) == one_dim.lambda2(2) > 0


# --------------------------------------------------------------------------- decisions
def test_preselection_then_greedy():
    agent = LassoBandit(constants(K=3, d=2), h=1.0, lambda1=1.0, lambda2_0=1.0)
    agent.t = 10**6 + 5  # far from any forced block
    assert forced_arm(agent.t + 1, 3, 1) is None
    agent.beta_forced[:] = [[1.0, 0.0], [0.6, 0.0], [0.0, 0.0]]  # forced means 1.0, 0.6, 0.0 at x = e_1
    agent.beta_all[:] = [[0.1, 0.0], [0.5, 0.0], [2.0, 0.0]]  # arm 2 looks best but is not pre-selected
    obs = np.tile([1.0, 0.0], (3, 1))
    assert agent.act(obs) == 1  # K_hat = {0, 1} (h/2 = 0.5), greedy inside it
    agent.h = 3.0
    assert agent.act(obs) == 2  # K_hat = all arms


def test_beats_uniform_random_on_a_sparse_problem():
    rng = np.random.default_rng(4)
    K, d, s, T = 3, 100, 5, 1200
    theta = sparse_thetas(rng, K, d, s)
    consts = constants(K=K, d=d, noise_std=0.1)
    contexts = [unit_context(rng, d) for _ in range(T)]
    noise = 0.1 * rng.normal(size=T)
    regret = {}
    for agent in (LassoBandit(consts), UniformRandom(consts)):
        agent.reset(0)
        total = 0.0
        for x, e in zip(contexts, noise):
            obs = np.tile(x, (K, 1))
            means = theta @ x
            arm = agent.act(obs)
            total += means.max() - means[arm]
            agent.update(obs, arm, means[arm] + e, {})
        regret[agent.name] = total
    assert regret["lasso"] < 0.35 * regret["random"], regret


def test_same_seed_same_actions():
    rng = np.random.default_rng(5)
    K, d = 3, 10
    theta = sparse_thetas(rng, K, d, 3)
    obs_seq = [np.tile(unit_context(rng, d), (K, 1)) for _ in range(80)]
    noise = 0.05 * rng.normal(size=80)

    def run(seed):
        agent = LassoBandit(constants(K=K, d=d))
        agent.reset(seed)
        out = []
        for obs, e in zip(obs_seq, noise):
            arm = agent.act(obs)
            agent.update(obs, arm, obs[arm] @ theta[arm] + e, {})
            out.append(arm)
        return out, agent.beta_all.copy()

    (a1, b1), (a2, b2) = run(7), run(7)
    assert a1 == a2 and np.array_equal(b1, b2)


def test_reset_forgets():
    agent = LassoBandit(constants(K=2, d=3))
    for _ in range(5):
        agent.update(np.ones((2, 3)), agent.act(np.ones((2, 3))), 1.0, {})
    agent.reset(1)
    assert agent.t == 0 and not agent.beta_all.any() and not agent.beta_forced.any()
    assert all(s.n == 0 for s in agent.samples + agent.forced)


def run_recording_warnings(agent: LassoBandit, rounds: int, seed: int = 6):
    """``rounds`` act/update steps on a sparse problem; (actions, final all-sample estimates, warnings raised)."""
    rng = np.random.default_rng(seed)
    K, d = agent.n_arms, agent.dim
    theta = sparse_thetas(rng, K, d, 3)
    actions = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        agent.reset(seed)
        for _ in range(rounds):
            obs = np.tile(unit_context(rng, d), (K, 1))
            arm = agent.act(obs)
            agent.update(obs, arm, float(obs[arm] @ theta[arm] + 0.05 * rng.normal()), {})
            actions.append(arm)
    return actions, agent.beta_all.copy(), caught


def test_non_converged_fits_are_counted_and_warned_once_per_agent():
    """Under-regularised (penalties 1e-4) and max_iter = 20: many fits stop early. One ConvergenceWarning per agent
    (also across resets), pointing at the caller of update(); the per-run count in n_unconverged (fits that ran out
    of iterations above tolerance); the fits themselves are untouched (same actions and estimates)."""
    weak = dict(lambda1=1e-4, lambda2_0=1e-4, max_iter=20, refit_growth=0.0)
    agent = LassoBandit(constants(K=2, d=30), **weak)
    exhausted = []
    fit = agent._fit

    def counting_fit(model, data, lam):
        coef = fit(model, data, lam)
        exhausted.append(model.n_iter_ >= agent.max_iter)
        return coef

    agent._fit = counting_fit
    actions, beta, caught = run_recording_warnings(agent, 150)
    assert len(caught) == 1 and issubclass(caught[0].category, ConvergenceWarning), [str(w.message) for w in caught]
    assert "n_unconverged" in str(caught[0].message) and "max_iter=20" in str(caught[0].message)
    # a fit warns iff it ran all max_iter iterations and its gap is still above tol (it may converge in the last one)
    assert 0.9 * sum(exhausted) <= agent.n_unconverged <= sum(exhausted) and agent.n_unconverged > 20
    first = agent.n_unconverged
    again, beta_again, caught = run_recording_warnings(agent, 150)  # reset: the count restarts, no new warning
    assert again == actions and np.array_equal(beta_again, beta) and agent.n_unconverged == first and not caught
    plain = run_recording_warnings(LassoBandit(constants(K=2, d=30), **weak), 150)
    assert plain[0] == actions and np.array_equal(plain[1], beta) and len(plain[2]) == 1
    assert plain[2][0].filename == __file__  # the warning points at the caller of update()


def test_default_penalties_converge():
    agent = LassoBandit(constants(K=3, d=40))
    _, _, caught = run_recording_warnings(agent, 400)
    assert agent.n_unconverged == 0 and not caught


# --------------------------------------------------------------------------- defaults and validation
def test_default_hyperparameters_follow_the_constants():
    c = constants(K=2, d=100, noise_std=0.1)
    defaults = default_hyperparameters(c)
    s_x, s_y = 1.0 / 10.0, 1.0 / 10.0
    assert defaults == pytest.approx({"h": 5 * s_y, "lambda1": 2 * 0.1 * s_x, "lambda2_0": 2 * 0.1 * s_x})
    agent = LassoBandit(c, lambda1=0.7)
    assert (agent.h, agent.lambda1, agent.lambda2_0) == pytest.approx((0.5, 0.7, 0.02))
    # Bernoulli rewards: sigma = half the reward range; l_inf contexts and parameters
    bern = constants(K=2, d=16, noise_std=0.0, link="logistic", reward_low=0.0, reward_high=1.0,
                     context_norm="linf", theta_norm="linf", theta_bound=0.5, sparsity=4)
    s_x = 1.0 / math.sqrt(2 * math.log(32))  # typical coordinate of a vector scaled to ||x||_inf = 1
    s_y = s_x * 0.5 * math.sqrt(4)  # ||theta||_2 <= sqrt(s) ||theta||_inf
    # h in expected-reward units: the logistic link's slope is at most 1/4 (issue 12: margins from the reward range)
    assert default_hyperparameters(bern) == pytest.approx({"h": 5 * 0.25 * s_y, "lambda1": s_x, "lambda2_0": s_x})
    # noise-free identity link: the paper's 0.05 in problem units
    clean = constants(K=2, d=25, noise_std=0.0)
    assert default_hyperparameters(clean)["lambda1"] == pytest.approx(0.05 * 0.2 * 0.2)


def test_shared_structure_is_refused():
    with pytest.raises(ValueError, match="disjoint structure.*structure='shared'"):
        LassoBandit(constants(structure="shared"))


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"q": 0}, ValueError, "q must be an integer >= 1"),
        ({"q": 1.5}, TypeError, "q must be an integer"),
        ({"h": 0.0}, ValueError, "h must be a finite number > 0"),
        ({"lambda1": -1.0}, ValueError, "lambda1 must be a finite number > 0"),
        ({"lambda2_0": float("nan")}, ValueError, "lambda2_0"),
        ({"refit_growth": -0.1}, ValueError, "refit_growth must be a finite number >= 0"),
        ({"refit_min": 0}, ValueError, "refit_min must be an integer >= 1"),
        ({"max_iter": 0}, ValueError, "max_iter"),
        ({"tol": 0.0}, ValueError, "tol must be a finite number > 0"),
    ],
)
def test_bad_hyperparameters(kwargs, error, match):
    with pytest.raises(error, match=match):
        LassoBandit(constants(), **kwargs)
