"""Known answers, properties and input validation of the calibration functions.

Known answers: spec/dp-testing-and-accounting.md §1.2, §3 and spec/errata.md E1, E2, E3, E6, E7.
"""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbandit.privacy.calibrate import (
    KappaRegular,
    gamma_norm_scale,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_sigma_analytic,
    gaussian_sigma_classic,
    gg_sigma_paper,
    gg_sigma_zcdp,
    kappa_regular_constants,
    laplace_scale,
    local_laplace_epsilon,
    noisy_max_epsilon,
    noisy_max_rho,
    noisy_max_scale,
    zcdp_epsilon,
    zcdp_rho_for,
)
from dpbandit.privacy.noise import GaussianNoise, GeneralizedGaussianNoise

INF, NAN = float("inf"), float("nan")
E2 = math.e**2

# --------------------------------------------------------------------------------------------------------------
# Known answers
# --------------------------------------------------------------------------------------------------------------


def test_gaussian_known_answers():
    # spec/dp-testing-and-accounting.md §1.2, §3
    assert gaussian_sigma_analytic(1.0, 1e-5, 1.0) == pytest.approx(3.731, abs=5e-4)
    assert gaussian_epsilon(1.0, 1e-5, 1.0) == pytest.approx(4.3772, abs=5e-5)
    assert gaussian_sigma_classic(1.0 - 1e-12, 1e-5, 1.0) == pytest.approx(4.845, abs=5e-4)
    assert gaussian_sigma_classic(0.5, 1e-5, 2.0) == pytest.approx(4 * 4.8448, rel=1e-4)
    # a tree with L levels is one Gaussian with sigma/sqrt(L) (§1.1): T = 1024, L = 11, sigma = 10 -> 1.264
    assert gaussian_epsilon(10.0 / math.sqrt(11), 1e-5, 1.0) == pytest.approx(1.264, abs=5e-4)
    assert gaussian_epsilon(10.0 / math.sqrt(17), 1e-5, 1.0) == pytest.approx(1.608, abs=5e-4)
    # calibrating the per-node sigma of the tree for (1, 1e-5): 12.37 (T = 1024), 15.38 (T = 1e5)
    assert gaussian_sigma_analytic(1.0, 1e-5, 1.0) * math.sqrt(11) == pytest.approx(12.37, abs=5e-3)
    assert gaussian_sigma_analytic(1.0, 1e-5, 1.0) * math.sqrt(17) == pytest.approx(15.38, abs=5e-3)
    # the tree audit's claim, spec §5: T = 64, L = 7, sigma = 3 -> 3.787
    assert gaussian_epsilon(3.0 / math.sqrt(7), 1e-5, 1.0) == pytest.approx(3.787, abs=5e-4)


@pytest.mark.parametrize("epsilon, delta", [(0.1, 1e-6), (1.0, 1e-5), (3.0, 1e-3), (20.0, 1e-9)])
def test_gaussian_matches_dp_accounting(epsilon, delta):
    sigma = dp_accounting.get_sigma_gaussian(epsilon, delta)
    assert gaussian_sigma_analytic(epsilon, delta, 1.0) == pytest.approx(sigma, rel=1e-9)
    assert gaussian_sigma_analytic(epsilon, delta, 2.5) == pytest.approx(2.5 * sigma, rel=1e-9)
    assert gaussian_epsilon(sigma, delta, 1.0) == pytest.approx(epsilon, rel=1e-9)


def test_gaussian_delta_shows_classic_gg_form_fails_at_large_epsilon():
    """spec/errata.md E1 Correction 1: sigma = s sqrt(2 ln(1/delta))/eps exceeds delta beyond 6.98 / 7.97 / 8.66."""
    for delta, crossing in [(1e-3, 6.98), (1e-5, 7.97), (1e-7, 8.66)]:
        for eps, ok in [(crossing - 0.01, True), (crossing + 0.01, False)]:
            sigma = math.sqrt(2 * math.log(1 / delta)) / eps
            assert (gaussian_delta(sigma, eps, 1.0) <= delta) is ok
    assert gaussian_delta(math.sqrt(2 * math.log(1e5)) / 10, 10.0, 1.0) == pytest.approx(2.88e-5, abs=5e-8)
    assert gaussian_delta(math.sqrt(2 * math.log(1e4)) / 16, 16.0, 1.0) == pytest.approx(4.3e-3, abs=5e-5)


