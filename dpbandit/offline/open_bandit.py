"""The Open Bandit Dataset's file layout (Saito et al., NeurIPS 2021 Datasets track), read without Open Bandit Pipeline.

The dataset is a folder ``<root>/<behavior_policy>/<campaign>/`` (``random`` or ``bts``; ``all``, ``men`` or
``women``) holding

* ``<campaign>.csv``: one row per (impression, slot): an unnamed index column, ``timestamp``, ``item_id`` (the
  action, 0-based), ``position`` (the slot, 1-based), ``click`` (the reward), ``propensity_score``,
  ``user_feature_0..3`` (categorical, hashed strings) and ``user-item_affinity_<i>`` (numbers, one per item);
* ``item_context.csv``: one row per item: ``item_id``, ``item_feature_0`` (a number), ``item_feature_1..3``
  (categorical).

:func:`read_open_bandit` follows Open Bandit Pipeline 0.5.7's default preprocessing (``OpenBanditDataset``): rows
sorted by ``timestamp``; positions ranked densely from 0; the context is the one-hot encoding of the user features
(``pandas.get_dummies(drop_first=True)``), optionally followed by the affinity columns; ``action_context`` the item
features (categories as integer codes, then ``item_feature_0``); ``K`` the number of items in ``item_context.csv``
(or ``max(item_id) + 1`` without it). The data set itself is not shipped: point it at your copy.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dpbandit.offline.logged import LoggedData

__all__ = ["read_open_bandit", "is_open_bandit_table", "OPEN_BANDIT_COLUMNS"]

#: Columns that identify the campaign CSV of the Open Bandit Dataset.
OPEN_BANDIT_COLUMNS: tuple[str, ...] = ("timestamp", "item_id", "position", "click", "propensity_score")


def is_open_bandit_table(path: str | Path) -> bool:
    """True when ``path`` is a ``.csv`` file whose header has the Open Bandit Dataset's columns."""
    path = Path(path)
    if path.suffix.lower() != ".csv" or not path.is_file():
        return False
    try:
        with open(path, encoding="utf-8") as f:
            header = f.readline()
    except (OSError, UnicodeDecodeError):
        return False
    return set(OPEN_BANDIT_COLUMNS) <= {c.strip() for c in header.strip().split(",")}


def read_open_bandit(path: str | Path, *, affinity: bool = False) -> LoggedData:
    """The log of an Open Bandit Dataset campaign: ``path`` is the campaign CSV or its folder (which holds
    ``<campaign>.csv``). ``affinity=True`` appends the ``user-item_affinity_*`` columns to the context. Errors name
    the file and the column."""
    path = Path(path)
    if path.is_dir():
        path = path / f"{path.name}.csv"
    source = f"Open Bandit Dataset file {str(path)!r}"
    if not path.is_file():
        raise ValueError(f"{source} does not exist (give the campaign CSV, e.g. random/all/all.csv, or its folder)")
    try:
        frame = pd.read_csv(path, index_col=0)
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        raise ValueError(f"{source} is not a CSV table: {str(exc).splitlines()[0]}") from None
    missing = [c for c in OPEN_BANDIT_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{source} lacks column(s) {missing}: not the Open Bandit Dataset layout")
    users = [c for c in frame.columns if str(c).startswith("user_feature")]
    if not users and not affinity:
        raise ValueError(f"{source} has no user_feature_* column for the context (pass affinity=True to use the "
                         "user-item_affinity_* columns)")
    frame = frame.sort_values("timestamp", kind="stable")
    for column in ("item_id", "position", "click", "propensity_score"):
        values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=np.float64)
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            raise ValueError(f"column {column!r} of {source} must hold numbers; row {bad[0]} holds "
                             f"{frame[column].iloc[bad[0]]!r}")
    parts = []
    if users:
        parts.append(pd.get_dummies(frame[users].astype(str), drop_first=True).to_numpy(dtype=np.float64))
    if affinity:
        parts.append(frame[[c for c in frame.columns if str(c).startswith("user-item_affinity")]]
                     .to_numpy(dtype=np.float64))
    context = np.hstack(parts) if parts else np.zeros((len(frame), 1))
    if context.shape[1] == 0:  # every user feature constant: one constant feature
        context = np.ones((len(frame), 1))
    action = frame["item_id"].to_numpy()
    rank = np.unique(frame["position"].to_numpy(), return_inverse=True)[1]
    items = path.parent / "item_context.csv"
    action_context, n_actions = None, int(action.max()) + 1
    if items.is_file():
        table = pd.read_csv(items, index_col=0)
        categorical = table.drop(columns=["item_id", "item_feature_0"], errors="ignore")
        codes = np.column_stack([pd.factorize(categorical[c], sort=True)[0] for c in categorical.columns]).astype(
            np.float64) if categorical.shape[1] else np.empty((len(table), 0))
        first = table[["item_feature_0"]].to_numpy(dtype=np.float64) if "item_feature_0" in table else np.empty(
            (len(table), 0))
        action_context = np.hstack([codes, first])
        n_actions = max(n_actions, len(table))
    try:
        return LoggedData(context, action, frame["click"].to_numpy(dtype=np.float64), n_actions,
                          pscore=frame["propensity_score"].to_numpy(dtype=np.float64),
                          action_context=action_context, position=rank)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{source}: {exc}") from None
