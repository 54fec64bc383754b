"""Statistical sanity of the baselines: learning agents beat uniform random play by a clear margin."""

import numpy as np

from dpbandit.experiment.config import AgentSpec, ExperimentConfig
from dpbandit.experiment.runner import run_experiment


def _final_regret(env_id, env_kwargs, agents, seeds):
    config = ExperimentConfig(env_id, env_kwargs, agents, seeds=seeds, n_jobs=2, checkpoints=10)
    summary = run_experiment(config, out=False, progress=False).summary.set_index("agent")
    return summary["final_regret_mean"]


def test_linucb_regret_below_a_quarter_of_random():
    regret = _final_regret(
        "dpbandit/GLMBandit-v0",
        {"horizon": 5000, "dim": 20, "n_arms": 5, "link": "identity", "theta": "dense"},
        (AgentSpec("random"), AgentSpec("linucb")),
        seeds=3,
    )
    assert regret["linucb"] < 0.25 * regret["random"], regret.to_dict()


def test_lasso_bandit_beats_random_on_sparse_high_dimensional_env():
    regret = _final_regret(
        "dpbandit/SparseLinear-v0",
        {"horizon": 2000, "dim": 100, "sparsity": 5},
        (AgentSpec("random"), AgentSpec("lasso")),
        seeds=3,
    )
    assert regret["lasso"] < 0.5 * regret["random"], regret.to_dict()
    assert np.isfinite(regret).all()
