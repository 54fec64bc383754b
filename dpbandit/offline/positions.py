"""Multi-position logs: evaluate each position (slot of a ranking) on its own and, under an explicit assumption, pooled.

A log with a ``position`` column (the Open Bandit Dataset shows three items per impression) holds one logged round
per (impression, slot). :func:`evaluate_positions` evaluates the policy on the rounds of each position separately
(the value of showing the policy's item in that slot) and on all rounds pooled. Pooling assumes **position
independence**: an item's click probability and the logging propensities do not depend on the slot, so the rounds of
every slot are draws from one bandit problem (:data:`POOLED_ASSUMPTION`; it is stated in every pooled row). Rounds of
one impression share the user, so the pooled interval, which resamples rounds as independent, can be too narrow when
users' rewards are correlated across slots.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from dpbandit.offline.logged import LoggedData
from dpbandit.offline.policies import policy_matrix
from dpbandit.offline.replay import OfflineResult, evaluate_offline

__all__ = ["evaluate_positions", "POOLED_ASSUMPTION", "positions_frame"]

POOLED_ASSUMPTION = ("pooled over positions: assumes an action's reward and the logging propensities do not depend on "
                     "its position (slot); rounds of one impression are treated as independent")


def evaluate_positions(data: LoggedData, policy: Any, seed: int, *, pooled: bool = True,
                       **options: Any) -> dict[str, OfflineResult]:
    """:func:`~dpbandit.offline.replay.evaluate_offline` on each position's rounds (keys ``"0"``, ``"1"``, ...) and,
    with ``pooled`` and more than one position, on the whole log (key ``"pooled"``). ``policy``: an agent (replayed
    afresh, reset with ``seed``, on each part), a callable of the contexts, or an array ``(n, K)`` over the whole log
    (its rows are split with the log). ``options`` go to ``evaluate_offline``."""
    if not isinstance(data, LoggedData):
        raise TypeError(f"data must be a LoggedData, got {type(data).__name__}")
    positions = data.positions
    parts: dict[str, np.ndarray | None] = {}
    if len(positions) == 1:
        parts[str(positions[0])] = None
    else:
        parts.update({str(p): np.flatnonzero(data.position == p) for p in positions})
        if pooled:
            parts["pooled"] = None
    array = isinstance(policy, (np.ndarray, list, tuple))
    if array:  # checked against the whole log before it is split
        policy = policy_matrix(policy, data.context, data.n_actions)
    out = {}
    for key, rows in parts.items():
        part = data if rows is None else data.select(rows)
        target = policy if rows is None or not array else np.asarray(policy)[rows]
        out[key] = evaluate_offline(part, target, seed, **options)
    return out


def positions_frame(results: dict[str, OfflineResult]) -> pd.DataFrame:
    """The estimates of :func:`evaluate_positions` as one table: ``position``, then the columns of
    :meth:`OfflineResult.table`, and ``assumption`` (:data:`POOLED_ASSUMPTION` for the pooled rows)."""
    frames = []
    for key, result in results.items():
        table = result.table()
        table.insert(0, "position", key)
        table["assumption"] = POOLED_ASSUMPTION if key == "pooled" else ""
        frames.append(table)
    return pd.concat(frames, ignore_index=True)
