"""dpbandit's estimators against Open Bandit Pipeline 0.5.7's on two small logs (issue 26, item 8).

``data/obp_reference.json`` holds OBP's estimates for the logs, reward model and action distributions of
``data/obp_reference_inputs.npz``; ``data/make_obp_reference.py`` says exactly how both were made."""

import importlib.util
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from dpbandit.offline.estimators import ESTIMATORS, estimate
from dpbandit.offline.reward_model import cross_fitted_rewards

DATA = Path(__file__).parent / "data"
REFERENCE = json.loads((DATA / "obp_reference.json").read_text())
INPUTS = np.load(DATA / "obp_reference_inputs.npz")
POLICIES = ("uniform", "fixed_arm", "linucb")


def _maker():
    spec = importlib.util.spec_from_file_location("make_obp_reference", DATA / "make_obp_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _inputs(log):
    return {key.split("/", 1)[1]: INPUTS[key] for key in INPUTS.files if key.startswith(log + "/")}


def test_the_fixture_was_made_by_obp_0_5_7():
    assert REFERENCE["obp_version"] == "0.5.7" and set(REFERENCE["logs"]) == {"synthetic", "rare"}


@pytest.mark.parametrize("log", ["synthetic", "rare"])
def test_every_estimator_equals_obps_on_the_same_inputs(log):
    g = _inputs(log)
    for policy in POLICIES:
        ref = REFERENCE["logs"][log][policy]
        assert ref["truth"] == pytest.approx((g[f"pi/{policy}"] * g["truth"]).sum(axis=1).mean(), abs=1e-15)
        for name in ESTIMATORS:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                ours = estimate(name, g["reward"], g["action"], g["pscore"], g[f"pi/{policy}"], g["q"],
                                clip=REFERENCE["clip"], interval="t")
            assert ours.value == pytest.approx(ref[name]["value"], rel=1e-12, abs=1e-15), (log, policy, name)


def test_dpbandit_rebuilds_the_fixtures_inputs():
    """The logs, the cross-fitted ridge model and LinUCB's replayed distributions are what dpbandit computes now,
    so the OBP numbers speak for the current code path (log_policy, cross_fitted_rewards, evaluate_offline)."""
    maker = _maker()
    for log, (data, options) in maker.logs().items():
        g = _inputs(log)
        assert np.array_equal(data.context, g["context"]) and np.array_equal(data.reward, g["reward"])
        assert np.array_equal(data.action, g["action"]) and np.array_equal(data.pscore, g["pscore"])
        assert np.allclose(cross_fitted_rewards(data), g["q"], rtol=0, atol=1e-10)
        for policy, pi in maker.policies(data, options).items():
            assert np.allclose(pi, g[f"pi/{policy}"], rtol=0, atol=1e-12), (log, policy)
