"""The streaming-learner registry: names, validated construction, problem constants, noise-off parameters."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbandit.optim.losses import SquaredLoss
from dpbandit.optim.projections import L1Ball, LpBall
from dpbandit.optim.protocol import StreamingLearner
from dpbandit.optim.registry import (
    LEARNERS,
    learner_class,
    learner_hyperparameters,
    make_learner,
    noise_off_params,
    requires_strong_convexity,
    with_known_constants,
)
from dpbandit.seeding import stream

#: What every learner needs beyond the problem constants in these tests.
EXTRA = {"wdp-cocop": {"window": 16}, "wdp-cocol": {"window": 16}}
EXPECTED = {"pigd", "pgiga", "igd", "giga", "pqftl", "pftal", "wdp-cocop", "wdp-cocol", "ldp-reduction",
            "ldp-coordinatewise", "dp-tofw", "online-fw", "dp-pofw"}


def build(name: str, dim: int = 4, horizon: int = 20, **params):
    constants = dict(loss=SquaredLoss(0.5), mu=0.1, x_bound=1.0, y_bound=1.0, radius=1.0)
    params = with_known_constants(name, {**EXTRA.get(name, {}), **params}, **constants)
    return make_learner(name, dim, horizon, rng=stream(0, "privacy"), **params)


def test_registry_lists_every_learner_of_issues_5_and_6():
    assert set(LEARNERS) == EXPECTED
    for name, cls in LEARNERS.items():
        assert issubclass(cls, StreamingLearner) and cls.name == name
        assert learner_class(name) is cls
        assert {"loss", "rng"} <= set(learner_hyperparameters(name))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_learner_builds_runs_and_reports_its_guarantee(name):
    learner = build(name)
    rng = np.random.default_rng(1)
    for _ in range(20):
        w = learner.predict()
        assert w.shape == (4,) and np.all(np.isfinite(w))
        x = rng.normal(size=4)
        learner.update(x / np.linalg.norm(x), float(rng.uniform(-1, 1)))
    report = learner.privacy_report()
    if report is not None:
        assert report.guarantee in ("DP", "window-DP", "LDP", "none")
        assert report.guarantee == learner.guarantee or report.guarantee == "none"


@pytest.mark.parametrize("name", [n for n in sorted(EXPECTED) if noise_off_params(n)])
def test_noise_off_parameters_remove_the_guarantee(name):
    report = build(name, **noise_off_params(name)).privacy_report()
    assert report is None or (report.guarantee == "none" and report.epsilon == math.inf)


def test_noise_off_parameters_and_strong_convexity():
    assert noise_off_params("pftal") == {"epsilon": math.inf}
    assert noise_off_params("ldp-coordinatewise") == {"tau": math.inf}
    assert noise_off_params("igd") == {}
    assert requires_strong_convexity("pigd") and requires_strong_convexity("wdp-cocop")
    assert not requires_strong_convexity("ldp-reduction")


def test_known_constants_fill_only_what_the_learner_takes_and_params_win():
    filled = with_known_constants("pftal", {"radius": 3.0}, radius=1.0, x_bound=2.0, unrelated=5)
    assert filled == {"radius": 3.0, "x_bound": 2.0}
    assert with_known_constants("ldp-coordinatewise", {}, x_bound=2.0, mu=0.5) == {"mu": 0.5}


def test_unknown_names_and_hyperparameters_are_refused_before_any_work():
    with pytest.raises(ValueError, match="unknown learner 'sgd'.*known learners: .*ldp-coordinatewise"):
        make_learner("sgd", 3, 10)
    with pytest.raises(TypeError, match="learner name must be a string"):
        make_learner(3, 3, 10)
    with pytest.raises(TypeError, match="unknown hyperparameter 'eta'.*accepted: .*tau"):
        make_learner("ldp-coordinatewise", 3, 10, eta=0.1)
    with pytest.raises(ValueError, match="dim"):
        make_learner("ldp-coordinatewise", 0, 10)
    with pytest.raises(ValueError, match="horizon"):
        make_learner("ldp-coordinatewise", 3, 0)


@pytest.mark.parametrize("name, params, text", [
    ("ldp-coordinatewise", {"tau": -1.0}, "tau"),
    ("ldp-reduction", {"mu": -1.0}, "mu"),
    ("pftal", {"mu": 0.0}, "mu"),
    ("pftal", {"radius": 0.0}, "radius"),
    ("wdp-cocop", {"window": 0}, "window"),
    ("pigd", {"epsilon": -1.0}, "epsilon"),
])
def test_invalid_values_raise_naming_the_parameter(name, params, text):
    with pytest.raises(ValueError, match=text):
        build(name, **params)


def test_frank_wolfe_learners_declare_their_lp_ball():
    """The OCO runner compares a learner with the best point of ``learner.domain``: the Frank-Wolfe learners play in
    ``{||x||_p <= radius}`` (DP-POFW: the l1 ball), and their iterates stay there."""
    rng = np.random.default_rng(2)
    for name, expected in (("dp-tofw", LpBall(1.5, 0.7)), ("online-fw", LpBall(1.5, 0.7)), ("dp-pofw", L1Ball(0.7))):
        learner = build(name, radius=0.7)
        assert learner.domain == expected
        for _ in range(20):
            x = rng.normal(size=4)
            learner.update(x / np.linalg.norm(x), float(rng.uniform(-1, 1)))
            assert learner.domain.contains(learner.predict(), atol=1e-12)