def test_zcdp_known_answers():
    # spec/errata.md E1; spec/dp-testing-and-accounting.md §1.2, §3
    assert zcdp_rho_for(1.0, 1e-3) == pytest.approx(0.05939, abs=5e-6)
    assert zcdp_rho_for(1.0, 1e-5) == pytest.approx(0.03056, abs=5e-6)
    assert zcdp_epsilon(1 / 32, 1e-3) == pytest.approx(0.6880024554878085, rel=1e-9)  # OpenDP cdp_epsilon
    # single Gaussian sigma = 1 (rho = 1/2): the spec's 4.7285 is dp_accounting's RDP value on its discrete order
    # grid (4.72851); the continuous-order CKS optimum is slightly smaller, as in E7 (1.37814 vs 1.37850)
    assert zcdp_epsilon(0.5, 1e-5) == pytest.approx(4.72839, abs=1e-5)
    assert zcdp_epsilon(0.5, 1e-5) <= 4.728507
    assert zcdp_epsilon(11 / 200, 1e-5) == pytest.approx(1.37814, abs=1e-5)  # E7 tree T = 1024, sigma = 10
    # closed forms (Bun & Steinke 2016 Prop. 1.3)
    L = math.log(1e3)
    assert zcdp_rho_for(1.0, 1e-3, "closed-form") == pytest.approx((math.sqrt(L + 1) - math.sqrt(L)) ** 2)
    assert zcdp_epsilon(0.05, 1e-3, "closed-form") == pytest.approx(0.05 + 2 * math.sqrt(0.05 * L))


def test_generalized_gaussian_known_answers():
    # spec/errata.md E3: DP-TOFW (3.2) for T = 1000 (m = 11), kappa = 2, L0 = 1, D = 4, (1, 1e-3)
    m = 11
    assert gg_sigma_paper(1 / m, 1e-3 / m, 2 * (1 + 2 * 4), 2.0) == pytest.approx(1208.0, abs=0.05)  # L1 = 2
    assert gg_sigma_paper(1 / m, 1e-3 / m, 2 * (1 + 1 * 4), 2.0) == pytest.approx(671.1, abs=0.05)  # published L1 = 1
    # spec/errata.md E6: the same tree through zCDP, L = 10 levels, s = 18
    assert gg_sigma_zcdp(1.0, 1e-3, 18.0, 2.0 * 10) == pytest.approx(233.6, abs=0.05)
    assert gg_sigma_zcdp(1.0, 1e-3, 18.0, 2.0 * 10, method="closed-form") == pytest.approx(309.7, abs=0.05)


def test_dp_ucb_node_noise_known_answers():
    """spec/errata.md E6: sigma_n = sqrt(L) Ltilde^2 / mu*, T = 1e4 (L = 14), Ltilde^2 = 2, (1, 1e-4) -> 23.8;
    the paper's sigma_n = 328.3 certifies epsilon = 0.051 (E5: per-node sensitivity/sigma = Ltilde^2/sigma_n)."""
    assert gaussian_sigma_analytic(1.0, 1e-4, 2.0) * math.sqrt(14) == pytest.approx(23.8, abs=0.05)
    assert gaussian_epsilon(328.3 / math.sqrt(14), 1e-4, 2.0) == pytest.approx(0.051, abs=5e-4)


