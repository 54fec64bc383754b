"""Paired statistics: known answers, coverage, and the verdict wording."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from dpbandit.experiment.stats import paired_difference, ratio_interval, verdict


def test_paired_difference_known_answer():
    a = np.array([10.0, 12.0, 11.0, 13.0])
    b = np.array([9.0, 10.0, 10.0, 10.0])
    d = a - b  # 1, 2, 1, 3: mean 1.75, sd 0.9574
    iv = paired_difference(a, b)
    half = sps.t.ppf(0.975, 3) * d.std(ddof=1) / 2
    assert iv.estimate == pytest.approx(1.75)
    assert (iv.low, iv.high) == pytest.approx((1.75 - half, 1.75 + half))
    assert iv.n == 4 and iv.excludes(0.0)


def test_paired_is_tighter_than_independent_with_common_noise():
    rng = np.random.default_rng(1)
    common = rng.normal(0, 10, 20)  # the seed's users: shared by both agents
    a, b = 100 + common + rng.normal(0, 0.5, 20), 101 + common + rng.normal(0, 0.5, 20)
    iv = paired_difference(b, a)
    assert iv.low > 0  # detected although the independent spreads (sd 10) dwarf the difference of 1


def test_series_are_paired_on_common_seeds():
    a = pd.Series([1.0, 2.0, 3.0], index=[0, 1, 2])
    b = pd.Series([0.0, 1.0, 5.0], index=[1, 2, 7])  # seeds 1, 2 in common
    iv = paired_difference(a, b)
    assert iv.n == 2 and iv.estimate == pytest.approx(2.0)  # (2-0 + 3-1)/2


def test_one_seed_has_no_interval():
    iv = paired_difference([2.0], [1.0])
    assert not iv.determined and not iv.excludes(0.0) and "no interval" in str(iv)


def test_bad_inputs_name_the_problem():
    with pytest.raises(ValueError, match="equal lengths"):
        paired_difference([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="share no seed"):
        paired_difference(pd.Series([1.0], index=[0]), pd.Series([1.0], index=[1]))
    with pytest.raises(ValueError, match="level"):
        paired_difference([1.0, 2.0], [1.0, 1.0], level=1.5)
    with pytest.raises(ValueError, match="nan"):
        paired_difference([1.0, math.nan], [1.0, 1.0])


def test_ratio_interval_covers_the_true_ratio():
    """Coverage of the paired bootstrap over 200 simulated experiments of 20 seeds: close to the nominal 95%."""
    rng = np.random.default_rng(7)
    hits = 0
    for rep in range(200):
        den = rng.gamma(20.0, 5.0, 20)          # mean 100
        num = 2.0 * den * rng.gamma(50.0, 1 / 50.0, 20)  # true ratio of means 2
        iv = ratio_interval(num, den, n_boot=2000, seed=rep)
        hits += iv.low <= 2.0 <= iv.high
    assert 0.88 <= hits / 200 <= 0.99


def test_ratio_interval_is_reproducible_and_validated():
    num, den = [10.0, 12.0, 9.0], [5.0, 5.5, 4.0]
    assert ratio_interval(num, den, seed=3) == ratio_interval(num, den, seed=3)
    assert ratio_interval(num, den).estimate == pytest.approx(31 / 14.5)
    with pytest.raises(ValueError, match="positive mean"):
        ratio_interval(num, [0.0, 0.0, 0.0])


def test_verdict_wording():
    random = np.array([1000.0, 1010.0, 990.0, 1005.0])
    good = random - np.array([300.0, 310.0, 290.0, 305.0])
    assert verdict("agent", "random", good, random).startswith("agent beats random;")
    assert verdict("random", "agent", random, good).startswith("agent beats random;")
    noisy = random + np.array([30.0, -30.0, 25.0, -20.0])
    line = verdict("agent", "random", noisy, random)
    assert line.startswith("agent vs random: not distinguishable (4 seeds)")
    assert "undetermined" in verdict("agent", "random", [1.0], [2.0])
