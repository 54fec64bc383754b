"""The floored ridge matrix of an episodic ridge release (dpbandit/agents/floored_ridge.py): known answers against the
eigendecomposition the release used before (np.linalg.eigh, eigenvalues floored at ridge), on random positive
definite, indefinite and zero statistics: to rounding where Cholesky (of V, or of V lifted to the floor) replaces
it, bit for bit in the full-eigendecomposition fallback and for zero statistics."""

from __future__ import annotations

import numpy as np
import pytest

from dpbandit.agents.floored_ridge import FlooredRidge
from dpbandit.agents.release_rules import thompson_scale

RIDGE = 1.0


def eigen_release(shape, lam, ridge, b, R=None, tau2=None):
    """The earlier computation of ``_release_of`` (stacked eigh, floor, ``U diag(1/e) U^T``, einsum), verbatim."""
    d = shape.shape[-1]
    evals, evecs = np.linalg.eigh(shape + lam[:, None, None] * np.eye(d))
    evals = np.maximum(evals, ridge)
    v_inv = (evecs / evals[:, None, :]) @ evecs.transpose(0, 2, 1)
    theta = np.einsum("mij,mj->mi", v_inv, b)
    scale = None if R is None else thompson_scale(evals, R, tau2)
    return theta, v_inv, evecs, scale


def noisy_gram(rng, M, d, n, sigma):
    """M Gram sums of n rows plus symmetric noise of sd sigma (off the diagonal), as a release holds them."""
    X = rng.standard_normal((M, n, d))
    Z = rng.standard_normal((M, d, d)) * sigma
    return np.einsum("mni,mnj->mij", X, X) + (Z + Z.transpose(0, 2, 1)) / np.sqrt(2.0)


def covariance(basis, scale):
    return np.einsum("mij,mj,mkj->mik", basis, scale**2, basis)


@pytest.mark.parametrize("d, M", [(5, 1), (40, 3), (200, 2)])
def test_above_the_floor_cholesky_equals_the_floored_eigendecomposition(d, M):
    """Random noisy Grams with the noise regulariser 2 sigma sqrt(d) + ridge: V - ridge I is positive definite, the
    floor inactive; theta, V^{-1} and the Thompson covariance equal the eigendecomposition's to rounding."""
    rng = np.random.default_rng(d)
    sigma = 3.0
    shape = noisy_gram(rng, M, d, 2 * d, sigma)
    lam = np.full(M, RIDGE + 2.0 * sigma * np.sqrt(d) * 1.2)
    b = rng.standard_normal((M, d)) * 10
    tau2 = rng.uniform(0.5, 20.0, M)
    V = FlooredRidge(shape, lam, RIDGE)
    assert V.kinds == ["cholesky"] * M
    theta0, v_inv0, evecs, scale0 = eigen_release(shape, lam, RIDGE, b, R=0.7, tau2=tau2)
    v_inv = V.inverse()
    assert np.allclose(v_inv, v_inv0, rtol=1e-10, atol=1e-12 * np.abs(v_inv0).max())
    assert np.array_equal(v_inv, v_inv.transpose(0, 2, 1))
    assert np.allclose(V.solve(b), theta0, rtol=1e-10, atol=1e-12 * np.abs(theta0).max())
    assert np.array_equal(V.solve(b, v_inv), V.solve(b))  # the factor's solve, whatever inverse is passed
    basis, scale = V.draw_factor(0.7, tau2)
    assert np.all(scale == 1.0)
    cov0 = covariance(evecs, scale0)
    assert np.allclose(covariance(basis, scale), cov0, rtol=1e-9, atol=1e-12 * np.abs(cov0).max())


