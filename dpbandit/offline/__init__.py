"""Logged bandit data and offline evaluation (a sibling of the simulators, sharing the agents).

* :mod:`dpbandit.offline.logged`: :class:`LoggedData` (context, action, reward, propensity), Open Bandit
  Pipeline's bandit-feedback dict and ``.npz``/``.csv``/``.parquet`` files, :func:`log_policy` to log a simulator;
* :mod:`dpbandit.offline.replay`: :func:`evaluate_offline` (rejection-sampling replay, IPS, doubly robust) and
  what a private agent's guarantee means offline (:data:`OFFLINE_PRIVACY_SCOPE`);
* :mod:`dpbandit.offline.reward_model`: the cross-fitted reward model of the DR estimator.

The command ``dpbandit replay LOG --agent linucb --agent dp_ucb`` runs them.
"""

from dpbandit.offline.logged import LoggedData, log_policy, read_logged
from dpbandit.offline.replay import OFFLINE_PRIVACY_SCOPE, OfflineResult, ReplayEnv, evaluate_offline

__all__ = [
    "LoggedData",
    "OFFLINE_PRIVACY_SCOPE",
    "OfflineResult",
    "ReplayEnv",
    "evaluate_offline",
    "log_policy",
    "read_logged",
]
