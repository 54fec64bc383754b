"""Streaming learners, private and not (no bandit knowledge here): the learner protocol, losses, linear
minimisation oracles, private online Frank-Wolfe and the private online-convex-optimisation learners."""

from dpbandit.optim.cocol import WDPCOCOL, l1_ball_lloo, simplex_lloo
from dpbandit.optim.ftal import PFTAL, WDPCOCOP
from dpbandit.optim.gradient_descent import GIGA, IGD, RidgeLoss
from dpbandit.optim.pocp import PGIGA, PIGD, POCP
from dpbandit.optim.projections import Domain, LpBall, make_domain, project_lp_ball
from dpbandit.optim.quadratic_ftl import PQFTL
from dpbandit.optim.frank_wolfe import DPTOFW, OnlineFrankWolfe, PublishedSettingWarning, calibrate_gg
from dpbandit.optim.losses import LOSSES, LogisticLoss, Loss, SquaredLoss, make_loss
from dpbandit.optim.parameter_free import (
    ConjugatePriorPotential,
    LDPBlackBoxReduction,
    LDPCoordinateWise,
    conjugate_prior_prediction,
)
from dpbandit.optim.pofw import DPPOFW, DPPOFWBatch, POFWCalibration, glm_lipschitz
from dpbandit.optim.registry import LEARNERS, make_learner
from dpbandit.optim.oracles import clamp_glm_derivative, clip_dual, lp_ball_lmo, lp_ball_projection, simplex_lmo
from dpbandit.optim.protocol import StreamingLearner
from dpbandit.optim.sco_baselines import LocalMD, NoisySFW, NoisySGD

__all__ = [
    "WDPCOCOL",
    "l1_ball_lloo",
    "simplex_lloo",
    "PFTAL",
    "WDPCOCOP",
    "GIGA",
    "IGD",
    "PGIGA",
    "PIGD",
    "POCP",
    "RidgeLoss",
    "Domain",
    "LpBall",
    "make_domain",
    "project_lp_ball",
    "PQFTL",
    "ConjugatePriorPotential",
    "LDPBlackBoxReduction",
    "LDPCoordinateWise",
    "LEARNERS",
    "conjugate_prior_prediction",
    "make_learner",
    "DPPOFW",
    "DPPOFWBatch",
    "POFWCalibration",
    "glm_lipschitz",
    "DPTOFW",
    "LOSSES",
    "LocalMD",
    "LogisticLoss",
    "Loss",
    "NoisySFW",
    "NoisySGD",
    "OnlineFrankWolfe",
    "PublishedSettingWarning",
    "SquaredLoss",
    "StreamingLearner",
    "calibrate_gg",
    "clamp_glm_derivative",
    "clip_dual",
    "lp_ball_lmo",
    "lp_ball_projection",
    "make_loss",
    "simplex_lmo",
]
