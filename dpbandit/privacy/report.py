"""Privacy records: the events an accountant composes and the report of a run (what is protected, against which
neighbour, with which guarantee and how it was accounted; ``spec/dp-testing-and-accounting.md`` §8).

A :class:`PrivacyEvent` is one entry of a :class:`~dpbandit.privacy.ledger.PrivacyLedger`;
:meth:`PrivacyEvent.for_tree` translates a tree's accounting statement into one. A :class:`PrivacyReport` is an
immutable record, normally produced by :meth:`dpbandit.privacy.ledger.PrivacyLedger.report`. Guarantees of
different types ("DP", "JDP", "window-DP", "window-JDP", "LDP") are different theorems and are never merged into
one number (``spec/README.md`` rule 2, ``spec/private-oco-learners.md`` §7). A run of the published
reference-code setting is labelled :data:`PUBLISHED_CODE_SETTING` and carries no guarantee at all
(``spec/han-frank-wolfe.md`` §9.5).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields
from typing import Any

from dpbandit.privacy.noise import (
    GammaNormNoise,
    GaussianNoise,
    GeneralizedGaussianNoise,
    LaplaceNoise,
    SymmetricGaussianNoise,
)
from dpbandit.privacy.tree import TreeAccounting
from dpbandit.validation import check_choice, check_delta, check_int, check_real

__all__ = [
    "GUARANTEES",
    "WINDOW_GUARANTEES",
    "CORRECT",
    "PUBLISHED_CODE_SETTING",
    "CALIBRATION_MODES",
    "DEFAULT_UNIT",
    "SAMPLER_NOTE",
    "KINDS",
    "UnsupportedEventError",
    "PrivacyEvent",
    "PrivacyReport",
    "is_private",
]

#: Guarantee types; "none" is the only honest label for a run without a finite guarantee.
GUARANTEES: tuple[str, ...] = ("DP", "JDP", "window-DP", "window-JDP", "LDP", "none")
WINDOW_GUARANTEES: tuple[str, ...] = ("window-DP", "window-JDP")
CORRECT = "correct"
#: Label of the published-code comparison mode (``spec/han-frank-wolfe.md`` §9.5): never a private run.
PUBLISHED_CODE_SETTING = "published code setting — NOT PRIVATE"
CALIBRATION_MODES: tuple[str, ...] = (CORRECT, PUBLISHED_CODE_SETTING)
#: The privacy unit of dpbandit's agents (``spec/private-oco-learners.md`` §7).
DEFAULT_UNIT = "one user = one round's context and reward"
#: ``spec/dp-testing-and-accounting.md`` §6: what the floating-point samplers are and are not.
SAMPLER_NOTE = (
    "floating-point samplers (numpy Generator, float64): a simulator of the privacy-utility trade-off, "
    "not an FP-safe DP implementation (docs/derivations.md#acc-6)"
)


class UnsupportedEventError(ValueError):
    """An event cannot be accounted (or an accounting method does not apply to it): fail closed."""


#: Kinds of privacy events (see :class:`PrivacyEvent`).
KINDS: tuple[str, ...] = ("gaussian", "laplace", "zcdp", "pure", "non-private")


def _encode(value: Any) -> Any:
    """JSON-safe form: non-finite floats as strings, tuples as lists."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, (tuple, list)):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    return value


def _decode_float(value: Any) -> Any:
    return float(value) if isinstance(value, str) and value in ("inf", "-inf", "nan") else value


