"""PrivacyLedger, tree calibration and PrivacyReport: the known answers of spec/dp-testing-and-accounting.md §1.2, §3
and spec/errata.md E6, E7; monotonicity and calibration properties; refusal of unsupported events; the §7
validation rows; the JSON round trip of the report."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbandit.privacy.ledger import PrivacyLedger, UnsupportedEventError
from dpbandit.privacy.tree_calibration import calibrate_tree_sigma, calibrate_window_sigma, tree_epsilon
from dpbandit.privacy.calibrate import zcdp_epsilon
from dpbandit.privacy.noise import (
    GammaNormNoise,
    GaussianNoise,
    GeneralizedGaussianNoise,
    LaplaceNoise,
    Noise,
    SymmetricGaussianNoise,
)
from dpbandit.privacy.report import PUBLISHED_CODE_SETTING, PrivacyEvent, PrivacyReport
from dpbandit.privacy.tree import TreeAggregator, tree_depth
from dpbandit.privacy.window import WindowTree

ASSUMPTION = "contexts clipped to ||x||_2 <= 1, rewards to [-1, 1]"


def gaussian_tree(sigma: float, horizon: int, shape=(3,)) -> TreeAggregator:
    return TreeAggregator(shape, horizon, GaussianNoise(sigma), np.random.default_rng(0))


# -- known answers -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("T", "sigma", "rho", "exact", "rdp", "basic"), [
    (1024, 5, 0.220, 2.738, 2.968, 9.22),
    (1024, 10, 0.055, 1.264, 1.378, 4.39),
    (1024, 20, 0.0138, 0.591, 0.648, 2.09),
    (10**5, 10, 0.085, 1.608, 1.7512, 6.95),  # RDP 1.7512, not 1.750 (spec/errata.md E7)
    (10**5, 20, 0.0213, 0.750, 0.821, 3.32),
])
def test_section_1_2_table(T, sigma, rho, exact, rdp, basic):
    ledger = PrivacyLedger().add_tree(gaussian_tree(sigma, T), 1.0)
    assert ledger.rho == pytest.approx(rho, abs=5e-4)
    assert ledger.epsilon(1e-5, "exact") == pytest.approx(exact, abs=6e-4)
    assert ledger.epsilon(1e-5, "pld") == pytest.approx(exact, abs=1e-3)
    assert ledger.epsilon(1e-5, "rdp") == pytest.approx(rdp, abs=1e-3)
    assert ledger.epsilon(1e-5, "basic") == pytest.approx(basic, abs=6e-3)


def test_pinned_known_answers_E7():
    assert tree_epsilon(10, 1e-5, 1024, method="exact") == pytest.approx(1.26406, abs=1e-5)
    assert tree_epsilon(10, 1e-5, 1024, method="rdp") == pytest.approx(1.3785, abs=1e-3)
    assert tree_epsilon(10, 1e-5, 1024, method="zcdp") == pytest.approx(1.37814, abs=1e-5)  # continuous CKS
    assert tree_epsilon(10, 1e-5, 10**5, method="exact") == pytest.approx(1.608, abs=5e-4)
    assert tree_epsilon(10, 1e-5, 10**5, method="rdp") == pytest.approx(1.7512, abs=1e-3)
    assert tree_epsilon(10, 1e-5, 10**5, method="zcdp") == pytest.approx(1.7502, abs=1e-4)


@pytest.mark.parametrize(("method", "T", "sigma", "tol"), [
    ("exact", 1024, 12.37, 5e-3), ("exact", 10**5, 15.38, 5e-3),
    ("zcdp", 1024, 13.42, 5e-3), ("zcdp", 10**5, 16.68, 5e-3),
    ("basic", 1024, 39.9, 0.05), ("basic", 10**5, 61.6, 0.05),
])
def test_calibrated_sigma_known_answers(method, T, sigma, tol):
    assert calibrate_tree_sigma(1.0, 1e-5, T, 1.0, method) == pytest.approx(sigma, abs=tol)


def test_single_gaussian_and_laplace_tree_known_answers():
    ledger = PrivacyLedger().add_gaussian(1.0)
    assert ledger.epsilon(1e-5, "exact") == pytest.approx(4.3772, abs=1e-4)
    assert ledger.epsilon(1e-5, "rdp") == pytest.approx(4.7285, abs=1e-4)
    laplace = PrivacyLedger().add_tree(TreeAggregator(3, 1024, LaplaceNoise(11.0), np.random.default_rng(0)), 1.0)
    assert laplace.epsilon(0.0, "exact") == pytest.approx(1.0, rel=1e-12)  # L = 11, b = 11: pure epsilon = 1
    assert laplace.epsilon(1e-5, "pld") == pytest.approx(0.980, abs=1e-3)


def test_dp_ucb_symmetric_gram_tree_E5_E6():
    """Tight DP-UCB node noise at T = 1e4, (1, 1e-4), L~ = sqrt 2 is 23.8; the paper's 328.3 certifies 0.051."""
    L_tilde_sq = 2.0
    sigma_n = calibrate_tree_sigma(1.0, 1e-4, 10**4, L_tilde_sq)
    assert sigma_n == pytest.approx(23.8, abs=0.05)
    for sigma, eps in ((sigma_n, 1.0), (328.3, 0.051)):
        tree = TreeAggregator((4, 4), 10**4, SymmetricGaussianNoise(sigma), np.random.default_rng(0))
        ledger = PrivacyLedger().add_tree(tree, math.sqrt(2.0) * L_tilde_sq)  # ||vv' - ww'||_F <= sqrt 2 L~^2
        assert ledger.epsilon(1e-4, "exact") == pytest.approx(eps, abs=5e-4)


