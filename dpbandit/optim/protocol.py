"""The streaming-learner protocol shared by every online learner, private or not.

A streaming learner keeps an iterate in a convex set and is driven one sample at a time::

    learner.reset(rng)                 # rng: the job's "privacy" stream (or None for a learner without noise)
    for t in 1..T:
        theta_t = learner.predict()    # (d,) the released iterate, used on sample t (read-only view)
        learner.update(x_t, y_t)       # the sample z_t = (features (d,), response); the learner's loss decides
                                       # what it uses (gradients at its own iterates, the whole sample, ...)

``predict()`` is the learner's *release*: a private learner must only publish it through its mechanisms, and its
ledger/report states the guarantee of the whole release stream (``guarantee``: "DP", "window-DP", "LDP" or "none";
a private learner used inside a bandit agent becomes part of a JDP argument made by the agent).

Learners know nothing about bandits (no arms, no actions); ``dpbandit.agents`` adapts them. A sample of all zeros,
``update(zeros(d), 0.0)``, is a legal "synthetic" sample (DP-HDB feeds it to the arms that were not played).

To implement a learner: subclass :class:`StreamingLearner`, validate hyperparameters in ``__init__`` (call
``super().__init__``), implement ``_reset_state``, ``predict`` and ``update``; draw every random number from
``self.rng``; record every noisy release in ``self.ledger`` (a :class:`~dpbandit.privacy.ledger.PrivacyLedger`)
and return a :class:`~dpbandit.privacy.report.PrivacyReport` from ``privacy_report()``.
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar

import numpy as np

from dpbandit.optim.losses import Loss, make_loss
from dpbandit.validation import check_generator, check_int

__all__ = ["StreamingLearner"]


class StreamingLearner(abc.ABC):
    """Base class of online learners over a convex set in R^d.

    Parameters
    ----------
    dim: int
        Dimension d of the iterate.
    horizon: int
        Number of samples T the learner will see (calibrations and trees are sized by it); more raise ValueError.
    loss: str or Loss
        Per-sample loss (``"squared"``, ``"logistic"`` or a :class:`~dpbandit.optim.losses.Loss`).
    rng: numpy.random.Generator or None
        Source of all the learner's randomness (privacy noise); required by learners that draw noise.
    """

    name: ClassVar[str] = "learner"
    #: "DP", "window-DP", "LDP" or "none" (never mixed in one number).
    guarantee: ClassVar[str] = "none"
    #: Whether the learner draws random numbers (then ``rng`` is required).
    needs_rng: ClassVar[bool] = False

    def __init__(self, dim: int, horizon: int, loss: str | Loss = "squared", rng: np.random.Generator | None = None):
        self.dim = check_int("dim", dim, low=1)
        self.horizon = check_int("horizon", horizon, low=1)
        self.loss = make_loss(loss)
        self.rng: np.random.Generator | None = None
        self.t = 0
        self.ledger = None
        self.reset(rng)

    def reset(self, rng: np.random.Generator | None = None) -> None:
        """Restart from the initial iterate with fresh randomness ``rng``."""
        if rng is not None:
            check_generator(rng, "rng")
        elif self.needs_rng:
            raise ValueError(f"{type(self).__name__} draws privacy noise: pass rng=<numpy.random.Generator>")
        self.rng = rng
        self.t = 0
        self._reset_state()

    def _accept(self, x: Any, y: Any) -> tuple[np.ndarray, float]:
        """Validate one sample and count it (raises after ``horizon`` samples)."""
        x = np.asarray(x, dtype=float)
        if x.shape != (self.dim,):
            raise ValueError(f"x must have shape ({self.dim},), got {x.shape}")
        if self.t >= self.horizon:
            raise ValueError(f"{type(self).__name__} was built for horizon={self.horizon} samples; reset it first")
        self.t += 1
        return x, float(y)

    @abc.abstractmethod
    def _reset_state(self) -> None:
        """Set the iterate and all internal state to their initial values."""

    @abc.abstractmethod
    def predict(self) -> np.ndarray:
        """The current (released) iterate, shape (d,)."""

    @abc.abstractmethod
    def update(self, x: np.ndarray, y: float) -> None:
        """Learn from one sample: features ``x`` of shape (d,), response ``y``."""

    def privacy_report(self):
        """The learner's :class:`~dpbandit.privacy.report.PrivacyReport`, or None if it is not private."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(dim={self.dim}, horizon={self.horizon}, loss={self.loss!r})"
