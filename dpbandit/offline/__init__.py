"""Logged bandit data and offline evaluation (a sibling of the simulators, sharing the agents).

* :mod:`dpbandit.offline.logged`: :class:`LoggedData` (context, action, reward, propensity, position), Open Bandit
  Pipeline's bandit-feedback dict and ``.npz``/``.csv``/``.parquet`` files, :func:`log_policy` to log a simulator;
* :mod:`dpbandit.offline.open_bandit`: the Open Bandit Dataset's file layout (:func:`read_open_bandit`);
* :mod:`dpbandit.offline.policies`: evaluated policies as action distributions (arrays, callables, agents);
* :mod:`dpbandit.offline.estimators`: DM, IPS, SNIPS, DR, SNDR, switch-DR, clipped IPS/DR with intervals over the
  data;
* :mod:`dpbandit.offline.reward_model`: the cross-fitted reward model (ridge, named or any scikit-learn model);
* :mod:`dpbandit.offline.replay`: :func:`evaluate_offline` (rejection-sampling replay and every estimator) and
  what a private agent's guarantee means offline (:data:`OFFLINE_PRIVACY_SCOPE`);
* :mod:`dpbandit.offline.positions`: multi-position logs, per position and pooled (:func:`evaluate_positions`).

The command ``dpbandit replay LOG --agent linucb --agent dp_ucb --policy uniform`` runs them.
"""

from dpbandit.offline.estimators import Estimate
from dpbandit.offline.logged import LoggedData, log_policy, read_logged
from dpbandit.offline.open_bandit import read_open_bandit
from dpbandit.offline.policies import fixed_arm, uniform_policy
from dpbandit.offline.positions import evaluate_positions, positions_frame
from dpbandit.offline.replay import OFFLINE_PRIVACY_SCOPE, OfflineResult, ReplayEnv, evaluate_offline
from dpbandit.offline.reward_model import fit_reward_model

__all__ = [
    "Estimate",
    "LoggedData",
    "OFFLINE_PRIVACY_SCOPE",
    "OfflineResult",
    "ReplayEnv",
    "evaluate_offline",
    "evaluate_positions",
    "fit_reward_model",
    "fixed_arm",
    "log_policy",
    "positions_frame",
    "read_logged",
    "read_open_bandit",
    "uniform_policy",
]
