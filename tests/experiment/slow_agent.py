"""A test agent whose every round takes at least ``pause`` seconds: a job long enough for its round progress to be
reported while it runs, whatever the machine's speed. Used as ``AgentSpec(SlowAgent, params={"pause": 0.002})``
or ``type = "tests.experiment.slow_agent:SlowAgent"``."""

from __future__ import annotations

import time

from dpbandit.agents.baselines import UniformRandom


class SlowAgent(UniformRandom):
    """Uniform random play, ``pause`` seconds per round."""

    name = "slow"

    def __init__(self, constants, pause: float = 0.002):
        self.pause = float(pause)
        super().__init__(constants)

    def act(self, observation):
        time.sleep(self.pause)
        return super().act(observation)
