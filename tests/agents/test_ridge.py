"""RidgeState: Sherman–Morrison updates against the direct ridge solution, in both structures."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest


from dpbandit.agents.ridge import RidgeState, sherman_morrison


def direct_ridge(X: np.ndarray, y: np.ndarray, lam: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(A^{-1}, theta, b) of ridge regression on (X, y) by explicit inversion."""
    A = lam * np.eye(X.shape[1]) + X.T @ X
    b = X.T @ y
    return np.linalg.inv(A), np.linalg.solve(A, b), b


@pytest.mark.parametrize("lam", [0.1, 1.0, 5.0])
def test_disjoint_matches_direct_solution(lam):
    rng = np.random.default_rng(1)
    K, d, n = 4, 7, 300
    state = RidgeState(K, d, "disjoint", lam)
    arms = rng.integers(K, size=n)
    X = rng.normal(size=(n, d))
    y = X @ rng.normal(size=d) + rng.normal(size=n)
    for x, r, a in zip(X, y, arms):
        state.update(x, r, int(a))
    assert state.A_inv.shape == (K, d, d) and state.theta.shape == (K, d) and state.b.shape == (K, d)
    for a in range(K):
        A_inv, theta, b = direct_ridge(X[arms == a], y[arms == a], lam)
        np.testing.assert_allclose(state.A_inv[a], A_inv, rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(state.theta[a], theta, rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(state.b[a], b, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(state.counts, np.bincount(arms, minlength=K))


@pytest.mark.parametrize("lam", [0.1, 1.0])
def test_shared_matches_direct_solution(lam):
    rng = np.random.default_rng(2)
    K, d, n = 5, 6, 250
    state = RidgeState(K, d, "shared", lam)
    X = rng.normal(size=(n, d))
    y = rng.normal(size=n)
    for x, r in zip(X, y):
        state.update(x, r, int(rng.integers(K)))  # the arm does not matter in the shared structure
    A_inv, theta, b = direct_ridge(X, y, lam)
    assert state.A_inv.shape == (d, d) and state.theta.shape == (d,)
    np.testing.assert_allclose(state.A_inv, A_inv, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(state.theta, theta, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(state.b, b, rtol=1e-10)
    np.testing.assert_allclose(state.gram(), np.linalg.inv(A_inv), rtol=1e-8)
    assert state.counts.tolist() == [n]


@pytest.mark.parametrize("structure", ["disjoint", "shared"])
def test_predict_and_widths_match_formula(structure):
    rng = np.random.default_rng(3)
    K, d = 3, 5
    state = RidgeState(K, d, structure, lam=0.5)
    for _ in range(40):
        state.update(rng.normal(size=d), rng.normal(), int(rng.integers(K)))
    obs = rng.normal(size=(K, d))  # distinct rows: row a is arm a's feature
    for a in range(K):
        A_inv = state.A_inv[a] if structure == "disjoint" else state.A_inv
        theta = state.theta[a] if structure == "disjoint" else state.theta
        assert state.predict(obs)[a] == pytest.approx(obs[a] @ theta, rel=1e-12)
        assert state.widths(obs)[a] == pytest.approx(np.sqrt(obs[a] @ A_inv @ obs[a]), rel=1e-12)
    R = state.products(obs)
    np.testing.assert_allclose(R[:, d], state.predict(obs), rtol=1e-12)


def test_reset_returns_to_prior():
    rng = np.random.default_rng(4)
    state = RidgeState(2, 3, "disjoint", lam=2.0)
    for _ in range(10):
        state.update(rng.normal(size=3), 1.0, 1)
    state.reset()
    np.testing.assert_array_equal(state.A_inv, np.broadcast_to(np.eye(3) / 2.0, (2, 3, 3)))
    assert not state.theta.any() and not state.b.any() and not state.counts.any()
    # Before any data every arm has width ||x|| / sqrt(lam) and mean 0.
    x = np.array([[3.0, 0.0, 4.0]] * 2)
    np.testing.assert_allclose(state.widths(x), [5.0 / np.sqrt(2.0)] * 2)
    np.testing.assert_array_equal(state.predict(x), [0.0, 0.0])


def test_float32_and_noncontiguous_features():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(50, 8))
    y = rng.normal(size=50)
    a = RidgeState(1, 4, "shared", 1.0)
    b = RidgeState(1, 4, "shared", 1.0)
    for x, r in zip(X, y):
        a.update(x[::2].copy(), r)
        b.update(x[::2].astype(np.float32), np.float32(r))  # strided and single precision
    np.testing.assert_allclose(a.theta, b.theta, rtol=1e-5)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"lam": 0.0}, "lam must be a finite number > 0"),
        ({"lam": -1.0}, "lam"),
        ({"lam": float("nan")}, "lam"),
        ({"structure": "hybrid"}, "structure must be one of"),
        ({"n_arms": 0}, "n_arms must be an integer >= 1"),
        ({"dim": 0}, "dim"),
    ],
)
def test_bad_arguments(kwargs, match):
    args = {"n_arms": 2, "dim": 3, "structure": "disjoint", "lam": 1.0} | kwargs
    with pytest.raises(ValueError, match=match):
        RidgeState(**args)


