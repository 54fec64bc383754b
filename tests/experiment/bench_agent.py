"""Plugin agents for the bench tests (``--agent tests.experiment.bench_agent:Mine``).

``Mine`` is DP episodic ridge under another name: on the same seeds it sees the same users and draws the same noise,
so its finals must equal the shipped reference's ``episodic_ridge`` rows seed by seed (common random numbers).
``NoNoiseOff`` refuses ``epsilon = inf``: the bench must say its noise-off ratio is n/a and why.
"""

import math

from dpbandit.agents.episodic_ridge import EpisodicRidge


class Mine(EpisodicRidge):
    """DP episodic ridge, renamed."""

    name = "mine"


class NoNoiseOff(EpisodicRidge):
    """DP episodic ridge without a noise-off form."""

    name = "no_noise_off"

    def __init__(self, constants, epsilon=1.0, **kwargs):
        if math.isinf(epsilon):
            raise ValueError("epsilon must be finite: this agent has no noise-off form")
        super().__init__(constants, epsilon=epsilon, **kwargs)


class FixedBudget(EpisodicRidge):
    """DP episodic ridge at a fixed epsilon = 2: no epsilon hyperparameter to sweep."""

    name = "fixed_budget"

    def __init__(self, constants, delta=None):
        super().__init__(constants, epsilon=2.0, delta=delta)