def test_pure_dp_scales():
    assert laplace_scale(0.5, 2.0) == pytest.approx(4.0)
    assert gamma_norm_scale(2.0, 3.0) == pytest.approx(1.5)
    # spec/dp-testing-and-accounting.md §1.1: Laplace tree, L = 11, b = 11 is pure epsilon = 1
    assert laplace_scale(1.0, 11.0) == pytest.approx(11.0)


def test_noisy_max_guarantees():
    assert noisy_max_epsilon(4.0, 1.0, "laplace") == pytest.approx(0.5)
    assert noisy_max_epsilon(4.0, 1.0, "gumbel") == pytest.approx(0.5)
    assert noisy_max_rho(4.0, 1.0, "laplace") == pytest.approx(0.125)  # eps^2/2
    assert noisy_max_rho(4.0, 1.0, "gumbel") == pytest.approx(0.03125)  # eps^2/8 (bounded range)
    assert noisy_max_scale(1.0, epsilon=0.5) == pytest.approx(4.0)
    for form in ("laplace", "gumbel"):
        scale = noisy_max_scale(3.0, rho=0.02, form=form)
        assert noisy_max_rho(scale, 3.0, form) == pytest.approx(0.02)
    # E4 item 4: at the same rho the Gumbel scale is half the Laplace scale
    assert noisy_max_scale(1.0, rho=0.1, form="gumbel") == pytest.approx(0.5 * noisy_max_scale(1.0, rho=0.1))


def test_local_laplace_epsilon():
    assert local_laplace_epsilon(0.5, 4) == pytest.approx(2.0)
    assert local_laplace_epsilon([0.1, 0.2, 0.3], 3) == pytest.approx(0.6)
    assert local_laplace_epsilon([0.1, INF], 2) == INF


# --------------------------------------------------------------------------------------------------------------
# kappa-regular constants (spec/errata.md E2; spec/han-frank-wolfe.md §1 Lemma 3.3)
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "q, d, expected",
    [
        (2.0, 50, (1.0, 1.0, 2.0)),
        (3.0, 3, (2.0, 2.0, 3.0)),  # E2: the spec's minima would give kappa = 0.73 < 1
        (20.0, 5, (19.0, 19.0, 20.0)),  # E2: not r = ln 5 = 1.61 (d < 8)
        (3.0, 4, (2.0, 2.0, 3.0)),  # the §8 setting p = 1.5
        (3.0, 1000, (2.0, 2.0, 3.0)),
        (100.0, 50, (E2 * (math.log(50) - 1), math.log(50) - 1, math.log(50))),
        (INF, 50, (E2 * (math.log(50) - 1), math.log(50) - 1, math.log(50))),
        (INF, 8, (E2 * (math.log(8) - 1), math.log(8) - 1, math.log(8))),
        (INF, 5, (5.0, 1.0, 2.0)),
        (1.5, 16, (16 ** (1 / 3), 1.0, 2.0)),
        (1.0, 16, (16.0, 1.0, 2.0)),
    ],
)
def test_kappa_regular_constants(q, d, expected):
    result = kappa_regular_constants(q, d)
    assert isinstance(result, KappaRegular)
    assert result[:3] == pytest.approx(expected)


def test_lemma_3_3_noise_is_scaled_gaussian():
    """q < 2: ||x||_+ = d^(1/q - 1/2)||x||_2, so GG_+(0, sigma^2) = N(0, sigma^2 d^(1 - 2/q) I)."""
    kr = kappa_regular_constants(1.0, 16)  # p = inf
    assert kr.norm_scale == pytest.approx(4.0)
    noise = kr.noise(8.0)
    assert isinstance(noise, GaussianNoise) and noise.sigma == pytest.approx(2.0)
    kr3 = kappa_regular_constants(3.0, 10)
    noise3 = kr3.noise(5.0)
    assert isinstance(noise3, GeneralizedGaussianNoise) and (noise3.sigma, noise3.r) == (5.0, 3.0)


