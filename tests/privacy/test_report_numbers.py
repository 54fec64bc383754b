"""Issue 29 item 3: the numbers of a privacy report and of a summary row say exactly what is true. Each epsilon names
the accounting that produced it (rho reproduces it only through the zCDP conversion); an epsilon calibrated to a
request and accounted a hair below it is the request; a run without a guarantee shows no delta."""

from __future__ import annotations

import math

import gymnasium as gym
import pytest

import dpbandit  # noqa: F401  (registers the environments)
from dpbandit import make_agent
from dpbandit.experiment.results import privacy_columns
from dpbandit.privacy.calibrate import zcdp_epsilon
from dpbandit.privacy.ledger import CALIBRATION_TOLERANCE, PrivacyLedger


def test_dp_ucb_reports_the_requested_epsilon_and_how_it_was_accounted():
    env = gym.make("dpbandit/SparseLinear-v0", horizon=1000)
    report = make_agent("dp_ucb", env, epsilon=1.0).privacy_report()
    assert report.epsilon == 1.0
    assert "reported as the request" in report.conversion and "0.99999" in report.conversion
    row = privacy_columns(report.to_dict())
    assert row["epsilon"] == 1.0 and row["epsilon_from"].startswith("analytic Gaussian curve (not rho)")
    assert zcdp_epsilon(row["rho"], row["delta"]) > 1.1  # why the row must say where epsilon came from


def test_zcdp_row_names_the_conversion_that_rho_reproduces():
    env = gym.make("dpbandit/SparseLinear-v0", horizon=1000)
    row = privacy_columns(make_agent("fliphat", env, epsilon=1.0).privacy_report().to_dict())
    assert row["epsilon_from"] == "zCDP rho (CKS20)"
    assert zcdp_epsilon(row["rho"], row["delta"]) == pytest.approx(row["epsilon"], abs=1e-6)


def test_target_rounds_up_within_the_tolerance_only():
    ledger = PrivacyLedger().add_gaussian(3.0)
    accounted = ledger.epsilon(1e-5)
    near = ledger.report(1e-5, guarantee="DP", sensitivity_assumption="x", target_epsilon=accounted * (1 + 1e-9))
    assert near.epsilon == accounted * (1 + 1e-9)
    far = ledger.report(1e-5, guarantee="DP", sensitivity_assumption="x",
                        target_epsilon=accounted * (1 + 10 * CALIBRATION_TOLERANCE))
    assert far.epsilon == accounted and "request" not in far.conversion
    below = ledger.report(1e-5, guarantee="DP", sensitivity_assumption="x", target_epsilon=accounted * (1 - 1e-9))
    assert below.epsilon == accounted  # never rounded down to a request the accounting exceeds


def test_a_noise_off_row_shows_no_delta():
    env = gym.make("dpbandit/SparseLinear-v0", horizon=1000)
    report = make_agent("fliphat", env, epsilon=math.inf).privacy_report()
    assert report.guarantee == "none" and report.delta > 0  # the configured delta, kept in the report
    row = privacy_columns(report.to_dict())
    assert row == {"guarantee": "none", "epsilon": math.inf, "delta": 0.0, "rho": math.inf, "epsilon_from": ""}