def test_tree_is_one_gaussian_with_sigma_over_sqrt_L_and_one_leaf_trees_are_gaussians():
    tree = PrivacyLedger().add_tree(gaussian_tree(7.0, 500), 2.0)
    single = PrivacyLedger().add_gaussian(7.0 / 2.0 / math.sqrt(tree_depth(500)))
    for method in ("exact", "rdp", "zcdp"):
        assert tree.epsilon(1e-6, method) == pytest.approx(single.epsilon(1e-6, method), rel=1e-9)
    restarted = PrivacyLedger()
    for _ in range(40):
        restarted.add_tree(gaussian_tree(3.0, 1), 1.0)
    composed = PrivacyLedger().add_gaussian(3.0, count=40)
    assert restarted.epsilon(1e-5, "rdp") == pytest.approx(composed.epsilon(1e-5, "rdp"), rel=1e-12)
    assert restarted.epsilon(1e-5, "exact") == pytest.approx(composed.epsilon(1e-5, "exact"), rel=1e-12)


def test_basic_composition_splits_delta_over_the_approximate_releases():
    from dpbandit.privacy.calibrate import gaussian_epsilon

    ledger = PrivacyLedger().add_gaussian(4.0, count=3).add_gaussian(9.0, count=2).add_laplace(20.0)
    expected = 3 * gaussian_epsilon(4.0, 1e-6 / 5, 1.0) + 2 * gaussian_epsilon(9.0, 1e-6 / 5, 1.0) + 1 / 20
    assert ledger.epsilon(1e-6, "basic") == pytest.approx(expected, rel=1e-12)


def test_the_tree_noise_determines_the_event():
    def event(noise, shape=(4,), sensitivity=2.0):
        tree = TreeAggregator(shape, 100, noise, np.random.default_rng(0))
        return PrivacyLedger().add_tree(tree, sensitivity).events[0]

    L = tree_depth(100)
    e = event(GaussianNoise(6.0))
    assert (e.kind, e.value, e.count, e.scale, e.sensitivity, e.horizon) == ("gaussian", 3.0, L, 6.0, 2.0, 100)
    assert event(GeneralizedGaussianNoise(6.0, 2.0)).kind == "gaussian"
    e = event(GeneralizedGaussianNoise(6.0, 3.0))
    assert e.kind == "zcdp" and e.value == pytest.approx(2.0 * 4.0 / 72.0) and e.rho == pytest.approx(L * 8 / 72)
    e = event(SymmetricGaussianNoise(6.0), shape=(3, 3))
    assert e.kind == "gaussian" and e.value == pytest.approx(math.sqrt(2.0) * 3.0)
    e = event(LaplaceNoise(6.0))
    assert (e.kind, e.value) == ("laplace", 3.0)
    e = event(GammaNormNoise(6.0))
    assert (e.kind, e.value) == ("pure", pytest.approx(1 / 3))
    assert event(None).kind == "non-private"


# -- properties ----------------------------------------------------------------------------------------------------

FAST_METHODS = ("exact", "rdp", "zcdp", "basic")