@settings(max_examples=60, deadline=None)
@given(
    q=st.one_of(st.floats(1.0, 50.0), st.just(INF)),
    d=st.integers(1, 3000),
    seed=st.integers(0, 2**32 - 1),
)
def test_kappa_regular_definition_holds(q, d, seed):
    """Definition 2.2 with E2's smoothness condition: ||x||_q <= ||x||_+ <= sqrt(kappa/kappa_plus)||x||_q,
    ||.||_+ = norm_scale * l_r with r >= 2 and kappa_plus >= r - 1 >= 1 (l_r^2 is (r-1)-smooth)."""
    kr = kappa_regular_constants(q, d)
    assert kr.r >= 2.0 - 1e-12 and kr.kappa >= kr.kappa_plus >= max(1.0, kr.r - 1.0) - 1e-12
    x = np.random.default_rng(seed).standard_normal((20, d)) * np.random.default_rng(seed + 1).exponential(
        1.0, (20, d)
    )
    norm_q = np.max(np.abs(x), axis=1) if math.isinf(q) else np.sum(np.abs(x) ** q, axis=1) ** (1 / q)
    norm_plus = kr.norm_scale * np.sum(np.abs(x) ** kr.r, axis=1) ** (1 / kr.r)
    assert np.all(norm_q <= norm_plus * (1 + 1e-9))
    assert np.all(norm_plus <= math.sqrt(kr.kappa / kr.kappa_plus) * norm_q * (1 + 1e-9))


# --------------------------------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------------------------------

epsilons = st.floats(0.05, 20.0)
deltas = st.floats(1e-10, 0.1)


@settings(max_examples=60, deadline=None)
@given(epsilon=epsilons, delta=deltas, sensitivity=st.floats(0.01, 100.0))
def test_analytic_sigma_is_tight(epsilon, delta, sensitivity):
    sigma = gaussian_sigma_analytic(epsilon, delta, sensitivity)
    assert gaussian_delta(sigma, epsilon, sensitivity) <= delta
    assert gaussian_delta(sigma * (1 - 1e-3), epsilon, sensitivity) > delta
    assert gaussian_epsilon(sigma, delta, sensitivity) <= epsilon * (1 + 1e-9)
    assert gaussian_epsilon(sigma * (1 - 1e-3), delta, sensitivity) > epsilon


@settings(max_examples=60, deadline=None)
@given(sigma=st.floats(0.05, 100.0), factor=st.floats(1.001, 3.0), delta=deltas)
def test_gaussian_epsilon_decreasing_in_sigma(sigma, factor, delta):
    assert gaussian_epsilon(sigma * factor, delta, 1.0) <= gaussian_epsilon(sigma, delta, 1.0)


@settings(max_examples=40, deadline=None)
@given(epsilon=st.floats(0.05, 0.99), delta=deltas)
def test_analytic_never_exceeds_classic(epsilon, delta):
    assert gaussian_sigma_analytic(epsilon, delta, 1.0) <= gaussian_sigma_classic(epsilon, delta, 1.0)


@settings(max_examples=40, deadline=None)
@given(epsilon=epsilons, delta=deltas, method=st.sampled_from(["cks", "closed-form"]))
def test_zcdp_rho_for_is_the_largest_rho(epsilon, delta, method):
    rho = zcdp_rho_for(epsilon, delta, method)
    assert zcdp_epsilon(rho, delta, method) <= epsilon * (1 + 1e-9)
    assert zcdp_epsilon(rho * (1 + 2e-3), delta, method) > epsilon


@settings(max_examples=40, deadline=None)
@given(rho=st.floats(1e-6, 10.0), delta=deltas)
def test_cks_is_tighter_than_closed_form(rho, delta):
    assert zcdp_epsilon(rho, delta, "cks") <= zcdp_epsilon(rho, delta, "closed-form") * (1 + 1e-12)


