"""Streaming learners, private and not (no bandit knowledge here): the learner protocol, losses, linear
minimisation oracles, private online Frank-Wolfe and the private online-convex-optimisation learners."""

from dpbandit.optim.losses import LOSSES, LogisticLoss, Loss, SquaredLoss, make_loss
from dpbandit.optim.protocol import StreamingLearner

__all__ = ["LOSSES", "LogisticLoss", "Loss", "SquaredLoss", "make_loss", "StreamingLearner"]