def test_tiny_rho_reports_epsilon_zero_never_negative():
    """The CKS bound of rho = 1/(2 * 78^2) at delta = 2^-7 is -6.1e-5 (its condition holds at epsilon = 0): the
    ledger reports (0, delta)-DP (found by the property test below)."""
    assert zcdp_epsilon(1 / (2 * 78.0**2), 2.0**-7) <= 0.0
    assert tree_epsilon(78.0, 2.0**-7, 1, method="zcdp") == 0.0


@settings(max_examples=100, deadline=None)
@given(
    sigma=st.floats(0.5, 200.0), ratio=st.floats(1.01, 3.0), delta=st.floats(1e-10, 1e-2),
    T=st.integers(1, 10**7), method=st.sampled_from(FAST_METHODS),
)
def test_epsilon_decreases_in_sigma_and_increases_in_T(sigma, ratio, delta, T, method):
    eps = tree_epsilon(sigma, delta, T, method=method)
    assert eps >= 0 and math.isfinite(eps)  # 0 is legitimate: (0, delta)-DP for very large sigma
    smaller = tree_epsilon(sigma * ratio, delta, T, method=method)
    assert smaller < eps or smaller == eps == 0
    deeper = tree_epsilon(sigma, delta, 2 * T, method=method)  # one more level
    assert deeper > eps or deeper == eps == 0
    assert tree_epsilon(sigma, delta, T + 1, method=method) >= eps


@settings(max_examples=100, deadline=None)
@given(
    epsilon=st.floats(0.05, 10.0), delta=st.floats(1e-10, 1e-2), T=st.integers(1, 10**7),
    sensitivity=st.floats(0.01, 100.0), method=st.sampled_from(("exact", "zcdp", "basic")),
)
def test_calibrated_sigma_meets_the_target_and_a_smaller_one_does_not(epsilon, delta, T, sensitivity, method):
    sigma = calibrate_tree_sigma(epsilon, delta, T, sensitivity, method)
    assert tree_epsilon(sigma, delta, T, sensitivity, method) <= epsilon
    assert tree_epsilon(sigma * (1 - 1e-3), delta, T, sensitivity, method) > epsilon


@settings(max_examples=50, deadline=None)
@given(sigma=st.floats(0.5, 100.0), delta=st.floats(1e-9, 1e-3), T=st.integers(1, 10**6))
def test_exact_is_the_smallest_valid_accounting_of_a_gaussian_tree(sigma, delta, T):
    ledger = PrivacyLedger().add_tree(gaussian_tree(sigma, T), 1.0)
    exact = ledger.epsilon(delta, "exact")
    for method in ("rdp", "zcdp", "basic"):
        assert ledger.epsilon(delta, method) >= exact * (1 - 1e-9)


def test_window_calibration_uses_log2_W_plus_one_nodes():
    assert calibrate_window_sigma(1.0, 1e-5, 64, 1.0) == pytest.approx(calibrate_tree_sigma(1.0, 1e-5, 127, 1.0))
    assert calibrate_window_sigma(1.0, 1e-5, 33, 1.0) == calibrate_window_sigma(1.0, 1e-5, 64, 1.0)


# -- refusals (fail closed) ----------------------------------------------------------------------------------------


class UnknownNoise(Noise):
    @property
    def name(self) -> str:
        return "unknown"

    def sample(self, rng, shape):
        return rng.standard_normal(shape)

    def describe(self) -> dict:
        return {"name": "unknown"}


def test_unsupported_events_are_refused():
    with pytest.raises(UnsupportedEventError, match="unknown"):
        PrivacyLedger().add_tree(TreeAggregator(3, 10, UnknownNoise(), np.random.default_rng(0)), 1.0)
    with pytest.raises(UnsupportedEventError, match="r=1.5"):
        gg = GeneralizedGaussianNoise(1.0, 1.5)
        PrivacyLedger().add_tree(TreeAggregator(3, 10, gg, np.random.default_rng(0)), 1.0)
    mixed = PrivacyLedger().add_gaussian(5.0).add_zcdp(0.01, mechanism="noisy max", bound="E4 item 4")
    for method in ("exact", "pld"):
        with pytest.raises(UnsupportedEventError, match="zcdp event 'noisy max'"):
            mixed.epsilon(1e-5, method)
    assert set(mixed.epsilons(1e-5)) == {"rdp", "zcdp", "basic"}
    with pytest.raises(UnsupportedEventError, match="laplace"):
        PrivacyLedger().add_gaussian(5.0).add_laplace(3.0).epsilon(1e-5, "exact")
    with pytest.raises(UnsupportedEventError, match="windows"):
        PrivacyLedger().add_tree(WindowTree(2, 4, GaussianNoise(1.0), np.random.default_rng(0)), 1.0).add_tree(
            WindowTree(2, 8, GaussianNoise(1.0), np.random.default_rng(0)), 1.0).window


