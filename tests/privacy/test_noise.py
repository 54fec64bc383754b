"""Distribution tests of the noise samplers (spec/dp-testing-and-accounting.md §4), all at p ~ 1e-6 with fixed seeds.

Each law is checked against its exact CDF; the generalized-Gaussian checks are shown to reject samplers with the
published defects D1 (radius scale 2 sigma) and D2 (+1/r direction shift) of spec/han-frank-wolfe.md §9.2, built
here in the tests (never in the library).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpbandit.privacy.noise import (
    GammaNormNoise,
    GaussianNoise,
    GeneralizedGaussianNoise,
    LaplaceNoise,
    Noise,
    SymmetricGaussianNoise,
    local_laplace,
    report_noisy_max,
)
from dpbandit.seeding import stream

P_MIN = 1e-6  # a correct sampler fails a check with probability ~1e-6
Z_MAX = 5.0  # two-sided normal quantile for p ~ 6e-7


def rng(seed: int = 0) -> np.random.Generator:
    return stream(seed, "privacy")


def ks_p(sample: np.ndarray, cdf) -> float:
    return stats.kstest(np.ravel(sample), cdf).pvalue


def cone_marginal_cdf(d: int, r: float):
    """CDF of theta_1 for theta = x/||x||_r following the cone measure of the l_r ball of R^d.

    (|theta_i|^r)_i = (gamma_i / sum gamma)_i with gamma_i ~ Gamma(1/r, 1) iid is Dirichlet(1/r, ..., 1/r), so
    |theta_1|^r ~ Beta(1/r, (d-1)/r) with an independent uniform sign: the observable form of the test of
    |x_i|^r against Gamma(1/r, 1). For r = 2 this is the uniform-sphere marginal."""

    def cdf(x):
        return 0.5 + 0.5 * np.sign(x) * stats.beta.cdf(np.abs(x) ** r, 1.0 / r, (d - 1.0) / r)

    return cdf


# --------------------------------------------------------------------------------------------------------------
# Contract: shapes, dtype, determinism, describe()
# --------------------------------------------------------------------------------------------------------------

ALL_NOISES = [
    GaussianNoise(2.0),
    LaplaceNoise(0.5),
    GammaNormNoise(1.5),
    GeneralizedGaussianNoise(2.0, 3.0),
    SymmetricGaussianNoise(1.0),
]


@pytest.mark.parametrize("noise", ALL_NOISES, ids=lambda n: n.name)
def test_sample_shape_dtype_and_determinism(noise: Noise):
    shape = (4, 3, 3)
    x = noise.sample(rng(7), shape)
    assert x.shape == shape and x.dtype == np.float64
    np.testing.assert_array_equal(x, noise.sample(rng(7), shape))
    assert not np.array_equal(x, noise.sample(rng(8), shape))


@pytest.mark.parametrize("noise", ALL_NOISES, ids=lambda n: n.name)
def test_describe_is_json_with_name_and_scale(noise: Noise):
    record = noise.describe()
    assert record["name"] == noise.name
    assert json.loads(json.dumps(record)) == record
    assert len(record) >= 2


def test_names():
    assert [n.name for n in ALL_NOISES] == [
        "gaussian",
        "laplace",
        "gamma-norm",
        "generalized-gaussian(l3)",
        "symmetric-gaussian",
    ]


@pytest.mark.parametrize(
    "factory, bad, exc",
    [
        (GaussianNoise, 0.0, ValueError),
        (GaussianNoise, -1.0, ValueError),
        (GaussianNoise, float("nan"), ValueError),
        (GaussianNoise, float("inf"), ValueError),
        (GaussianNoise, "1", TypeError),
        (GaussianNoise, True, TypeError),
        (LaplaceNoise, 0.0, ValueError),
        (LaplaceNoise, float("nan"), ValueError),
        (GammaNormNoise, -2.0, ValueError),
        (GammaNormNoise, float("inf"), ValueError),
        (SymmetricGaussianNoise, 0.0, ValueError),
    ],
)
def test_constructor_validation(factory, bad, exc):
    name = "sigma" if factory in (GaussianNoise, SymmetricGaussianNoise) else "scale"
    with pytest.raises(exc, match=name):
        factory(bad)


@pytest.mark.parametrize("r", [0.5, 0.0, float("nan"), float("inf")])
def test_generalized_gaussian_rejects_bad_r(r):
    with pytest.raises(ValueError, match="r must be"):
        GeneralizedGaussianNoise(1.0, r)


def test_sample_validation():
    with pytest.raises(TypeError, match="rng"):
        GaussianNoise(1.0).sample(np.random.RandomState(0), (3,))
    with pytest.raises(TypeError, match="shape"):
        GaussianNoise(1.0).sample(rng(), (3.0,))
    with pytest.raises(ValueError, match="shape"):
        GaussianNoise(1.0).sample(rng(), (-1,))
    with pytest.raises(ValueError, match="at least 1 axes"):
        GammaNormNoise(1.0).sample(rng(), ())
    with pytest.raises(ValueError, match="square"):
        SymmetricGaussianNoise(1.0).sample(rng(), (2, 3))
    with pytest.raises(ValueError, match="at least 2 axes"):
        SymmetricGaussianNoise(1.0).sample(rng(), (3,))


# --------------------------------------------------------------------------------------------------------------
# Scalar laws
# --------------------------------------------------------------------------------------------------------------


def test_gaussian_matches_exact_cdf():
    z = GaussianNoise(2.5).sample(rng(1), (200_000,))
    assert ks_p(z, stats.norm(scale=2.5).cdf) > P_MIN


def test_laplace_matches_exact_cdf():
    z = LaplaceNoise(0.7).sample(rng(2), (200_000,))
    assert ks_p(z, stats.laplace(scale=0.7).cdf) > P_MIN


def test_ks_rejects_wrong_scale():
    """The KS checks have power: a 3% scale error is rejected."""
    z = GaussianNoise(2.5 * 1.03).sample(rng(1), (200_000,))
    assert ks_p(z, stats.norm(scale=2.5).cdf) < P_MIN


# --------------------------------------------------------------------------------------------------------------
# Gamma-norm (l2-Laplace) noise
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("d", [1, 3, 10])
def test_gamma_norm_radius_and_moments(d):
    c, n = 1.7, 100_000
    z = GammaNormNoise(c).sample(rng(3), (n, d))
    radius = np.linalg.norm(z, axis=1)
    assert ks_p(radius, stats.gamma(d, scale=c).cdf) > P_MIN
    mean, mean_sq = d * c, d * (d + 1) * c**2  # spec/private-oco-learners.md §1
    assert abs(radius.mean() - mean) < Z_MAX * np.sqrt(d) * c / np.sqrt(n)
    sd_sq = np.sqrt(d * (d + 1) * (d + 2) * (d + 3) * c**4 - mean_sq**2)
    assert abs(np.mean(radius**2) - mean_sq) < Z_MAX * sd_sq / np.sqrt(n)


def test_gamma_norm_direction_uniform():
    d = 5
    z = GammaNormNoise(2.0).sample(rng(4), (100_000, d))
    u = z / np.linalg.norm(z, axis=1, keepdims=True)
    for j in (0, d - 1):
        assert ks_p(u[:, j], cone_marginal_cdf(d, 2.0)) > P_MIN


def test_gamma_norm_one_dimensional_is_laplace():
    z = GammaNormNoise(0.8).sample(rng(5), (100_000, 1))
    assert ks_p(z, stats.laplace(scale=0.8).cdf) > P_MIN


# --------------------------------------------------------------------------------------------------------------
# Generalized Gaussian (spec/han-frank-wolfe.md §4; tests from spec/dp-testing-and-accounting.md §4)
# --------------------------------------------------------------------------------------------------------------


def lr_norm(z: np.ndarray, r: float) -> np.ndarray:
    return np.sum(np.abs(z) ** r, axis=-1) ** (1.0 / r)


def radius_stat_p(z: np.ndarray, sigma: float, r: float) -> float:
    """KS p-value of ||z||_r^2/(2 sigma^2) against Gamma(d/2, 1) (Lemma 3.1)."""
    d = z.shape[-1]
    return ks_p(lr_norm(z, r) ** 2 / (2.0 * sigma**2), stats.gamma(d / 2.0).cdf)


def direction_stat_p(z: np.ndarray, r: float) -> float:
    """KS p-value of the first coordinate of z/||z||_r against the cone-measure marginal."""
    d = z.shape[-1]
    theta = z[:, 0] / lr_norm(z, r)
    return ks_p(theta, cone_marginal_cdf(d, r))


def sign_pattern_p(z: np.ndarray) -> float:
    """Chi-square p-value of the sign patterns of the first three coordinates against uniform (8 cells)."""
    cells = (z[:, :3] > 0) @ np.array([1, 2, 4])
    return stats.chisquare(np.bincount(cells, minlength=8)).pvalue


def d1_sample(rng_: np.random.Generator, n: int, d: int, sigma: float, r: float) -> np.ndarray:
    """Published defect D1: radius^2 ~ Gamma(d/2, scale 2 sigma) instead of 2 sigma^2 (direction correct)."""
    radius = np.sqrt(rng_.gamma(d / 2.0, 2.0 * sigma, n))
    g = rng_.gamma(1.0 / r, 1.0, (n, d))
    x = np.where(rng_.random((n, d)) < 0.5, -1.0, 1.0) * g ** (1.0 / r)
    return radius[:, None] * x / lr_norm(x, r)[:, None]


def d2_sample(rng_: np.random.Generator, n: int, d: int, sigma: float, r: float) -> np.ndarray:
    """Published defect D2: direction from gennorm(r) + 1/r (radius correct)."""
    radius = np.sqrt(rng_.gamma(d / 2.0, 2.0 * sigma**2, n))
    x = stats.gennorm.rvs(r, size=(n, d), random_state=rng_) + 1.0 / r
    return radius[:, None] * x / lr_norm(x, r)[:, None]


GG_CASES = [(1, 3.0), (2, 1.0), (3, 1.5), (5, 2.0), (5, 3.0), (20, 3.0), (8, 7.5)]


@pytest.mark.parametrize("d, r", GG_CASES)
def test_generalized_gaussian_radius_law(d, r):
    sigma = 3.0
    z = GeneralizedGaussianNoise(sigma, r).sample(rng(10 + d), (40_000, d))
    assert radius_stat_p(z, sigma, r) > P_MIN


@pytest.mark.parametrize("d, r", [case for case in GG_CASES if case[0] >= 2])
def test_generalized_gaussian_direction_law(d, r):
    z = GeneralizedGaussianNoise(3.0, r).sample(rng(20 + d), (40_000, d))
    assert direction_stat_p(z, r) > P_MIN
    if d >= 3:
        assert sign_pattern_p(z) > P_MIN


def test_radius_check_rejects_published_defect_d1():
    d, r, sigma = 5, 3.0, 3.0
    assert radius_stat_p(d1_sample(rng(30), 40_000, d, sigma, r), sigma, r) < P_MIN


@pytest.mark.parametrize("r", [2.0, 3.0])
def test_direction_checks_reject_published_defect_d2(r):
    d, sigma = 5, 3.0
    z = d2_sample(rng(31), 40_000, d, sigma, r)
    assert direction_stat_p(z, r) < P_MIN
    assert sign_pattern_p(z) < P_MIN


def test_generalized_gaussian_r2_is_gaussian():
    d, sigma = 4, 1.7
    z = GeneralizedGaussianNoise(sigma, 2.0).sample(rng(32), (50_000, d))
    for j in range(d):
        assert ks_p(z[:, j], stats.norm(scale=sigma).cdf) > P_MIN
    u = z / np.linalg.norm(z, axis=1, keepdims=True)
    assert ks_p(u[:, 0], cone_marginal_cdf(d, 2.0)) > P_MIN
    corr = np.corrcoef(z, rowvar=False)[np.triu_indices(d, 1)]
    assert np.all(np.abs(corr) < Z_MAX / np.sqrt(50_000))


# --------------------------------------------------------------------------------------------------------------
# Symmetric matrix noise (spec/errata.md E5)
# --------------------------------------------------------------------------------------------------------------


def test_symmetric_gaussian_variances():
    sigma, k, n = 1.3, 3, 60_000
    z = SymmetricGaussianNoise(sigma).sample(rng(40), (n, k, k))
    np.testing.assert_array_equal(z, np.swapaxes(z, -1, -2))
    for j in range(k):
        assert ks_p(z[:, j, j], stats.norm(scale=np.sqrt(2.0) * sigma).cdf) > P_MIN
    for i, j in [(0, 1), (0, 2), (1, 2)]:
        assert ks_p(z[:, i, j], stats.norm(scale=sigma).cdf) > P_MIN
    upper = z[:, np.triu_indices(k)[0], np.triu_indices(k)[1]]
    corr = np.corrcoef(upper, rowvar=False)[np.triu_indices(upper.shape[1], 1)]
    assert np.all(np.abs(corr) < Z_MAX / np.sqrt(n))


# --------------------------------------------------------------------------------------------------------------
# Report-noisy-max
# --------------------------------------------------------------------------------------------------------------

SCORES = np.array([0.0, 0.4, 1.0, -0.5])


def laplace_selection_probabilities(scores: np.ndarray, scale: float) -> np.ndarray:
    """P(argmax(scores + Lap(scale)) = i) = integral of f(x - s_i) prod_{j != i} F(x - s_j) dx (quadrature)."""
    dist = stats.laplace(scale=scale)
    probs = []
    for i, s_i in enumerate(scores):
        others = np.delete(scores, i)

        def integrand(x, s_i=s_i, others=others):
            return dist.pdf(x - s_i) * np.prod(dist.cdf(x - others))

        lo, hi = scores.min() - 40 * scale, scores.max() + 40 * scale
        probs.append(integrate.quad(integrand, lo, hi, points=list(scores), limit=200, epsabs=1e-13)[0])
    return np.array(probs)


@pytest.mark.parametrize("form", ["laplace", "gumbel"])
def test_report_noisy_max_selection_probabilities(form):
    scale, n = 0.6, 200_000
    if form == "gumbel":
        expected = np.exp(SCORES / scale) / np.exp(SCORES / scale).sum()  # exponential mechanism, E4 item 4
    else:
        expected = laplace_selection_probabilities(SCORES, scale)
    assert expected.sum() == pytest.approx(1.0, abs=1e-9)
    picks = report_noisy_max(rng(50), np.tile(SCORES, (n, 1)), scale, form=form)
    assert picks.shape == (n,) and picks.dtype == np.int64
    counts = np.bincount(picks, minlength=SCORES.size)
    assert stats.chisquare(counts, n * expected).pvalue > P_MIN


def test_report_noisy_max_chi_square_has_power():
    """The Laplace and Gumbel forms differ on this instance, and the chi-square check tells them apart."""
    scale, n = 0.6, 200_000
    picks = report_noisy_max(rng(51), np.tile(SCORES, (n, 1)), scale, form="gumbel")
    counts = np.bincount(picks, minlength=SCORES.size)
    assert stats.chisquare(counts, n * laplace_selection_probabilities(SCORES, scale)).pvalue < P_MIN


def test_report_noisy_max_single_call_and_validation():
    choice = report_noisy_max(rng(52), [0.0, 100.0, 0.0], 0.1)
    assert isinstance(choice, int) and choice == 1
    with pytest.raises(ValueError, match="scale"):
        report_noisy_max(rng(), [0.0, 1.0], 0.0)
    with pytest.raises(ValueError, match="form"):
        report_noisy_max(rng(), [0.0, 1.0], 1.0, form="exponential")
    with pytest.raises(ValueError, match="scores"):
        report_noisy_max(rng(), [0.0, np.nan], 1.0)
    with pytest.raises(ValueError, match="scores"):
        report_noisy_max(rng(), [], 1.0)
    with pytest.raises(TypeError, match="scores"):
        report_noisy_max(rng(), ["a", "b"], 1.0)
    with pytest.raises(TypeError, match="rng"):
        report_noisy_max(None, [0.0, 1.0], 1.0)


# --------------------------------------------------------------------------------------------------------------
# Local Laplace randomiser (spec/private-oco-learners.md §6)
# --------------------------------------------------------------------------------------------------------------


def test_local_laplace_per_coordinate_law():
    tau = np.array([0.5, 2.0, np.inf])
    x = np.array([0.3, -1.0, 0.7])
    n = 100_000
    y = local_laplace(rng(60), np.tile(x, (n, 1)), tau)
    noise = y - x
    for j, t in enumerate(tau[:2]):
        assert ks_p(noise[:, j], stats.laplace(scale=2.0 / t).cdf) > P_MIN
        var = 8.0 / t**2  # 2 (2/tau)^2
        assert abs(noise[:, j].var() - var) < Z_MAX * np.sqrt(5.0) * var / np.sqrt(n)  # Var(L^2) = 5 var^2
    np.testing.assert_array_equal(noise[:, 2], 0.0)  # tau = inf: unprotected coordinate, no noise


def test_local_laplace_validation():
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        local_laplace(rng(), [1.5, 0.0], 1.0)
    with pytest.raises(ValueError, match="tau"):
        local_laplace(rng(), [0.5, 0.0], [1.0, 0.0])
    with pytest.raises(ValueError, match="tau"):
        local_laplace(rng(), [0.5, 0.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="tau"):
        local_laplace(rng(), [0.5, 0.0], float("nan"))
    with pytest.raises(ValueError, match="x"):
        local_laplace(rng(), [np.nan, 0.0], 1.0)
    with pytest.raises(TypeError, match="rng"):
        local_laplace(0, [0.5], 1.0)


def test_gaussian_draw_is_sample_bit_for_bit():
    """The trees' per-node ``draw`` (one ``rng.normal`` call) gives exactly ``sample``'s ``sigma * standard_normal``
    values from the same stream."""
    noise = GaussianNoise(23.84)
    a = noise.draw(np.random.default_rng(5), (10_000,))
    b = noise.sample(np.random.default_rng(5), (10_000,))
    assert np.array_equal(a.view(np.int64), b.view(np.int64))


@pytest.mark.parametrize("sigma", [0.37, 123.456, 1e-7])
@pytest.mark.parametrize("shape", [(1, 1), (5, 5), (3, 7, 7), (2, 300, 300)])
def test_symmetric_noise_draws_are_the_textbook_construction_bit_for_bit(sigma, shape):
    """The sampler fills the matrix from one vector of standard normals in upper-triangle order, scaled by sigma
    (sqrt(2) sigma on the diagonal), in place and with int32 indices: the same bits as the plain construction
    with a scale array (results of every agent with Gram noise depend on it)."""
    k = shape[-1]
    rows, cols = np.triu_indices(k)
    values = np.random.default_rng(3).standard_normal((*shape[:-2], rows.size)) * (
        sigma * np.where(rows == cols, math.sqrt(2.0), 1.0))
    expected = np.empty((*shape[:-2], k, k))
    expected[..., rows, cols] = values
    expected[..., cols, rows] = values
    got = SymmetricGaussianNoise(sigma).sample(np.random.default_rng(3), shape)
    assert np.array_equal(got, expected)


@pytest.mark.parametrize("shape", [(1, 1), (5, 5), (2, 7, 7), (3, 2, 4, 4), (2, 300, 300)])
def test_symmetric_noise_added_in_place_is_the_sample_added(shape):
    """``add_sample`` (the episodic releases' Gram noise, without a whole sample in memory) takes the same draws as
    ``sample`` and adds them entry by entry: ``target + sample`` bit for bit, the stream left in the same state."""
    noise = SymmetricGaussianNoise(3.7)
    target = np.random.default_rng(1).standard_normal(shape)
    expected_rng, rng = np.random.default_rng(5), np.random.default_rng(5)
    expected = target + noise.sample(expected_rng, shape)
    noise.add_sample(rng, target)
    assert target.tobytes() == expected.tobytes()
    assert rng.bit_generator.state == expected_rng.bit_generator.state
    with pytest.raises(ValueError, match="square"):
        noise.add_sample(rng, np.zeros((2, 3)))
    with pytest.raises(TypeError, match="float64"):
        noise.add_sample(rng, np.zeros((2, 2), dtype=np.float32))
