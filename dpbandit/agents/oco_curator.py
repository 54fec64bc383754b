"""The curator of :class:`~dpbandit.agents.oco_adapter.OCOAgent` and its release (``spec/private-oco-learners.md``
§7): the K streaming learners, one per arm, fed the served users' samples (bandit feedback: the played arm's learner
gets the user's sample, every other learner the synthetic zero sample; full information: every arm's learner its
realised reward), and the billboard they publish after every user. The privacy of what they publish is derived in
:mod:`dpbandit.agents.oco_adapter`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpbandit.agents.private import Curator
from dpbandit.optim.protocol import StreamingLearner
from dpbandit.privacy.report import PrivacyReport

__all__ = ["LearnersCurator", "OCORelease"]


@dataclass(frozen=True)
class OCORelease:
    """The billboard: the learners' released iterates ``thetas`` (K, d), read-only, and the public exploration
    probability."""

    thetas: np.ndarray
    exploration: float


class LearnersCurator(Curator):
    """Owns the K learners; sees each served user's data; publishes only the learners' releases."""

    def __init__(self, learners: list[StreamingLearner], feedback: str, exploration: float,
                 report: PrivacyReport) -> None:
        self.learners = learners
        self.feedback = feedback
        self.exploration = exploration
        self._report = report
        self._zero = np.zeros(learners[0].dim)
        self._publish()

    def _publish(self) -> None:
        thetas = np.stack([learner.predict() for learner in self.learners])
        thetas.flags.writeable = False
        self._release = OCORelease(thetas, self.exploration)

    def observe(self, observation: np.ndarray, arm: int, reward: float) -> None:
        """Bandit feedback: the played arm's learner gets ``(x_{t,a}, r_t)``, the others the zero sample."""
        for a, learner in enumerate(self.learners):
            if a == arm:
                learner.update(observation[a], reward)
            else:
                learner.update(self._zero, 0.0)
        self._publish()

    def observe_all(self, observation: np.ndarray, rewards: np.ndarray) -> None:
        """Full information: every arm's learner gets ``(x_{t,a}, r_{t,a})``."""
        for a, learner in enumerate(self.learners):
            learner.update(observation[a], float(rewards[a]))
        self._publish()

    def release(self) -> OCORelease:
        return self._release

    def privacy_report(self) -> PrivacyReport:
        return self._report