def test_non_private_and_empty_ledgers():
    ledger = PrivacyLedger().add_tree(TreeAggregator(3, 10), 1.0)
    assert all(ledger.epsilon(1e-5, m) == math.inf for m in ("exact", "pld", "rdp", "zcdp", "basic"))
    with pytest.raises(ValueError, match="only honest guarantee is 'none'"):
        ledger.report(1e-5, guarantee="JDP", sensitivity_assumption=ASSUMPTION)
    report = ledger.report(1e-5, guarantee="none", sensitivity_assumption=ASSUMPTION)
    assert report.epsilon == math.inf and report.guarantee == "none"
    for call in (lambda led: led.epsilon(1e-5), lambda led: led.rho,
                 lambda led: led.report(1e-5, guarantee="DP", sensitivity_assumption="")):
        with pytest.raises(ValueError, match="empty"):
            call(PrivacyLedger())


def test_window_guarantee_needs_a_window_tree():
    with pytest.raises(ValueError, match="needs a window tree"):
        PrivacyLedger().add_gaussian(3.0).report(1e-5, guarantee="window-DP", sensitivity_assumption="")


# -- reports -------------------------------------------------------------------------------------------------------


def test_report_fields_and_json_round_trip():
    ledger = PrivacyLedger().add_tree(gaussian_tree(10.0, 1024), 1.0)
    report = ledger.report(1e-5, guarantee="JDP", sensitivity_assumption=ASSUMPTION)
    assert report.epsilon == pytest.approx(1.26406, abs=1e-5)
    assert report.conversion.startswith("analytic Gaussian")
    assert (report.per_node_sigma, report.noise_multiplier, report.tree_depth, report.horizon) == (10.0, 10.0, 11, 1024)
    assert report.rho == pytest.approx(0.055) and report.sensitivity == 1.0
    assert dict(report.alternatives)["rdp"] == pytest.approx(1.3785, abs=1e-3)
    assert report.privacy_unit == "one user = one round's context and reward"
    assert "not an FP-safe" in report.sampler and report.sensitivity_assumption == ASSUMPTION
    text = report.to_json()
    assert PrivacyReport.from_json(text) == report == PrivacyReport.from_dict(json.loads(text))
    assert "JDP (ε=1.264" in str(report) and "analytic Gaussian" in str(report)
    again = PrivacyLedger.from_dict(json.loads(json.dumps(ledger.to_dict())))
    assert again.epsilon(1e-5) == ledger.epsilon(1e-5)


def test_report_with_a_fixed_method_lists_the_others_as_alternatives():
    ledger = PrivacyLedger().add_tree(gaussian_tree(10.0, 1024), 1.0)
    report = ledger.report(1e-5, guarantee="DP", sensitivity_assumption=ASSUMPTION, method="rdp")
    assert report.epsilon == pytest.approx(1.3785, abs=1e-3) and "RDP" in report.conversion
    assert "rdp" not in dict(report.alternatives) and "exact" in dict(report.alternatives)
    with pytest.raises(UnsupportedEventError):
        PrivacyLedger().add_zcdp(0.1, mechanism="m", bound="b").report(
            1e-5, guarantee="DP", sensitivity_assumption="", method="exact")


EVENTS = {
    "gaussian": lambda ledger: ledger.add_gaussian(3.0, 4),
    "laplace": lambda ledger: ledger.add_laplace(5.0, 2),
    "pure": lambda ledger: ledger.add_pure(0.1, 3, mechanism="pure step"),
    "zcdp": lambda ledger: ledger.add_zcdp(0.01, 2, mechanism="noisy max", bound="E4"),
}


@pytest.mark.parametrize("kinds", [k for n in range(1, 5) for k in itertools.combinations(sorted(EVENTS), n)],
                         ids="+".join)