def test_bad_arm_in_update():
    state = RidgeState(3, 2, "disjoint")
    with pytest.raises(ValueError, match=r"arm must be an integer in \[0, 2\], got -1"):
        state.update(np.ones(2), 1.0, -1)
    with pytest.raises(ValueError, match="arm"):
        state.update(np.ones(2), 1.0, 3)
    assert not state.counts.any()


def test_copies_and_pickles_stay_consistent():
    rng = np.random.default_rng(6)
    X, y = rng.normal(size=(2, 3)), np.array([1.0, 0.5])
    state = RidgeState(2, 3, "shared", 1.0)
    state.update(X[0], y[0])
    for clone in (copy.deepcopy(state), pickle.loads(pickle.dumps(state))):
        clone.update(X[1], y[1])
        A_inv, theta, b = direct_ridge(X, y, 1.0)  # the clone's views follow its own buffer ...
        np.testing.assert_allclose(clone.A_inv, A_inv, rtol=1e-10)
        np.testing.assert_allclose(clone.theta, theta, rtol=1e-10)
        np.testing.assert_allclose(clone.b, b, rtol=1e-12)
    A_inv, theta, _ = direct_ridge(X[:1], y[:1], 1.0)  # ... and the original is untouched
    np.testing.assert_allclose(state.A_inv, A_inv, rtol=1e-10)
    np.testing.assert_allclose(state.theta, theta, rtol=1e-10)


def test_sherman_morrison_kernel_is_the_formula():
    """W = [A^{-1}; theta^T] (d+1, d) and b after one sample: the Sherman-Morrison step and the RLS step on theta,
    against numpy's own evaluation of the formula; a feature vector of the wrong length is refused."""
    rng = np.random.default_rng(7)
    d = 6
    G = rng.normal(size=(d, d))
    A_inv = np.linalg.inv(G @ G.T + np.eye(d))
    theta, b, x, y = rng.normal(size=d), rng.normal(size=d), rng.normal(size=d), 0.7
    W = np.vstack([A_inv, theta])
    u = A_inv @ x
    expected_A = A_inv - np.outer(u, u) / (1.0 + x @ u)
    expected_theta = theta + u * (y - x @ theta) / (1.0 + x @ u)
    sherman_morrison(W, b_new := b.copy(), x, y)
    np.testing.assert_allclose(W[:d], expected_A, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(W[d], expected_theta, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(b_new, b + y * x, rtol=1e-15)
    with pytest.raises(ValueError, match=r"x must have shape \(d,\) = \(3,\), got \(4,\)"):
        RidgeState(2, 3, "disjoint").update(np.ones(4), 1.0, 0)


def test_kernels_refuse_shapes_they_would_read_out_of_bounds():
    """numba does not check indices: each kernel a caller can reach checks its shapes first."""
    from dpbandit.agents.linucb import ucb_scores, ucb_scores_stack
    from dpbandit.agents.ridge import rows_times, sherman_morrison_stack

    W, X = np.zeros((3, 5, 4)), np.zeros((3, 4))
    with pytest.raises(ValueError, match="ucb_scores"):
        ucb_scores(W, np.zeros((3, 5)), 1.0, np.empty(3))  # d = 5 against a model of d = 4
    with pytest.raises(ValueError, match="ucb_scores"):
        ucb_scores(W, np.zeros((4, 4)), 1.0, np.empty(4))  # 3 models for 4 arms
    with pytest.raises(ValueError, match="ucb_scores"):
        ucb_scores(W, X, 1.0, np.empty(2))
    idx = np.empty(2, dtype=np.intp)
    with pytest.raises(ValueError, match="ucb_scores_stack"):
        ucb_scores_stack(W[None].repeat(3, 0), X[None].repeat(2, 0), 1.0, np.empty((3, 3)), idx, idx)
    with pytest.raises(ValueError, match="rows_times"):
        rows_times(np.zeros((5, 4)), np.zeros(5), np.empty(5))
    with pytest.raises(ValueError, match="sherman_morrison"):
        sherman_morrison(np.zeros((5, 4)), np.zeros(4), np.zeros(3), 1.0)
    stack = (np.zeros((2, 3, 5, 4)), np.zeros((2, 3, 4)), np.zeros((2, 3), dtype=np.int64))
    with pytest.raises(ValueError, match="sherman_morrison_stack"):
        sherman_morrison_stack(*stack, np.zeros((2, 3, 4)), np.zeros(3, dtype=np.intp), np.zeros(2))
    with pytest.raises(ValueError, match="sherman_morrison"):  # the features' d against the models' d
        sherman_morrison_stack(*stack, np.zeros((2, 3, 5)), np.zeros(2, dtype=np.intp), np.zeros(2))
    assert not sherman_morrison_stack(*stack, np.zeros((2, 3, 4)), np.array([0, 3]), np.zeros(2))  # arm 3: none
    assert not stack[2].any()