@settings(max_examples=40, deadline=None)
@given(
    epsilon=epsilons,
    delta=deltas,
    sensitivity=st.floats(0.01, 100.0),
    kappa=st.floats(1.0, 50.0),
    method=st.sampled_from(["cks", "closed-form"]),
)
def test_gg_sigma_zcdp_meets_target_and_is_tight(epsilon, delta, sensitivity, kappa, method):
    """rho = kappa s^2/(2 sigma^2) (E1 Correction 2) converts to at most epsilon; sigma (1 - 1e-3) does not."""
    sigma = gg_sigma_zcdp(epsilon, delta, sensitivity, kappa, method)
    rho = kappa * sensitivity**2 / (2 * sigma**2)
    assert zcdp_epsilon(rho, delta, method) <= epsilon * (1 + 1e-9)
    rho_less_noise = kappa * sensitivity**2 / (2 * (sigma * (1 - 1e-3)) ** 2)
    assert zcdp_epsilon(rho_less_noise, delta, method) > epsilon


@settings(max_examples=40, deadline=None)
@given(epsilon=st.floats(0.01, 1.0), delta=st.floats(1e-12, 1e-2))
def test_paper_gg_form_is_safe_for_epsilon_at_most_one(epsilon, delta):
    """spec/errata.md E1: for eps <= 1 the paper form means rho = eps^2/(4 ln(1/delta)), which CKS converts to at
    most 0.93 eps (here with kappa = 1; every kappa gives the same rho)."""
    sigma = gg_sigma_paper(epsilon, delta, 1.0, 1.0)
    assert zcdp_epsilon(1.0 / (2 * sigma**2), delta) <= 0.93 * epsilon


# --------------------------------------------------------------------------------------------------------------
# Validation (spec/dp-testing-and-accounting.md §7): one case per bad-input row, message names the parameter
# --------------------------------------------------------------------------------------------------------------