def test_composition_and_conversion_labels_are_true_for_every_event_mix(kinds):
    """The report's composition/conversion text names only what the chosen accounting did with this mix: no
    "Gaussian"/"analytic Gaussian" without Gaussian events, no Laplace without Laplace events, no delta split
    without approximate-DP events; pure-DP ledgers at delta = 0 say "pure-DP composition"."""
    ledger = PrivacyLedger()
    for kind in kinds:
        EVENTS[kind](ledger)
    pure_only = set(kinds) <= {"laplace", "pure"}
    for delta in (0.0, 1e-5) if pure_only else (1e-5,):
        for method in ledger.epsilons(delta):
            report = ledger.report(delta, guarantee="DP", sensitivity_assumption=ASSUMPTION, method=method)
            text = f"{report.composition} | {report.conversion}".lower()
            assert ("gaussian" in text) <= ("gaussian" in kinds), (method, text)
            assert ("laplace" in text) <= ("laplace" in kinds), (method, text)
            assert ("delta split" in text) == (method == "basic" and not pure_only), (method, text)
            assert ("eps^2/2" in text) == (method == "zcdp" and not set(kinds).isdisjoint({"pure", "laplace"}))
            if method == "exact":
                assert text.startswith("pure-dp composition") == pure_only, text
            if method in ("pld", "basic"):  # these name every kind they composed
                assert all(kind in text for kind in kinds if kind != "pure" or method == "basic"), (method, text)
    if pure_only:
        report = ledger.report(0.0, guarantee="DP", sensitivity_assumption=ASSUMPTION)
        assert report.epsilon == pytest.approx(ledger.epsilon(0.0, "basic"))
        assert report.conversion == "none: pure epsilon-DP, delta = 0" and "Gaussian" not in report.composition


def test_non_private_report_round_trips_with_strict_json():
    report = PrivacyReport.non_private("LinUCB")
    text = report.to_json()
    assert "Infinity" not in text and json.loads(text)["epsilon"] == "inf"
    assert PrivacyReport.from_json(text) == report
    assert report.label == "non-private (no guarantee)"


def test_published_code_setting_is_never_private():
    ledger = PrivacyLedger().add_tree(gaussian_tree(10.0, 1024), 1.0)
    report = ledger.report(1e-5, guarantee="JDP", sensitivity_assumption="", calibration_mode=PUBLISHED_CODE_SETTING)
    assert (report.guarantee, report.epsilon, report.alternatives) == ("none", math.inf, ())
    assert report.label == PUBLISHED_CODE_SETTING and "NOT PRIVATE" in str(report)
    with pytest.raises(ValueError, match="no guarantee"):
        PrivacyReport(guarantee="JDP", epsilon=1.0, delta=1e-5, calibration_mode=PUBLISHED_CODE_SETTING)
    assert PrivacyReport.from_json(report.to_json()) == report


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    (dict(guarantee="JDP+LDP", epsilon=1.0, delta=1e-5), ValueError, "guarantee"),
    (dict(guarantee="none", epsilon=1.0, delta=1e-5), ValueError, "inf exactly when"),
    (dict(guarantee="JDP", epsilon=math.inf, delta=1e-5), ValueError, "inf exactly when"),
    (dict(guarantee="JDP", epsilon=float("nan"), delta=1e-5), ValueError, "epsilon"),
    (dict(guarantee="JDP", epsilon=-1.0, delta=1e-5), ValueError, "epsilon"),
    (dict(guarantee="JDP", epsilon=1.0, delta=1.0), ValueError, "delta"),
    (dict(guarantee="window-JDP", epsilon=1.0, delta=1e-5), TypeError, "window"),
    (dict(guarantee="JDP", epsilon=1.0, delta=1e-5, window=8), ValueError, "window"),
    (dict(guarantee="JDP", epsilon=1.0, delta=1e-5, calibration_mode="paper"), ValueError, "calibration_mode"),
])
def test_report_validation(kwargs, error, match):
    with pytest.raises(error, match=match):
        PrivacyReport(**kwargs)


def test_report_from_dict_refuses_unknown_fields():
    data = PrivacyReport.non_private("x").to_dict() | {"epsilon_total": 3}
    with pytest.raises(ValueError, match="unknown PrivacyReport fields"):
        PrivacyReport.from_dict(data)