@dataclass(frozen=True)
class PrivacyEvent:
    """``count`` releases of one mechanism, each touching a user's datum once.

    ``kind`` and ``value``: "gaussian" (noise multiplier z = sigma/Delta_2 per release), "laplace" (b/Delta_1),
    "zcdp" (rho per release), "pure" (epsilon per release), "non-private" (value 0: no noise).
    ``scale`` (absolute sigma or b), ``sensitivity``, ``horizon``, ``window`` document trees; ``bound`` names the
    result the accounting of this event rests on.

    ``parallel``: the ``count`` releases hold **disjoint** sets of users (e.g. one release per episode, each user in
    exactly one episode: parallel composition). A user's datum then enters one release, so the event costs what one
    release costs (``per_user = 1``), whatever ``count``; ``value`` is the per-release cost (the releases of one
    episode, composed sequentially inside it, recorded as one release or as several parallel events of the same
    ``count``). Otherwise every user touches all ``count`` releases (``per_user = count``).
    """

    kind: str
    value: float
    count: int
    mechanism: str
    scale: float | None = None
    sensitivity: float | None = None
    horizon: int | None = None
    window: int | None = None
    bound: str = ""
    parallel: bool = False

    def __post_init__(self) -> None:
        check_choice("kind", self.kind, KINDS)
        if not isinstance(self.parallel, bool):
            raise TypeError(f"parallel must be a bool, got {self.parallel!r}")
        if self.kind == "non-private":
            object.__setattr__(self, "value", check_real("value", self.value, low=0.0, high=0.0))
        else:
            value = check_real(f"{self.kind} value", self.value, low=0.0, low_inclusive=False)
            object.__setattr__(self, "value", value)
        object.__setattr__(self, "count", check_int("count", self.count, low=1))
        if not isinstance(self.mechanism, str) or not self.mechanism:
            raise TypeError(f"mechanism must be a non-empty string, got {self.mechanism!r}")
        for name in ("scale", "sensitivity"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, check_real(name, getattr(self, name), low=0.0, low_inclusive=False))
        for name in ("horizon", "window"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, check_int(name, getattr(self, name), low=1))

    @property
    def approximate(self) -> bool:
        """True for events whose (epsilon, delta) needs delta > 0 (Gaussian, zCDP)."""
        return self.kind in ("gaussian", "zcdp")

    @property
    def per_user(self) -> int:
        """How many of the ``count`` releases one user's datum enters: 1 if ``parallel``, else ``count``."""
        return 1 if self.parallel else self.count

    @property
    def rho(self) -> float:
        """zCDP rho of the event for one user (``per_user`` releases): Gaussian ``1/(2 z^2)``, pure/Laplace
        ``eps^2/2`` (Bun & Steinke 2016, Prop. 1.4), zCDP as recorded, per release; inf for a non-private
        release. A parallel event costs one release's rho, not ``count`` times it."""
        per = {
            "gaussian": lambda v: 0.5 / v**2,
            "laplace": lambda v: 0.5 / v**2,
            "zcdp": lambda v: v,
            "pure": lambda v: 0.5 * v**2,
            "non-private": lambda v: math.inf,
        }[self.kind](self.value)
        return self.per_user * per

    @classmethod
    def for_tree(cls, acc: TreeAccounting, sensitivity: float, mechanism: str | None = None) -> PrivacyEvent:
        """The event of a tree whose items each touch at most ``acc.nodes_per_item`` noisy nodes of ``acc.noise``.

        ``sensitivity`` is the per-item distance between neighbouring leaves in the noise's norm: l2 (Gaussian,
        Gamma-norm), Frobenius (symmetric Gaussian), l1 (Laplace), l_r (generalized Gaussian). Noises without a
        known bound raise :class:`UnsupportedEventError`.
        """
        noise, name = acc.noise, mechanism or acc.mechanism
        sensitivity = check_real("sensitivity", sensitivity, low=0.0, low_inclusive=False)
        common = dict(count=acc.nodes_per_item, sensitivity=sensitivity, horizon=acc.horizon, window=acc.window)
        if noise is None:
            return cls("non-private", 0.0, mechanism=f"{name}, noise off", **common)
        if isinstance(noise, SymmetricGaussianNoise):  # a change D has Mahalanobis norm ||D||_F/(sqrt 2 sigma)
            return cls("gaussian", math.sqrt(2.0) * noise.sigma / sensitivity,
                       mechanism=f"{name}, symmetric Gaussian", scale=noise.sigma,
                       bound="E5, docs/derivations.md#e5: z = sqrt(2) sigma / Delta_F per node", **common)
        if isinstance(noise, GaussianNoise) or (isinstance(noise, GeneralizedGaussianNoise) and noise.r == 2.0):
            return cls("gaussian", noise.sigma / sensitivity, mechanism=f"{name}, Gaussian", scale=noise.sigma,
                       bound="docs/derivations.md#acc-1: L nodes = one Gaussian, sigma/(Delta sqrt L)",
                       **common)
        if isinstance(noise, GeneralizedGaussianNoise):
            if noise.r < 2.0:
                raise UnsupportedEventError(f"generalized Gaussian noise with r={noise.r:g} < 2 has no zCDP bound "
                                            "(l_r^2 is not smooth; E2, docs/derivations.md#e2)")
            return cls("zcdp", (noise.r - 1.0) * sensitivity**2 / (2.0 * noise.sigma**2),
                       mechanism=f"{name}, {noise.name}", scale=noise.sigma,
                       bound="E1 Correction 2 (docs/derivations.md#e1): rho = (r - 1) Delta_r^2/(2 sigma^2) per node", **common)
        if isinstance(noise, LaplaceNoise):
            return cls("laplace", noise.scale / sensitivity, mechanism=f"{name}, Laplace", scale=noise.scale,
                       bound="Laplace mechanism: Delta_1/b-DP per node", **common)
        if isinstance(noise, GammaNormNoise):
            return cls("pure", sensitivity / noise.scale, mechanism=f"{name}, Gamma-norm", scale=noise.scale,
                       bound="docs/derivations.md#oco-1: Delta_2/c-DP per node", **common)
        raise UnsupportedEventError(f"the ledger cannot account tree noise {noise.describe()!r}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> PrivacyEvent:
        names = {f.name for f in fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise ValueError(f"unknown PrivacyEvent fields: {sorted(unknown)}")
        return cls(**data)


@dataclass(frozen=True)
class PrivacyReport:
    """What a run guarantees, field by field (``spec/dp-testing-and-accounting.md`` §8).

    Fields:
        guarantee: one of :data:`GUARANTEES`. "JDP" holds for the actions shown to all *other* users (billboard
            lemma, ``spec/private-oco-learners.md`` §7); "window-*" protects only the last ``window`` users
            (``spec/private-oco-learners.md`` §3.1); "LDP" is a per-report guarantee; "none" means no guarantee.
        epsilon, delta: the headline (epsilon, delta); ``epsilon = inf`` exactly when ``guarantee == "none"``.
        privacy_unit, neighboring: what one datum is and how neighbouring inputs differ.
        calibration_mode: :data:`CORRECT` or :data:`PUBLISHED_CODE_SETTING` (which forces guarantee "none").
        rho: total zCDP rho when every event has a zCDP bound (None otherwise).
        mechanisms: labels of the accounted mechanisms.
        per_node_sigma, noise_multiplier, tree_depth, horizon, sensitivity: the tree calibration when the ledger
            holds a single kind of tree (noise_multiplier = sigma / sensitivity per node); None when not unique
            (every event is listed in ``events``).
        sensitivity_assumption: what the sensitivity rests on, e.g. "contexts clipped to ||x||_2 <= 1, rewards to
            [-1, 1]".
        composition, conversion: how the events were composed and converted to (epsilon, delta).
        alternatives: ``(method, epsilon)`` pairs of the other (looser) valid accountings.
        events: the ledger (dicts of :class:`PrivacyEvent`), so a run can be
            re-accounted later.
        window: the protected window W for window guarantees, else None.
        sampler: the floating-point sampler note.
        note: free text (e.g. why a run is not private).
    """

    guarantee: str
    epsilon: float
    delta: float
    privacy_unit: str = DEFAULT_UNIT
    neighboring: str = "replace-one"
    calibration_mode: str = CORRECT
    rho: float | None = None
    mechanisms: tuple[str, ...] = ()
    per_node_sigma: float | None = None
    noise_multiplier: float | None = None
    tree_depth: int | None = None
    horizon: int | None = None
    sensitivity: float | None = None
    sensitivity_assumption: str = ""
    composition: str = ""
    conversion: str = ""
    alternatives: tuple[tuple[str, float], ...] = ()
    events: tuple[dict, ...] = ()
    window: int | None = None
    sampler: str = SAMPLER_NOTE
    note: str = ""

    def __post_init__(self) -> None:
        check_choice("guarantee", self.guarantee, GUARANTEES)
        check_choice("calibration_mode", self.calibration_mode, CALIBRATION_MODES)
        eps = check_real("epsilon", self.epsilon, low=0.0, allow_inf=True)
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "delta", check_delta(self.delta))
        if self.calibration_mode == PUBLISHED_CODE_SETTING and (self.guarantee != "none" or eps != math.inf):
            raise ValueError(
                f"calibration_mode {PUBLISHED_CODE_SETTING!r} carries no guarantee: it requires guarantee='none' "
                f"and epsilon=inf, got guarantee={self.guarantee!r}, epsilon={eps!r}"
            )
        if (self.guarantee == "none") != (eps == math.inf):
            raise ValueError(
                f"epsilon must be inf exactly when guarantee is 'none', got guarantee={self.guarantee!r}, "
                f"epsilon={eps!r}"
            )
        if self.guarantee in WINDOW_GUARANTEES:
            check_int("window", self.window, low=1)
        elif self.window is not None:
            raise ValueError(f"window is only meaningful for {WINDOW_GUARANTEES}, got guarantee={self.guarantee!r}")
        if self.rho is not None:
            object.__setattr__(self, "rho", check_real("rho", self.rho, low=0.0, allow_inf=True))
        object.__setattr__(self, "mechanisms", tuple(self.mechanisms))
        object.__setattr__(self, "alternatives", tuple((str(m), float(e)) for m, e in self.alternatives))
        object.__setattr__(self, "events", tuple(e.to_dict() if isinstance(e, PrivacyEvent) else dict(e)
                                                for e in self.events))

    # -- constructors ---------------------------------------------------------------------------------------------

    @classmethod
    def non_private(cls, agent_name: str, *, note: str = "") -> PrivacyReport:
        """The report of a non-private agent or a noise-off (epsilon = inf) run: guarantee "none"."""
        return cls(
            guarantee="none", epsilon=math.inf, delta=0.0, mechanisms=(str(agent_name),),
            note=note or "non-private: no noise is added, no privacy guarantee",
        )

    # -- serialisation --------------------------------------------------------------------------------------------

    def to_dict(self) -> dict:
        """A JSON-able dict (non-finite floats as the strings "inf"/"nan"); inverse of :meth:`from_dict`."""
        return {f.name: _encode(getattr(self, f.name)) for f in fields(self)}

    def to_json(self, **kwargs: Any) -> str:
        """Strict JSON (no Infinity/NaN literals) for run manifests."""
        return json.dumps(self.to_dict(), allow_nan=False, ensure_ascii=False, **kwargs)

    @classmethod
    def from_dict(cls, data: dict) -> PrivacyReport:
        """Rebuild a report from :meth:`to_dict` output (also after a JSON round trip); unknown keys raise."""
        if not isinstance(data, dict):
            raise TypeError(f"data must be a dict, got {type(data).__name__}")
        names = {f.name for f in fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise ValueError(f"unknown PrivacyReport fields: {sorted(unknown)}")
        kwargs = {k: _decode_float(v) for k, v in data.items()}
        if "alternatives" in kwargs:
            kwargs["alternatives"] = tuple((m, _decode_float(e)) for m, e in kwargs["alternatives"])
        if "mechanisms" in kwargs:
            kwargs["mechanisms"] = tuple(kwargs["mechanisms"])
        if "events" in kwargs:
            kwargs["events"] = tuple({k: _decode_float(v) for k, v in e.items()} for e in kwargs["events"])
        return cls(**kwargs)

    @classmethod
    def from_json(cls, text: str) -> PrivacyReport:
        return cls.from_dict(json.loads(text))

    @property
    def is_private(self) -> bool:
        """True when the report states a guarantee (not "none"): the one source of truth for labelling a run
        private in job records, tables and figures (an agent class that *can* be private runs with no guarantee at
        epsilon = inf or in the published-code setting)."""
        return self.guarantee != "none" and self.calibration_mode == CORRECT

    # -- display --------------------------------------------------------------------------------------------------

    @property
    def label(self) -> str:
        """Short label for tables and plot legends, e.g. "JDP (ε=1, δ=1e-05)" or "window-JDP W=64 (ε=…)"."""
        if self.calibration_mode == PUBLISHED_CODE_SETTING:
            return PUBLISHED_CODE_SETTING
        if self.guarantee == "none":
            return "non-private (no guarantee)"
        window = f" W={self.window}" if self.window is not None else ""
        return f"{self.guarantee}{window} (ε={self.epsilon:.4g}, δ={self.delta:.3g})"

    def __str__(self) -> str:
        lines = [f"Privacy report: {self.label}"]
        if self.calibration_mode != CORRECT:
            lines.append(f"  calibration mode : {self.calibration_mode}")
        lines += [
            f"  privacy unit     : {self.privacy_unit}",
            f"  neighbouring     : {self.neighboring}",
        ]
        if self.rho is not None:
            lines.append(f"  zCDP rho         : {self.rho:.6g}")
        if self.mechanisms:
            lines.append(f"  mechanisms       : {', '.join(self.mechanisms)}")
        tree = [
            (name, getattr(self, name))
            for name in ("per_node_sigma", "noise_multiplier", "tree_depth", "horizon", "sensitivity")
            if getattr(self, name) is not None
        ]
        if tree:
            lines.append("  calibration      : " + ", ".join(f"{k}={v:.6g}" for k, v in tree))
        if self.sensitivity_assumption:
            lines.append(f"  sensitivity from : {self.sensitivity_assumption}")
        if self.composition:
            lines.append(f"  composition      : {self.composition}")
        if self.conversion:
            lines.append(f"  conversion       : {self.conversion}")
        if self.alternatives:
            lines.append("  alternatives     : " + ", ".join(f"{m} ε={e:.6g}" for m, e in self.alternatives))
        lines.append(f"  sampler          : {self.sampler}")
        if self.note:
            lines.append(f"  note             : {self.note}")
        return "\n".join(lines)


def is_private(report: PrivacyReport | None) -> bool:
    """Whether a run with privacy report ``report`` (None for non-private agents) is private:
    :attr:`PrivacyReport.is_private`, False for None."""
    if report is None:
        return False
    if not isinstance(report, PrivacyReport):
        raise TypeError(f"report must be a PrivacyReport or None, got {type(report).__name__}")
    return report.is_private