BAD_CASES = [
    # epsilon <= 0, NaN, inf, wrong type
    (gaussian_sigma_analytic, (0.0, 1e-5, 1.0), ValueError, "epsilon"),
    (gaussian_sigma_analytic, (-1.0, 1e-5, 1.0), ValueError, "epsilon"),
    (gaussian_sigma_analytic, (NAN, 1e-5, 1.0), ValueError, "epsilon"),
    (gaussian_sigma_analytic, (INF, 1e-5, 1.0), ValueError, "epsilon"),
    (gaussian_sigma_analytic, ("1", 1e-5, 1.0), TypeError, "epsilon"),
    (gaussian_sigma_analytic, (True, 1e-5, 1.0), TypeError, "epsilon"),
    (laplace_scale, (0.0, 1.0), ValueError, "epsilon"),
    (gamma_norm_scale, (NAN, 1.0), ValueError, "epsilon"),
    (zcdp_rho_for, (-0.5, 1e-5), ValueError, "epsilon"),
    (gg_sigma_zcdp, (INF, 1e-5, 1.0, 1.0), ValueError, "epsilon"),
    # delta outside (0, 1): every Gaussian / GG calibration and zCDP conversion needs delta > 0
    (gaussian_sigma_analytic, (1.0, 0.0, 1.0), ValueError, "delta"),
    (gaussian_sigma_analytic, (1.0, 1.0, 1.0), ValueError, "delta"),
    (gaussian_sigma_analytic, (1.0, -1e-5, 1.0), ValueError, "delta"),
    (gaussian_sigma_analytic, (1.0, NAN, 1.0), ValueError, "delta"),
    (gaussian_sigma_classic, (0.5, 0.0, 1.0), ValueError, "delta"),
    (gaussian_epsilon, (1.0, 0.0, 1.0), ValueError, "delta"),
    (gaussian_epsilon, (1.0, 1.5, 1.0), ValueError, "delta"),
    (gg_sigma_paper, (0.5, 0.0, 1.0, 2.0), ValueError, "delta"),
    (gg_sigma_zcdp, (1.0, 0.0, 1.0, 2.0), ValueError, "delta"),
    (zcdp_rho_for, (1.0, 0.0), ValueError, "delta"),
    (zcdp_epsilon, (0.1, 1.0), ValueError, "delta"),
    # sensitivity <= 0, NaN, inf
    (gaussian_sigma_analytic, (1.0, 1e-5, 0.0), ValueError, "sensitivity"),
    (gaussian_sigma_analytic, (1.0, 1e-5, -1.0), ValueError, "sensitivity"),
    (gaussian_sigma_classic, (0.5, 1e-5, NAN), ValueError, "sensitivity"),
    (gaussian_epsilon, (1.0, 1e-5, INF), ValueError, "sensitivity"),
    (laplace_scale, (1.0, 0.0), ValueError, "sensitivity_l1"),
    (gamma_norm_scale, (1.0, -2.0), ValueError, "sensitivity_l2"),
    (gg_sigma_paper, (0.5, 1e-5, 0.0, 2.0), ValueError, "sensitivity"),
    (gg_sigma_zcdp, (1.0, 1e-5, NAN, 2.0), ValueError, "sensitivity"),
    (noisy_max_epsilon, (1.0, 0.0), ValueError, "sensitivity"),
    # sigma / scale / rho <= 0 or non-finite
    (gaussian_epsilon, (0.0, 1e-5, 1.0), ValueError, "sigma"),
    (gaussian_epsilon, (NAN, 1e-5, 1.0), ValueError, "sigma"),
    (gaussian_delta, (-1.0, 1.0, 1.0), ValueError, "sigma"),
    (noisy_max_epsilon, (0.0, 1.0), ValueError, "scale"),
    (noisy_max_rho, (INF, 1.0), ValueError, "scale"),
    (zcdp_epsilon, (0.0, 1e-5), ValueError, "rho"),
    (zcdp_epsilon, (NAN, 1e-5), ValueError, "rho"),
    # kappa, q, d, method, form
    (gg_sigma_paper, (0.5, 1e-5, 1.0, 0.5), ValueError, "kappa"),
    (gg_sigma_zcdp, (1.0, 1e-5, 1.0, NAN), ValueError, "kappa"),
    (kappa_regular_constants, (0.5, 10), ValueError, "q"),
    (kappa_regular_constants, (NAN, 10), ValueError, "q"),
    (kappa_regular_constants, (3.0, 0), ValueError, "d"),
    (kappa_regular_constants, (3.0, 2.0), TypeError, "d"),
    (zcdp_epsilon, (0.1, 1e-5, "rdp"), ValueError, "method"),
    (gg_sigma_zcdp, (1.0, 1e-5, 1.0, 1.0, "exact"), ValueError, "method"),
    (noisy_max_epsilon, (1.0, 1.0, "exponential"), ValueError, "form"),
    (local_laplace_epsilon, (0.0, 3), ValueError, "tau"),
    (local_laplace_epsilon, ([1.0, 2.0], 3), ValueError, "tau"),
    (local_laplace_epsilon, (1.0, 0), ValueError, "d"),
]


@pytest.mark.parametrize("func, args, exc, name", BAD_CASES, ids=lambda v: getattr(v, "__name__", None))
def test_bad_input_raises_naming_the_parameter(func, args, exc, name):
    with pytest.raises(exc, match=rf"^{name}\b"):
        func(*args)


def test_wrong_regime_raises_and_points_to_the_valid_calibration():
    with pytest.raises(ValueError, match="epsilon must be < 1.*gaussian_sigma_analytic"):
        gaussian_sigma_classic(1.0, 1e-5, 1.0)
    with pytest.raises(ValueError, match="epsilon must be <= 1.*E1.*gg_sigma_zcdp"):
        gg_sigma_paper(1.5, 1e-5, 1.0, 2.0)
    with pytest.raises(ValueError, match="exactly one of epsilon or rho"):
        noisy_max_scale(1.0, epsilon=1.0, rho=0.1)
    with pytest.raises(ValueError, match="exactly one of epsilon or rho"):
        noisy_max_scale(1.0)