def test_extend_composes_ledgers_by_summing_rho():
    a = PrivacyLedger().add_tree(gaussian_tree(10.0, 1024), 1.0)
    b = PrivacyLedger().add_gaussian(5.0, count=4)
    rho = a.rho + b.rho
    assert a.extend(b).rho == pytest.approx(rho) and len(a.events) == 2
    with pytest.raises(ValueError, match="neighbouring"):
        a.extend(PrivacyLedger(neighboring="add-or-remove-one"))


# -- validation rows (spec/dp-testing-and-accounting.md §7) -------------------------------------------------------

GOOD = dict(epsilon=1.0, delta=1e-5, horizon=1024, sensitivity=1.0)


@pytest.mark.parametrize(("name", "value", "error"), [
    ("epsilon", 0.0, ValueError), ("epsilon", -1.0, ValueError), ("epsilon", float("nan"), ValueError),
    ("epsilon", math.inf, ValueError), ("epsilon", "1", TypeError),
    ("delta", 0.0, ValueError), ("delta", 1.0, ValueError), ("delta", -1e-5, ValueError),
    ("delta", float("nan"), ValueError),
    ("horizon", 0, ValueError), ("horizon", 1024.0, TypeError), ("horizon", True, TypeError),
    ("sensitivity", 0.0, ValueError), ("sensitivity", -1.0, ValueError), ("sensitivity", math.inf, ValueError),
    ("method", "advanced", ValueError),
])
def test_calibration_validation(name, value, error):
    with pytest.raises(error, match=name):
        calibrate_tree_sigma(**(GOOD | {name: value}))


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda: tree_epsilon(0.0, 1e-5, 10), ValueError, "sigma"),
    (lambda: tree_epsilon(-1.0, 1e-5, 10), ValueError, "sigma"),
    (lambda: tree_epsilon(float("nan"), 1e-5, 10), ValueError, "sigma"),
    (lambda: tree_epsilon(1.0, 0.0, 10), ValueError, "delta"),
    (lambda: tree_epsilon(1.0, 1.5, 10), ValueError, "delta"),
    (lambda: tree_epsilon(1.0, 1e-5, 0), ValueError, "horizon"),
    (lambda: PrivacyLedger(neighboring="replace-special"), ValueError, "neighboring"),
    (lambda: PrivacyLedger().add_gaussian(float("nan")), ValueError, "gaussian value"),  # dp_accounting: eps 0
    (lambda: PrivacyLedger().add_gaussian(0.0), ValueError, "gaussian value"),
    (lambda: PrivacyLedger().add_gaussian(math.inf), ValueError, "gaussian value"),
    (lambda: PrivacyLedger().add_laplace(-2.0), ValueError, "laplace value"),
    (lambda: PrivacyLedger().add_pure(0.0, mechanism="m"), ValueError, "pure value"),
    (lambda: PrivacyLedger().add_zcdp(float("nan"), mechanism="m", bound="b"), ValueError, "zcdp value"),
    (lambda: PrivacyLedger().add_gaussian(1.0, count=0), ValueError, "count"),
    (lambda: PrivacyLedger().add_gaussian(1.0, count=2.0), TypeError, "count"),
    (lambda: PrivacyLedger().add_tree(gaussian_tree(1.0, 8), 0.0), ValueError, "sensitivity"),
    (lambda: PrivacyLedger().add_tree(gaussian_tree(1.0, 8), float("nan")), ValueError, "sensitivity"),
    (lambda: PrivacyLedger().add_tree("tree", 1.0), TypeError, "tree"),
    (lambda: PrivacyLedger().add_gaussian(1.0).epsilon(1.5), ValueError, "delta"),  # dp_accounting: eps 0
    (lambda: PrivacyLedger().add_gaussian(1.0).epsilon(0.0), ValueError, "delta must be > 0"),
    (lambda: PrivacyLedger().add_gaussian(1.0).epsilon(float("nan")), ValueError, "delta"),
    (lambda: PrivacyLedger().add_gaussian(1.0).epsilon(1e-5, "prv"), ValueError, "method"),
    (lambda: PrivacyLedger().add_laplace(1.0).epsilon(0.0, "rdp"), ValueError, "delta must be > 0"),
    (lambda: PrivacyEvent("gaussian", 1.0, 1, ""), TypeError, "mechanism"),
    (lambda: PrivacyEvent("exponential", 1.0, 1, "m"), ValueError, "kind"),
])
def test_ledger_validation(call, error, match):
    with pytest.raises(error, match=match):
        call()
