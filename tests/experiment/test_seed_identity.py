"""Issue 25's acceptance: every agent that plays blocks or has a batched form gives each seed the same rows alone (one
job per seed, batch off), in lockstep units, with two worker processes, on Dask, and after a killed run is resumed.

The agents are taken from the registry (:func:`~dpbandit.agents.base.plays_blocks`,
:func:`~dpbandit.agents.batched.has_batched_form`), so an agent that gains a block path joins this test."""

from __future__ import annotations

import pandas as pd
import pytest

from dpbandit.agents import AGENTS
from dpbandit.agents.base import plays_blocks
from dpbandit.agents.batched import has_batched_form
from dpbandit.experiment.config import AgentSpec, ExperimentConfig
from dpbandit.experiment.runner import run_experiment

#: Parameters that make a run short or cross the agents' releases within T = 300 rounds (every agent's defaults
#: otherwise).
PARAMS = {"dp_hdb": {"epsilon": 2.0, "warmup": 2}, "dp_ucb": {"epsilon": 4.0}, "fliphat": {"epsilon": 2.0},
          "episodic_ridge": {"epsilon": 4.0}, "episodic_glm": {"epsilon": 4.0}, "egreedy": {"epsilon": 0.2}}


def _agents() -> tuple[AgentSpec, ...]:
    names = sorted(n for n, cls in AGENTS.items() if plays_blocks(cls) or has_batched_form(cls))
    assert {"dp_hdb", "dp_ucb", "fliphat", "episodic_ridge", "episodic_glm", "linucb", "greedy"} <= set(names)
    specs = [AgentSpec(n, params=PARAMS.get(n, {})) for n in names]
    specs.append(AgentSpec("fliphat", label="fliphat_noise_off", params={"epsilon": float("inf")}))
    return tuple(specs)


def test_every_block_or_batched_agent_is_the_same_alone_in_lockstep_in_parallel_on_dask_and_resumed(
        tmp_path, monkeypatch):
    pytest.importorskip("dask.distributed")
    config = ExperimentConfig(env_id="dpbandit/SparseLogistic-v0", env_kwargs={"horizon": 300, "dim": 10},
                              agents=_agents(), seeds=5, checkpoints=30, name="ids")
    reference = run_experiment(config.replace(batch="off"), out=False, progress=False).results
    assert reference["agent"].nunique() == len(config.agents)
    for variant in (config, config.replace(n_jobs=2)):  # lockstep units in this process, and in two workers
        pd.testing.assert_frame_equal(run_experiment(variant, out=False, progress=False).results, reference,
                                      check_exact=True)
    dask = run_experiment(config.replace(n_jobs=2), out=tmp_path / "dask", progress=False, backend="dask")
    pd.testing.assert_frame_equal(dask.results, reference, check_exact=True)

    from dpbandit.experiment import batch

    real, calls = batch.simulate_batch_agents, []

    def dying(*args, **kwargs):
        calls.append(args[1].label)
        if len(calls) == 3:
            raise KeyboardInterrupt  # killed while the third lockstep unit runs
        return real(*args, **kwargs)

    monkeypatch.setattr(batch, "simulate_batch_agents", dying)
    with pytest.raises(KeyboardInterrupt):
        run_experiment(config, out=tmp_path / "killed", progress=False)
    monkeypatch.setattr(batch, "simulate_batch_agents", real)
    resumed = run_experiment(config, out=tmp_path / "killed", progress=False)
    assert resumed.resumed_jobs > 0
    pd.testing.assert_frame_equal(resumed.results, reference, check_exact=True)
