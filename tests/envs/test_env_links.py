"""Inverse links and the clipped-Gaussian reward mean (dpbandit.envs.links)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import integrate, stats

from dpbandit.envs.links import LINKS, clipped_gaussian_mean, get_link


def test_identity_returns_the_linear_predictor():
    z = np.array([-3.5, 0.0, 2.25])
    np.testing.assert_array_equal(get_link("identity")(z), z)
    assert LINKS["identity"].low == -np.inf and LINKS["identity"].high == np.inf
    assert not LINKS["identity"].bernoulli


def test_logistic_values_and_stability_at_extreme_arguments():
    z = np.array([-2.0, 0.0, 0.5, 3.0])
    np.testing.assert_allclose(get_link("logistic")(z), 1.0 / (1.0 + np.exp(-z)), rtol=1e-15)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning
        extreme = get_link("logistic")(np.array([-1000.0, 1000.0, -np.inf, np.inf]))
    np.testing.assert_array_equal(extreme, [0.0, 1.0, 0.0, 1.0])
    # far tail keeps relative precision (a naive 1 - 1/(1+e^z) would round to 0)
    assert get_link("logistic")(np.array([-40.0]))[0] == pytest.approx(np.exp(-40.0), rel=1e-12)
    assert (LINKS["logistic"].low, LINKS["logistic"].high, LINKS["logistic"].bernoulli) == (0.0, 1.0, True)


def test_probit_is_the_standard_normal_cdf():
    np.testing.assert_allclose(get_link("probit")(np.array([1.959963984540054, 0.0])), [0.975, 0.5], rtol=1e-14)
    z = np.linspace(-6, 6, 25)
    np.testing.assert_allclose(get_link("probit")(z), stats.norm.cdf(z), rtol=1e-12)
    assert (LINKS["probit"].low, LINKS["probit"].high, LINKS["probit"].bernoulli) == (0.0, 1.0, True)


@pytest.mark.parametrize("name", sorted(LINKS))
def test_links_are_non_decreasing_and_within_their_range(name):
    link = get_link(name)
    z = np.linspace(-30, 30, 2001)
    mu = link(z)
    assert np.all(np.diff(mu) >= 0)
    assert np.all((mu >= link.low) & (mu <= link.high))


def test_unknown_link_names_the_parameter_and_choices():
    with pytest.raises(ValueError, match=r"link must be one of \('identity', 'logistic', 'probit'\), got 'cloglog'"):
        get_link("cloglog")


@pytest.mark.parametrize("mean,std,clip", [(0.0, 1.0, 1.0), (0.7, 0.3, 1.0), (-2.5, 1.5, 2.0), (4.0, 0.5, 1.0)])
def test_clipped_gaussian_mean_matches_quadrature(mean, std, clip):
    density = stats.norm(mean, std).pdf
    exact, _ = integrate.quad(lambda y: np.clip(y, -clip, clip) * density(y), mean - 12 * std, mean + 12 * std,
                              points=[-clip, clip], limit=200)
    assert clipped_gaussian_mean(np.array(mean), std, clip) == pytest.approx(exact, abs=1e-10)


def test_clipped_gaussian_mean_limits():
    m = np.linspace(-3, 3, 61)
    np.testing.assert_array_equal(clipped_gaussian_mean(m, 0.0, 1.0), np.clip(m, -1, 1))
    values = clipped_gaussian_mean(m, 0.4, 1.0)
    assert np.all(np.diff(values) > 0)  # monotone in the mean
    assert np.all(np.abs(values) <= np.minimum(np.abs(m), 1.0) + 1e-15)  # shrinks towards 0, stays in [-c, c]
    np.testing.assert_allclose(clipped_gaussian_mean(m, 1e-3, 100.0), m, atol=1e-12)  # far bounds: no effect