@pytest.mark.parametrize("d, M", [(6, 1), (60, 2)])
def test_below_the_floor_v_is_lifted_to_it_as_the_floored_eigendecomposition(d, M):
    """lam = ridge on a noisy Gram (indefinite): the eigenvalues below ridge are lifted to it, the others kept;
    theta, V^{-1} and the Thompson covariance equal the floored eigendecomposition's to rounding."""
    rng = np.random.default_rng(100 + d)
    shape = noisy_gram(rng, M, d, d // 2, 5.0)
    lam = np.full(M, RIDGE)
    assert np.linalg.eigvalsh(shape + RIDGE * np.eye(d)).min() < -1.0
    b = rng.standard_normal((M, d))
    tau2 = rng.uniform(0.5, 2.0, M)
    V = FlooredRidge(shape, lam, RIDGE)
    assert V.kinds == ["lifted"] * M
    theta0, v_inv0, evecs, scale0 = eigen_release(shape, lam, RIDGE, b, R=0.5, tau2=tau2)
    v_inv = V.inverse()
    assert np.allclose(v_inv, v_inv0, rtol=1e-9, atol=1e-12 * np.abs(v_inv0).max())
    assert np.allclose(V.solve(b), theta0, rtol=1e-9, atol=1e-12 * np.abs(theta0).max())
    assert np.linalg.eigvalsh(np.linalg.inv(v_inv)).min() == pytest.approx(RIDGE, rel=1e-9)  # the floor
    basis, scale = V.draw_factor(0.5, tau2)
    cov0 = covariance(evecs, scale0)
    assert np.allclose(covariance(basis, scale), cov0, rtol=1e-8, atol=1e-12 * np.abs(cov0).max())


def test_when_the_lifted_v_cannot_be_factorised_the_full_eigendecomposition_is_kept_bit_for_bit(monkeypatch):
    """The fallback (ridge below V's rounding), forced by a lift that leaves V indefinite: the earlier arithmetic."""
    monkeypatch.setattr(FlooredRidge, "_lift", lambda self, V: V)
    rng = np.random.default_rng(9)
    d, M = 40, 2
    shape = noisy_gram(rng, M, d, 10, 5.0)
    lam = np.full(M, RIDGE)
    b, tau2 = rng.standard_normal((M, d)), rng.uniform(0.5, 2.0, M)
    V = FlooredRidge(shape, lam, RIDGE)
    assert V.kinds == ["eigen"] * M
    theta0, v_inv0, evecs, scale0 = eigen_release(shape, lam, RIDGE, b, R=0.5, tau2=tau2)
    v_inv = V.inverse()
    assert np.array_equal(v_inv, v_inv0)
    assert np.array_equal(V.solve(b, v_inv), theta0) and np.array_equal(V.solve(b), theta0)
    basis, scale = V.draw_factor(0.5, tau2)
    assert np.array_equal(basis, evecs) and np.array_equal(scale, scale0)


def test_models_take_their_own_path_and_zero_statistics_need_no_factorisation():
    """One model above the floor, one below, one with nothing released (V = lam I, exactly b / lam as before)."""
    rng = np.random.default_rng(7)
    d = 30
    shape = np.stack([noisy_gram(rng, 1, d, 3 * d, 1.0)[0] + 20.0 * np.eye(d), noisy_gram(rng, 1, d, 5, 4.0)[0],
                      np.zeros((d, d))])
    lam = np.array([RIDGE, RIDGE, 2.5])
    b = rng.standard_normal((3, d))
    V = FlooredRidge(shape, lam, RIDGE)
    assert V.kinds == ["cholesky", "lifted", "scalar"]
    theta0, v_inv0, evecs, scale0 = eigen_release(shape, lam, RIDGE, b, R=1.0, tau2=np.ones(3))
    theta, v_inv = V.solve(b), V.inverse()
    assert np.allclose(theta[:2], theta0[:2], rtol=1e-9, atol=1e-12)
    assert np.allclose(v_inv[:2], v_inv0[:2], rtol=1e-9, atol=1e-12)
    assert np.array_equal(theta[2], b[2] * (1.0 / 2.5)) and np.array_equal(v_inv[2], np.eye(d) / 2.5)
    basis, scale = V.draw_factor(1.0, np.ones(3))
    assert np.array_equal(basis[2], np.eye(d)) and np.array_equal(scale[2], scale0[2])
    assert np.allclose(covariance(basis, scale), covariance(evecs, scale0), rtol=1e-8, atol=1e-12)


def test_the_floor_test_is_exactly_positive_definiteness_of_v_minus_ridge():
    """V = Q diag(e) Q^T with its smallest eigenvalue just above / just below ridge: Cholesky above, the floor (to
    ridge) below; psd=True (a Gram sum, noise off) skips the test."""
    rng = np.random.default_rng(3)
    d = 50
    Q = np.linalg.qr(rng.standard_normal((d, d)))[0]
    for smallest, kind in ((RIDGE * (1 + 1e-6), "cholesky"), (RIDGE * (1 - 1e-6), "lifted")):
        e = np.concatenate([[smallest], rng.uniform(2.0, 9.0, d - 1)])
        shape = (Q * e) @ Q.T - 0.5 * np.eye(d)
        shape = (shape + shape.T) / 2
        assert FlooredRidge(shape[None], np.array([0.5]), RIDGE).kinds == [kind]
    X = rng.standard_normal((10, d))  # rank 10 < d: V - ridge I = X^T X is singular, the floor still inactive
    assert FlooredRidge((X.T @ X)[None], np.array([RIDGE]), RIDGE, psd=True).kinds == ["cholesky"]
    assert FlooredRidge((X.T @ X)[None], np.array([RIDGE]), RIDGE).kinds == ["lifted"]


def test_a_draw_factor_without_spread_or_noise_is_zero():
    """R = tau = 0: the draw is theta_hat itself (the Cholesky of R^2 V + tau^2 I = 0 fails; the scale is 0)."""
    rng = np.random.default_rng(4)
    d = 8
    shape = noisy_gram(rng, 1, d, 3 * d, 0.1) + 10.0 * np.eye(d)
    basis, scale = FlooredRidge(shape, np.array([RIDGE]), RIDGE).draw_factor(0.0, np.zeros(1))
    assert np.all(scale == 0.0) and covariance(basis, scale).max() == 0.0
    with pytest.raises(ValueError, match="draws=True"):
        FlooredRidge(shape, np.array([RIDGE]), RIDGE, draws=False).draw_factor(1.0, np.ones(1))
