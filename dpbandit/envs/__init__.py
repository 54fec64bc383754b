"""Gymnasium environments of dpbandit.

Importing this package registers the presets of :mod:`dpbandit.envs.presets` under the ``dpbandit/``
namespace (idempotent), so that ``gymnasium.make("dpbandit/SparseLinear-v0", horizon=500)`` works, and every
environment plugin: a package's entry point in the group ``dpbandit.envs`` (name = the Gymnasium id, e.g.
``"mylab/MyBandit-v0"``, value = ``"package.module:EnvClass"``) is registered in every process that imports
dpbandit, worker processes included. An id registered at runtime with ``gymnasium.register`` exists only in the
process that registered it (:func:`runtime_registered_envs`).
"""

from __future__ import annotations

from importlib import metadata
from typing import Any

import gymnasium

from dpbandit.envs.constants import BanditConstants
from dpbandit.envs.datasets import DATASETS, ClassificationBanditEnv
from dpbandit.envs.regression import REGRESSION_DATASETS, RegressionBanditEnv
from dpbandit.envs.glm import GLMBanditEnv, default_kwargs
from dpbandit.envs.presets import PRESETS
from dpbandit.envs.vector import GLMBanditVectorEnv

__all__ = [
    "BanditConstants",
    "ClassificationBanditEnv",
    "DATASETS",
    "GLMBanditEnv",
    "GLMBanditVectorEnv",
    "PRESETS",
    "REGRESSION_DATASETS",
    "RegressionBanditEnv",
    "register_presets",
    "registered_envs",
    "runtime_registered_envs",
    "ENTRY_POINT_GROUP",
]

#: Entry-point group of environment plugins (name = Gymnasium id -> ``"package.module:EnvClass"``).
ENTRY_POINT_GROUP = "dpbandit.envs"

_ENTRY_POINT = "dpbandit.envs.glm:GLMBanditEnv"
#: ``gymnasium.make_vec(id, num_envs=S, vectorization_mode="vector_entry_point")`` of the GLM presets.
_VECTOR_ENTRY_POINT = "dpbandit.envs.vector:GLMBanditVectorEnv"
_DATA_ENTRY_POINT = "dpbandit.envs.datasets:ClassificationBanditEnv"
_REGRESSION_ENTRY_POINT = "dpbandit.envs.regression:RegressionBanditEnv"
_NAMESPACE = "dpbandit"
#: Real-data environments (multiclass-to-bandit over scikit-learn's bundled datasets).
DATA_PRESETS: dict[str, dict[str, Any]] = {
    "dpbandit/Digits-v0": {"dataset": "digits"},
    "dpbandit/Wine-v0": {"dataset": "wine"},
    "dpbandit/BreastCancer-v0": {"dataset": "breast_cancer"},
    "dpbandit/Iris-v0": {"dataset": "iris"},
}
#: Regression-to-bandit environments (K candidate predictions scored by a reward function).
REGRESSION_PRESETS: dict[str, dict[str, Any]] = {"dpbandit/Diabetes-v0": {"dataset": "diabetes"}}
#: Your own data: ``gymnasium.make(id, data="file.csv", target="column")`` (or ``X=``, ``y=``); no default data.
USER_DATA: dict[str, str] = {
    "dpbandit/Classification-v0": "dpbandit.envs.datasets:classification_from_data",
    "dpbandit/Regression-v0": "dpbandit.envs.regression:regression_from_data",
}


def register_presets() -> None:
    """Register every preset with ``gymnasium.register``; ids already registered are left unchanged."""
    for presets, entry_point in ((PRESETS, _ENTRY_POINT), (DATA_PRESETS, _DATA_ENTRY_POINT),
                                 (REGRESSION_PRESETS, _REGRESSION_ENTRY_POINT)):
        for env_id, kwargs in presets.items():
            if env_id not in gymnasium.registry:
                vector = _VECTOR_ENTRY_POINT if entry_point == _ENTRY_POINT else None
                gymnasium.register(id=env_id, entry_point=entry_point, kwargs=dict(kwargs), vector_entry_point=vector)
    for env_id, entry_point in USER_DATA.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point=entry_point)
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name not in gymnasium.registry:
            gymnasium.register(id=ep.name, entry_point=ep.value)


def runtime_registered_envs(env_ids) -> list[str]:
    """The ids among ``env_ids`` that another process importing dpbandit would not know: registered at runtime
    with ``gymnasium.register`` (not built into Gymnasium, not a dpbandit preset, not a plugin entry point), and
    not of the ``"module:EnvName-v0"`` form that makes Gymnasium import ``module`` first."""
    return sorted({e for e in env_ids if ":" not in e and e not in _KNOWN_AT_IMPORT and e in gymnasium.registry})


def registered_envs() -> dict[str, dict[str, Any]]:
    """Every registered ``dpbandit/`` id -> the keyword arguments ``gymnasium.make(id)`` uses.

    For :class:`GLMBanditEnv` presets the dict is complete: the constructor defaults overlaid by the preset.
    """
    envs = {}
    for env_id, spec in sorted(gymnasium.registry.items()):
        if spec.namespace != _NAMESPACE:
            continue
        base = default_kwargs() if spec.entry_point in (_ENTRY_POINT, GLMBanditEnv) else {}
        envs[env_id] = {**base, **spec.kwargs}
    return envs


register_presets()
_KNOWN_AT_IMPORT = frozenset(gymnasium.registry)
