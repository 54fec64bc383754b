"""Parallel composition in the ledger (dpbandit/privacy/report.py PrivacyEvent.parallel): ``count`` releases on
disjoint users are charged as one release by every accounting, never summed; sequential events still are."""

from __future__ import annotations

import json
import math

import pytest

from dpbandit.privacy.calibrate import gaussian_epsilon, zcdp_epsilon, zcdp_rho_for
from dpbandit.privacy.ledger import PrivacyLedger
from dpbandit.privacy.report import PrivacyEvent, PrivacyReport


def test_parallel_zcdp_event_known_answers():
    # rho = 1/32, delta = 1e-3 -> 0.68800 (CKS, OpenDP's value), whatever the number of parallel releases
    for count in (1, 17, 1000):
        ledger = PrivacyLedger().add_zcdp(1 / 32, count, mechanism="episode fit", bound="test", parallel=True)
        assert ledger.rho == pytest.approx(1 / 32)
        assert ledger.epsilon(1e-3, "zcdp") == pytest.approx(0.68800, abs=5e-5)
        assert ledger.epsilon(1e-3, "rdp") == pytest.approx(ledger.epsilon(1e-3, "zcdp"), abs=2e-3)
    # the calibration round trip of an episodic agent: rho*(1, 1e-5) = 0.03056 spent by every one of 17 releases
    rho = zcdp_rho_for(1.0, 1e-5)
    assert rho == pytest.approx(0.03056, abs=1e-5)
    ledger = PrivacyLedger().add_zcdp(rho, 17, mechanism="episode fit", bound="test", parallel=True)
    assert ledger.epsilon(1e-5, "zcdp") == pytest.approx(1.0, abs=1e-6)


def test_parallel_events_are_not_summed_but_sequential_ones_are():
    par = PrivacyLedger().add_zcdp(0.05, 10, mechanism="m", bound="b", parallel=True)
    seq = PrivacyLedger().add_zcdp(0.05, 10, mechanism="m", bound="b")
    assert par.rho == pytest.approx(0.05) and seq.rho == pytest.approx(0.5)
    for method in ("zcdp", "rdp", "basic"):
        assert par.epsilon(1e-5, method) < 0.5 * seq.epsilon(1e-5, method)
    assert par.epsilon(1e-5, "zcdp") == pytest.approx(zcdp_epsilon(0.05, 1e-5), rel=1e-9)
    assert seq.epsilon(1e-5, "zcdp") == pytest.approx(zcdp_epsilon(0.5, 1e-5), rel=1e-9)
    # basic: one release per user, the whole delta to it
    assert par.epsilon(1e-5, "basic") == pytest.approx(zcdp_epsilon(0.05, 1e-5), rel=1e-9)


def test_parallel_gaussian_events_of_one_episode_compose_sequentially_inside_it():
    # a Gram-matrix release (z1) and a moment-vector release (z2) per episode, 12 episodes: one Gaussian of
    # mu^2 = 1/z1^2 + 1/z2^2 (the episode's two mechanisms compose; the episodes do not)
    z1, z2, delta = 4.0, 5.0, 1e-4
    ledger = (PrivacyLedger().add_gaussian(z1, 12, mechanism="G", parallel=True)
              .add_gaussian(z2, 12, mechanism="b", parallel=True))
    mu = math.sqrt(1 / z1**2 + 1 / z2**2)
    assert ledger.epsilon(delta, "exact") == pytest.approx(gaussian_epsilon(1 / mu, delta, 1.0), rel=1e-9)
    assert ledger.rho == pytest.approx(mu**2 / 2)
    assert ledger.epsilon(delta, "pld") == pytest.approx(ledger.epsilon(delta, "exact"), abs=2e-2)
    sequential = PrivacyLedger().add_gaussian(z1, 12, mechanism="G").add_gaussian(z2, 12, mechanism="b")
    assert sequential.epsilon(delta, "exact") > 2.5 * ledger.epsilon(delta, "exact")


def test_report_states_parallel_composition_and_round_trips():
    ledger = PrivacyLedger().add_gaussian(4.0, 9, mechanism="G", parallel=True)
    report = ledger.report(1e-4, guarantee="JDP", sensitivity_assumption="||x||_2 <= 1")
    assert "parallel composition over 9 releases" in report.composition
    assert report.rho == pytest.approx(1 / 32)
    again = PrivacyReport.from_json(report.to_json())
    assert again == report and again.events[0]["parallel"] is True
    rebuilt = PrivacyLedger.from_dict(json.loads(json.dumps(ledger.to_dict())))
    assert rebuilt.events[0].parallel and rebuilt.epsilon(1e-4) == ledger.epsilon(1e-4)
    assert "parallel" not in PrivacyLedger().add_gaussian(4.0, 9, mechanism="G").report(
        1e-4, guarantee="DP", sensitivity_assumption="").composition


def test_parallel_flag_is_validated():
    with pytest.raises(TypeError, match="parallel must be a bool"):
        PrivacyEvent("zcdp", 0.1, 3, "m", parallel=1)
    assert PrivacyEvent("zcdp", 0.1, 3, "m", parallel=True).per_user == 1
    assert PrivacyEvent("zcdp", 0.1, 3, "m").per_user == 3
