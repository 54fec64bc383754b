"""Classification data as contextual bandits: the multiclass-to-bandit reduction, over scikit-learn's bundled
datasets or the user's own data (arrays, a pandas frame, a CSV or parquet file).

Each round a user is a row drawn uniformly (with replacement) from a labelled dataset; the K arms are the K
classes and the reward is 1 for the correct class, 0 otherwise (the standard reduction of multiclass
classification to a contextual bandit, e.g. OBP's ``MultiClassToBanditReduction`` and VW's ``--cbify``). The
expected reward of arm a is 1{a = label}, so the pseudo-regret of a round is 0 or 1. Arm ``a`` is the ``a``-th
class in sorted order (``env.classes``).

Features are standardised (z-scores over the dataset) and then every row is scaled or clipped to the stated
``context_norm`` ball of radius ``context_bound``, so privacy sensitivities are bounded
(:mod:`dpbandit.envs.tabular`). The bundled datasets ship inside scikit-learn (nothing is downloaded): ``digits``
(d=64, K=10, n=1797), ``wine`` (d=13, K=3, n=178), ``breast_cancer`` (d=30, K=2, n=569), ``iris`` (d=4, K=3,
n=150). Your own data::

    env = ClassificationBanditEnv.from_arrays(X, y, horizon=5000)
    env = ClassificationBanditEnv.from_dataframe(df, target="label")
    env = gymnasium.make("dpbandit/Classification-v0", data="users.csv", target="label")   # also in TOML

Structure: disjoint (one context, every row of the ``(K, d)`` observation equals it). Seeding: the rows are drawn
from ``stream(seed, "contexts")``; there is no reward noise and no random instance.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from dpbandit.envs.tabular import TabularBanditEnv, frame_to_table, resolve_source, source_name

__all__ = ["ClassificationBanditEnv", "DATASETS", "classification_from_data"]

#: Dataset name -> scikit-learn loader name (bundled data files).
DATASETS: dict[str, str] = {
    "digits": "load_digits",
    "wine": "load_wine",
    "breast_cancer": "load_breast_cancer",
    "iris": "load_iris",
}


class ClassificationBanditEnv(TabularBanditEnv):
    """A K-class dataset as a K-armed contextual bandit with one horizon per episode.

    Data (keyword-only; at most one source, ``digits`` when none is given): ``dataset`` (one of :data:`DATASETS`),
    ``data`` (a ``.csv``/``.parquet`` path) with ``target`` (its label column; every other column is a numeric
    feature), or ``X`` ``(n, d)`` with labels ``y`` ``(n,)`` (any sortable values; at least 2 classes).
    Parameters: ``horizon`` T >= 1, ``context_norm`` (``"l2"`` or ``"linf"``), ``context_bound`` > 0,
    ``normalize`` (``"scale"``: every row has norm exactly the bound; ``"clip"``: projected only when outside),
    ``standardize`` (z-score the columns first; default True), ``full_information`` (``info["rewards"]`` =
    one-hot label), ``theta_bound`` (assumed l2 bound on a linear reward model, default ``inf``: unknown; see
    :mod:`dpbandit.envs.tabular`), ``render_mode`` (None only).

    ``info`` of a step: ``"mean_rewards"`` (one-hot of the label), ``"optimal_arm"`` (the label), ``"regret"``
    (0 or 1) and, with full information, ``"rewards"``.
    """

    def __init__(
        self,
        *,
        dataset: str | None = None,
        data: str | Path | None = None,
        target: str | None = None,
        X: Any = None,
        y: Any = None,
        horizon: int = 2000,
        context_norm: str = "l2",
        context_bound: float = 1.0,
        normalize: str = "scale",
        full_information: bool = False,
        standardize: bool = True,
        theta_bound: float = float("inf"),
        render_mode: str | None = None,
    ):
        x, labels, source = resolve_source(dataset=dataset, bundled=DATASETS, default="digits", data=data,
                                           target=target, X=X, y=y)
        try:
            self.classes, codes = np.unique(labels, return_inverse=True)
        except TypeError:
            raise TypeError(f"labels ({source_name(source)}) must be mutually comparable values") from None
        if self.classes.size < 2:
            raise ValueError(f"labels ({source_name(source)}) must hold at least 2 classes (arms), got "
                             f"{self.classes.size}")
        self.labels = codes.astype(np.int64)
        onehot = np.eye(self.classes.size)
        self._setup(x, onehot[self.labels], horizon=horizon, context_norm=context_norm,
                    context_bound=context_bound, normalize=normalize, full_information=full_information,
                    standardize=standardize, render_mode=render_mode, theta_bound=theta_bound)
        self.config = {**source, **self.config}

    @classmethod
    def from_arrays(cls, X: Any, y: Any, **kwargs: Any) -> "ClassificationBanditEnv":
        """The bandit of features ``X`` ``(n, d)`` and labels ``y`` ``(n,)``; ``kwargs`` as the constructor's."""
        return cls(X=X, y=y, **kwargs)

    @classmethod
    def from_dataframe(cls, df: Any, *, target: str, **kwargs: Any) -> "ClassificationBanditEnv":
        """The bandit of a pandas frame: column ``target`` holds the labels, every other column is a feature."""
        x, y, _ = frame_to_table(df, target)
        return cls(X=x, y=y, **kwargs)


def classification_from_data(**kwargs: Any) -> ClassificationBanditEnv:
    """Entry point of ``dpbandit/Classification-v0``: a :class:`ClassificationBanditEnv` that requires your data
    (``data=`` + ``target=``, or ``X=`` + ``y=``)."""
    if kwargs.get("data") is None and kwargs.get("X") is None:
        raise ValueError("dpbandit/Classification-v0 needs your data: data='path.csv' (or .parquet) and "
                         "target='label column', or X= and y= arrays")
    return ClassificationBanditEnv(**kwargs)
