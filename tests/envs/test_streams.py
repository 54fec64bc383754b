"""Regression streams of spec/han-frank-wolfe.md §8.1: normalisations, determinism, risk and SubOpt."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbandit.envs.streams import RegressionStream, StreamData
from dpbandit.geometry import dual_exponent, lp_norm


@pytest.mark.parametrize("p", [1.0, 1.5, 2.0, 3.0, math.inf])
@pytest.mark.parametrize("theta", ["paper", "code"])
def test_normalisations(p, theta):
    data = RegressionStream(dim=7, horizon=200, p=p, theta=theta, test_size=50).draw(3)
    q = dual_exponent(p)
    np.testing.assert_allclose(lp_norm(data.x, q), 1.0, rtol=1e-12)
    np.testing.assert_allclose(lp_norm(data.x_test, q), 1.0, rtol=1e-12)
    assert lp_norm(data.theta_star, p) == pytest.approx(1.0, rel=1e-12)
    assert data.radius == 2.0 and data.q == q and data.p == p
    assert data.x.shape == (200, 7) and data.y.shape == (200,) and data.x_test.shape == (50, 7)
    if theta == "code":
        assert np.count_nonzero(data.theta_star) == 5
        assert np.all(data.theta_star[:5] == data.theta_star[0])


def test_linear_noise_law_and_risk_floor():
    data = RegressionStream(dim=5, horizon=20000, noise_std=0.05, test_size=20000).draw(0)
    resid = data.y - data.x @ data.theta_star
    # sample variance of 20000 N(0, 0.05^2): relative sd sqrt(2/n) = 0.01; 5 sd ~ p 1e-6
    assert abs(resid.var() / 0.05**2 - 1.0) < 0.05
    assert abs(resid.mean()) < 5 * 0.05 / math.sqrt(20000)
    # the risk of theta* is the noise floor 0.05^2 (spec §8.1)
    assert data.risk_star == pytest.approx(0.0025, rel=0.05)


def test_risk_and_subopt_definitions():
    data = RegressionStream(dim=4, horizon=10, test_size=30).draw(1)
    theta = np.array([0.3, -0.2, 0.1, 0.0])
    expected = np.mean((data.x_test @ theta - data.y_test) ** 2)
    assert data.risk(theta) == pytest.approx(expected, rel=1e-12)
    assert data.risk_zero == pytest.approx(np.mean(data.y_test**2), rel=1e-12)
    assert data.subopt(data.theta_star) == pytest.approx(0.0, abs=1e-12)
    assert data.subopt(np.zeros(4)) == pytest.approx(1.0, rel=1e-12)
    assert data.subopt(theta) == pytest.approx(
        (expected - data.risk_star) / (data.risk_zero - data.risk_star), rel=1e-12
    )
    stack = np.stack([theta, data.theta_star, np.zeros(4)])
    np.testing.assert_allclose(data.risk(stack), [expected, data.risk_star, data.risk_zero], rtol=1e-12)
    np.testing.assert_allclose(data.subopt(stack), [data.subopt(theta), 0.0, 1.0], atol=1e-12)
    with pytest.raises(ValueError, match="theta must have shape"):
        data.risk(np.zeros(3))


def test_logistic_stream():
    data = RegressionStream(dim=3, horizon=40000, model="logistic", theta="code", theta_norm=3.0,
                            test_size=500).draw(2)
    assert set(np.unique(data.y)) <= {0.0, 1.0}
    assert data.loss == "logistic" and data.radius == 6.0
    # labels follow sigmoid(x^T theta*): the mean label matches the mean probability (sd <= 0.5/sqrt(n))
    prob = 1.0 / (1.0 + np.exp(-(data.x @ data.theta_star)))
    assert abs(data.y.mean() - prob.mean()) < 5 * 0.5 / math.sqrt(40000)
    z = data.x_test @ data.theta_star
    assert data.risk_star == pytest.approx(np.mean(np.logaddexp(0, z) - data.y_test * z), rel=1e-12)
    assert data.risk_zero == pytest.approx(math.log(2.0), rel=1e-12)


def test_streams_from_named_seed_streams_and_prefix_stable():
    a = RegressionStream(dim=5, horizon=300).draw(7)
    b = RegressionStream(dim=5, horizon=100).draw(7)
    c = RegressionStream(dim=5, horizon=300).draw(8)
    np.testing.assert_array_equal(a.x[:100], b.x)
    np.testing.assert_array_equal(a.y[:100], b.y)
    np.testing.assert_array_equal(a.x_test, b.x_test)
    np.testing.assert_array_equal(a.theta_star, b.theta_star)
    assert not np.array_equal(a.x, c.x)
    again = RegressionStream(dim=5, horizon=300).draw(7)
    np.testing.assert_array_equal(a.y, again.y)
    # the noise level changes responses only, never features or theta* (separate named streams)
    quiet = RegressionStream(dim=5, horizon=300, noise_std=0.0).draw(7)
    np.testing.assert_array_equal(quiet.x, a.x)
    np.testing.assert_allclose(quiet.y, a.x @ a.theta_star, rtol=1e-12)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"dim": 0}, "dim must be an integer >= 1"),
        ({"horizon": 0}, "horizon must be an integer >= 1"),
        ({"p": 0.5}, "p must be a number >= 1"),
        ({"p": float("nan")}, "p must be"),
        ({"model": "poisson"}, "model must be one of"),
        ({"theta": "random"}, "theta must be one of"),
        ({"noise_std": -1.0}, "noise_std must be"),
        ({"test_size": 0}, "test_size must be an integer >= 1"),
        ({"theta_norm": 0.0}, "theta_norm must be"),
    ],
)
def test_bad_input(kwargs, match):
    base = {"dim": 3, "horizon": 10}
    with pytest.raises(ValueError, match=match):
        RegressionStream(**{**base, **kwargs})


def test_bad_types():
    with pytest.raises(TypeError, match="dim must be an integer"):
        RegressionStream(dim=3.0, horizon=10)
    with pytest.raises(TypeError, match="model must be one of"):
        RegressionStream(dim=3, horizon=10, model=1)


def test_stream_data_properties():
    data = RegressionStream(dim=6, horizon=12, test_size=4).draw(0)
    assert isinstance(data, StreamData)
    assert data.dim == 6 and data.horizon == 12 and data.loss == "squared" and data.feature_bound == 1.0
