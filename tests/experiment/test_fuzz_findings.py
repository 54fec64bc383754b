"""Failures the command-line fuzz test found beyond its fixed seed (issue 24), each pinned: sizes and times refused
before any work, extreme epsilons calibrated or refused without a traceback, outputs checked before work."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from dpbandit.agents.dp_hdb import warmup_length
from dpbandit.experiment.cli import main
from dpbandit.offline import LoggedData
from dpbandit.privacy.gaussian_calibration import _gaussian_delta, gaussian_sigma_analytic
from tests.one_line import one_line_error


@pytest.mark.parametrize("epsilon", [1e9, 1e12, 1e15])
def test_the_analytic_gaussian_is_finite_and_tight_at_huge_epsilons(epsilon):
    """Before: OverflowError (a traceback) from the privacy curve at epsilon = 1e12. For large epsilon the smallest
    sigma tends to 1 / sqrt(2 epsilon) (delta's dependence is lower order); the curve at it equals delta."""
    sigma = gaussian_sigma_analytic(epsilon, 1e-5, 1.0)
    assert 0.99 / math.sqrt(2 * epsilon) < sigma < 1.2 / math.sqrt(2 * epsilon)
    assert _gaussian_delta(1.0 / sigma, epsilon) <= 1e-5 < _gaussian_delta(1.0 / (sigma * 0.99), epsilon)


def test_the_privacy_curve_keeps_its_known_answers():
    assert gaussian_sigma_analytic(1.0, 1e-5, 1.0) == pytest.approx(3.7306, abs=1e-4)  # Balle & Wang's example
    assert _gaussian_delta(1.0, 0.0) == pytest.approx(0.3829249225480262, rel=1e-12)  # 2 Phi(1/2) - 1


def test_dp_hdb_warm_up_at_a_tiny_epsilon_is_the_cap():
    """Before: ZeroDivisionError (epsilon**2 underflows to 0)."""
    assert warmup_length(50, 10_000, 2, 1e-300) == 5000
    assert warmup_length(50, 10_000, 2, 1.0) == 120 and warmup_length(50, 10_000, 2, math.inf) == 1


def test_reproduce_fliphat_refuses_absurd_sizes_before_any_work(tmp_path, capsys):
    """Before: T = 1e12 ran on with no estimate; T = 1e20 failed in numpy after the work had started."""
    start = time.monotonic()
    for extra, needle in ((["--horizon", "1000000000000"], "memory"),
                          (["--horizon", "99999999999999999999"], "memory"),
                          (["--seeds", "99999999999999999999"], "seeds must be an integer in [1, 100000]"),
                          (["--horizon", "200000", "--seeds", "2000"], "more than the 7.0 days")):
        assert main(["reproduce", "fliphat", "--out", str(tmp_path), "--no-progress", *extra]) == 2
        one_line_error(capsys.readouterr().err, needle)
    assert time.monotonic() - start < 120 and not any(tmp_path.iterdir())


def test_replay_checks_its_output_and_seeds_before_any_work(tmp_path, capsys):
    rng = np.random.default_rng(0)
    log = LoggedData(context=rng.normal(size=(50, 3)), action=rng.integers(0, 2, 50), reward=rng.random(50),
                     pscore=np.full(50, 0.5), n_actions=2).write(tmp_path / "log.csv")
    folder = tmp_path / "a-folder"
    folder.mkdir()
    assert main(["replay", str(log), "--agent", "random", "--out", str(folder)]) == 2
    one_line_error(capsys.readouterr().err, "is a folder, not a file")  # before replaying: no estimator warning came first
    assert main(["replay", str(log), "--agent", "random", "--seeds", "1000000000000"]) == 2
    one_line_error(capsys.readouterr().err, "--seeds must be in [1, 1000]")


@pytest.mark.parametrize("command", [["run"], ["frontier", "--quick"], ["oco", "--quick"],
                                     ["reproduce", "table-5.1", "--quick"], ["reproduce", "figure-5.1", "--quick"]])
def test_an_absurd_number_of_parallel_jobs_is_refused_before_any_work(command, tmp_path, capsys):
    """Before: ``--n-jobs 1000000000000`` was accepted (a local Dask cluster would have started that many workers)."""
    assert main([*command, "--n-jobs", "1000000000000", "--out", str(tmp_path)]) == 2
    one_line_error(capsys.readouterr().err, "n_jobs", "[1, 1024]")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", [["run"], ["frontier"], ["oco"], ["reproduce", "table-5.1"], ["reproduce", "figure-5.1"],
                                     ["reproduce", "fliphat"]])
def test_every_command_whose_refusal_names_allow_long_accepts_it(command, capsys):
    """Before: frontier and figure-5.1 refused a run of more than a week with "pass --allow-long", a flag they did
    not have; table-5.1 had neither an estimate nor the flag."""
    with pytest.raises(SystemExit) as exit_:
        main([*command, "--help"])
    assert exit_.value.code == 0 and "--allow-long" in capsys.readouterr().out
