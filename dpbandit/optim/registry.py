"""The registry of streaming learners: name -> class, and a validated factory.

``LEARNERS`` maps a registry name (used by the OCO runner, the bandit adapter agent ``"oco"``, configs and the CLI)
to a :class:`~dpbandit.optim.protocol.StreamingLearner` class; :func:`make_learner` builds one with validated
hyperparameters::

    learner = make_learner("ldp-coordinatewise", dim=20, horizon=5000, tau=0.5, rng=stream(seed, "privacy"))

Every registered class takes ``(dim, horizon, loss=..., rng=..., **hyperparameters)``; its ``guarantee`` class
attribute states the type of its privacy guarantee ("DP", "window-DP", "LDP" or "none"), and its report is
``learner.privacy_report()``.
"""

from __future__ import annotations

import inspect
import math
from typing import Any

from dpbandit.optim.cocol import WDPCOCOL
from dpbandit.optim.frank_wolfe import DPTOFW, OnlineFrankWolfe
from dpbandit.optim.ftal import PFTAL, WDPCOCOP
from dpbandit.optim.gradient_descent import GIGA, IGD
from dpbandit.optim.pocp import PGIGA, PIGD
from dpbandit.optim.parameter_free import LDPBlackBoxReduction, LDPCoordinateWise
from dpbandit.optim.pofw import DPPOFW
from dpbandit.optim.protocol import StreamingLearner
from dpbandit.optim.quadratic_ftl import PQFTL
from dpbandit.validation import check_int

__all__ = [
    "LEARNERS",
    "learner_class",
    "learner_hyperparameters",
    "make_learner",
    "with_known_constants",
    "requires_strong_convexity",
    "noise_off_params",
]

#: Streaming-learner classes by registry name: Jain–Kothari–Thakurta (PIGD, PGIGA and their non-private originals
#: IGD, GIGA; PQFTL), Thakurta–Smith (PFTAL), Lou & Cheung (WDP-COCOP, WDP-COCOL; window-DP), van der Hoeven
#: (Algorithms 2 and 3; local DP) (``spec/private-oco-learners.md`` §3, §5, §6), and Han et al.'s online Frank-Wolfe
#: over l_p balls: DP-TOFW, its non-private reference OnlineFrankWolfe, and DP-POFW on the l1 ball
#: (``spec/han-frank-wolfe.md`` §2, §5). The Frank-Wolfe learners calibrate to their own geometry (``p``, the l_p
#: ``radius``, ``feature_bound`` on the dual norm of x, gradient clip ``lipschitz``) rather than to ``x_bound``.
LEARNERS: dict[str, type[StreamingLearner]] = {
    cls.name: cls
    for cls in (PIGD, PGIGA, IGD, GIGA, PQFTL, PFTAL, WDPCOCOP, WDPCOCOL, LDPBlackBoxReduction, LDPCoordinateWise,
                DPTOFW, OnlineFrankWolfe, DPPOFW)
}


def learner_class(name: Any) -> type[StreamingLearner]:
    """The class registered as ``name``; ``TypeError``/``ValueError`` (listing the known names) otherwise."""
    if not isinstance(name, str):
        raise TypeError(f"learner name must be a string, one of {sorted(LEARNERS)}, got {name!r}")
    if name not in LEARNERS:
        raise ValueError(f"unknown learner {name!r}; known learners: {', '.join(sorted(LEARNERS))}")
    return LEARNERS[name]


def learner_hyperparameters(name: str) -> tuple[str, ...]:
    """The keyword arguments :func:`make_learner` accepts for learner ``name`` (constructor arguments after
    ``dim`` and ``horizon``, e.g. ``loss``, ``rng`` and the learner's own hyperparameters)."""
    cls = learner_class(name)
    params = list(inspect.signature(cls.__init__).parameters.values())[3:]  # drop self, dim, horizon
    return tuple(p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))


def make_learner(name: str, dim: int, horizon: int, **params: Any) -> StreamingLearner:
    """Build learner ``name`` for iterates in R^dim and ``horizon`` samples.

    Raises ``ValueError`` for an unknown name (listing the known ones) or invalid ``dim``/``horizon``,
    ``TypeError`` for an unknown hyperparameter (listing the accepted ones), and the constructor's
    ``ValueError``/``TypeError`` naming the parameter for an invalid value — all before any sample is seen.
    """
    cls = learner_class(name)
    dim = check_int("dim", dim, low=1)
    horizon = check_int("horizon", horizon, low=1)
    accepted = learner_hyperparameters(name)
    for key in params:
        if key not in accepted:
            raise TypeError(
                f"unknown hyperparameter {key!r} for learner {name!r}; accepted: {', '.join(accepted) or 'none'}"
            )
    return cls(dim, horizon, **params)


def with_known_constants(name: str, params: dict[str, Any], **constants: Any) -> dict[str, Any]:
    """``params`` completed by the public problem ``constants`` (e.g. ``x_bound``, ``y_bound``, ``radius``, ``mu``)
    that learner ``name`` accepts and ``params`` does not set; values in ``params`` always win."""
    accepted = learner_hyperparameters(name)
    return {**{k: v for k, v in constants.items() if k in accepted}, **params}


def requires_strong_convexity(name: str) -> bool:
    """True if learner ``name`` needs a strongly convex loss: its constructor has a required ``mu``."""
    cls = learner_class(name)
    mu = inspect.signature(cls.__init__).parameters.get("mu")
    return mu is not None and mu.default is inspect.Parameter.empty


def noise_off_params(name: str) -> dict[str, Any]:
    """The hyperparameters that switch learner ``name``'s privacy noise off (its non-private original):
    ``epsilon = inf`` for the central learners, ``tau = inf`` for the local-DP ones; ``{}`` if it has none."""
    accepted = learner_hyperparameters(name)
    if "epsilon" in accepted:
        return {"epsilon": math.inf}
    if "tau" in accepted:
        return {"tau": math.inf}
    return {}
