"""A test agent that records its process id and then waits, in its first ``act`` of a job, until a gate file
exists: it keeps a run (or a worker process) busy for exactly as long as a test needs, whatever the machine's load.
Used as ``type = "tests.experiment.gated_agent:GatedAgent"`` with ``gate = "<path>"`` and ``pids = "<folder>"``."""

from __future__ import annotations

import os
import time
from pathlib import Path

from dpbandit.agents.baselines import UniformRandom

HANG_GUARD = 600.0  # seconds: a test that forgets to open the gate does not hang forever


class GatedAgent(UniformRandom):
    """Uniform random play, held at the first round of every job until ``gate`` exists."""

    name = "gated"

    def __init__(self, constants, gate: str = "", pids: str = ""):
        self.gate, self.pids = gate, pids
        super().__init__(constants)

    def _reset_state(self) -> None:
        self._waiting = True

    def act(self, observation):
        if self._waiting and self.gate:
            if self.pids:
                Path(self.pids).mkdir(parents=True, exist_ok=True)
                (Path(self.pids) / str(os.getpid())).touch()
            deadline = time.monotonic() + HANG_GUARD
            while not Path(self.gate).exists() and time.monotonic() < deadline:
                time.sleep(0.02)
        self._waiting = False
        return super().act(observation)
