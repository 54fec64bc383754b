"""Privacy accounting: a ledger of noisy releases, their (epsilon, delta) under several compositions, the tree
calibration, and the report (``spec/dp-testing-and-accounting.md`` §1, §2, §7, §8; ``spec/errata.md`` E6, E7).

Every entry of a :class:`PrivacyLedger` is a :class:`PrivacyEvent`: ``count`` releases, each a Gaussian mechanism
(noise multiplier ``z = sigma / Delta``), a Laplace mechanism (``b / Delta_1``), a rho-zCDP mechanism, a pure
epsilon-DP mechanism, or a non-private release. A **parallel** event (``parallel=True``) is ``count`` releases on
disjoint sets of users (one release per episode, each user in one episode): every accounting charges it one
release (``PrivacyEvent.per_user``), never ``count``. A continual-release tree is ``L`` Gaussian releases of multiplier
``sigma / Delta`` and hence, exactly, one Gaussian mechanism of multiplier ``sigma / (Delta sqrt(L))`` (§1.1, §2).

Accountings (``method``), all valid upper bounds (never below 0); the report picks the smallest that applies and
its ``composition``/``conversion`` text names what that accounting did with the ledger's mix of event kinds:

* ``"exact"``: the analytic Gaussian (Balle & Wang 2018) when every event is Gaussian (composed Gaussians are one
  Gaussian with ``mu^2 = sum per_user / z^2``), or the plain sum when every event is pure DP and delta = 0;
* ``"pld"``: dp_accounting's ``PLDAccountant`` (Gaussian and Laplace events only);
* ``"rdp"``: dp_accounting's ``RdpAccountant`` (default orders) under ``REPLACE_SPECIAL``, full-horizon trees as
  ``SingleEpochTreeAggregationDpEvent``; known answer T = 1024, sigma = 10, delta = 1e-5 -> 1.3785 (E7);
* ``"zcdp"``: the sum of rho converted by Canonne–Kamath–Steinke 2020 (``calibrate.zcdp_epsilon``);
* ``"basic"``: the sum of the per-release epsilons, delta split evenly over the approximate-DP releases (the
  papers' per-node ``(eps/m, delta/m)`` argument; §1.2 "basic").

Multipliers are per unit of sensitivity, with ``Delta`` the distance between neighbouring values under the ledger's
neighbouring relation (e.g. ``2 L`` for replace-one gradient leaves); dp_accounting is then used with relations
whose Gaussian/Laplace curves are those of a unit shift (§2). Inputs are validated here, before any
dp_accounting call, so its quirks (e.g. ``GaussianDpEvent(nan)`` -> epsilon 0, §7) cannot leak through. Events
the ledger cannot account raise :class:`UnsupportedEventError` (fail closed).
"""

from __future__ import annotations

import math
from typing import Any

import dp_accounting
from dp_accounting import pld as dp_pld
from dp_accounting import rdp as dp_rdp

from dpbandit.privacy.calibrate import gaussian_epsilon, zcdp_epsilon
from dpbandit.privacy.report import (CORRECT, DEFAULT_UNIT, GUARANTEES, PUBLISHED_CODE_SETTING, WINDOW_GUARANTEES,
                                     PrivacyEvent, PrivacyReport, UnsupportedEventError)
from dpbandit.privacy.tree import TreeAccounting, tree_depth
from dpbandit.validation import check_choice, check_delta, check_real

__all__ = ["UnsupportedEventError", "PrivacyEvent", "NEIGHBORING", "METHODS", "CALIBRATION_METHODS", "PrivacyLedger"]

NEIGHBORING: tuple[str, ...] = ("replace-one", "add-or-remove-one", "replace-with-zero")
METHODS: tuple[str, ...] = ("exact", "pld", "rdp", "zcdp", "basic")
CALIBRATION_METHODS: tuple[str, ...] = ("exact", "zcdp", "basic")
#: Relative tolerance of a calibration to a requested epsilon: an accounted epsilon at most this far *below* the
#: request is the request (the calibration's bisections stop at float precision, the accounting rounds down).
CALIBRATION_TOLERANCE = 1e-6



def _labels(method: str, kinds: set[str]) -> tuple[str, str]:
    """``(composition, conversion)`` of accounting ``method`` for a ledger whose events have ``kinds``: the text
    names what the method does with this mix (a ledger of pure-DP events is never "composed Gaussians")."""
    if method == "exact" and kinds <= {"laplace", "pure"}:  # only at delta = 0
        return "pure-DP composition (sum of the per-release epsilons)", "none: pure epsilon-DP, delta = 0"
    if method == "exact":
        return ("composed Gaussians = one Gaussian (mu^2 = sum n/z^2, n = releases per user)",
                "analytic Gaussian (Balle-Wang 2018)")
    if method == "pld":
        return (f"PLD composition of {' and '.join(sorted(kinds))} releases (dp_accounting PLDAccountant)",
                "PLD epsilon(delta), discretisation 1e-4")
    if method == "rdp":
        as_zcdp = " and ".join(sorted(kinds & {"pure", "zcdp"}))
        return ("RDP composition (dp_accounting RdpAccountant, default orders, REPLACE_SPECIAL"
                + (f"; {as_zcdp} releases as ZCDpEvent)" if as_zcdp else ")"), "RDP->DP (Balle et al. 2020)")
    if method == "zcdp":
        as_rho = " and ".join(sorted(kinds & {"laplace", "pure"}))
        as_rho = f"; {as_rho} releases as rho = eps^2/2, Bun-Steinke 2016 Prop. 1.4" if as_rho else ""
        return f"zCDP composition (sum of rho{as_rho})", "CKS20 zCDP->DP (Canonne-Kamath-Steinke 2020)"
    per = {"gaussian": "analytic Gaussian", "zcdp": "CKS20", "laplace": "Delta_1/b", "pure": "as recorded"}
    split = ("delta split evenly over the approximate-DP releases" if kinds & {"gaussian", "zcdp"}
             else "pure-DP releases, no delta used")
    return (f"basic composition (sum of the per-release epsilons; {split})",
            "per-release epsilon: " + ", ".join(f"{k} {per[k]}" for k in sorted(kinds)))


class PrivacyLedger:
    """The privacy events of one mechanism or agent, and their (epsilon, delta) accounting.

    Args:
        neighboring: one of :data:`NEIGHBORING`; the relation under which every recorded sensitivity is measured.
        unit: the privacy unit (default: one user = one round's context and reward).
    """

    def __init__(self, neighboring: str = "replace-one", unit: str = DEFAULT_UNIT) -> None:
        self._neighboring = check_choice("neighboring", neighboring, NEIGHBORING)
        if not isinstance(unit, str) or not unit:
            raise TypeError(f"unit must be a non-empty string, got {unit!r}")
        self._unit = unit
        self._events: list[PrivacyEvent] = []

    @property
    def neighboring(self) -> str:
        return self._neighboring

    @property
    def unit(self) -> str:
        return self._unit

    @property
    def events(self) -> tuple[PrivacyEvent, ...]:
        return tuple(self._events)

    # -- recording ------------------------------------------------------------------------------------------------

    def add_event(self, event: PrivacyEvent) -> PrivacyLedger:
        if not isinstance(event, PrivacyEvent):
            raise TypeError(f"event must be a PrivacyEvent, got {type(event).__name__}")
        self._events.append(event)
        return self

    def add_gaussian(self, noise_multiplier: float, count: int = 1, *, mechanism: str = "Gaussian",
                     parallel: bool = False, bound: str = "") -> PrivacyLedger:
        """``count`` Gaussian releases with ``sigma / Delta_2 = noise_multiplier`` (``parallel``: on disjoint users,
        charged as one release)."""
        return self.add_event(PrivacyEvent("gaussian", noise_multiplier, count, mechanism, bound=bound,
                                           parallel=parallel))

    def add_laplace(self, noise_multiplier: float, count: int = 1, *, mechanism: str = "Laplace") -> PrivacyLedger:
        """``count`` Laplace releases with ``b / Delta_1 = noise_multiplier`` (each ``1/noise_multiplier``-DP)."""
        return self.add_event(PrivacyEvent("laplace", noise_multiplier, count, mechanism))

    def add_zcdp(self, rho: float, count: int = 1, *, mechanism: str, bound: str,
                 parallel: bool = False) -> PrivacyLedger:
        """``count`` rho-zCDP releases (e.g. report-noisy-max, spec/errata.md E4); ``bound`` names the result.
        ``parallel``: the releases hold disjoint users (one per episode), so one user costs ``rho``, not
        ``count rho``."""
        return self.add_event(PrivacyEvent("zcdp", rho, count, mechanism, bound=bound, parallel=parallel))

    def add_pure(self, epsilon: float, count: int = 1, *, mechanism: str, bound: str = "") -> PrivacyLedger:
        """``count`` epsilon-DP releases."""
        return self.add_event(PrivacyEvent("pure", epsilon, count, mechanism, bound=bound))

    def add_non_private(self, mechanism: str) -> PrivacyLedger:
        """A release without noise: every accounting is then epsilon = inf."""
        return self.add_event(PrivacyEvent("non-private", 0.0, 1, mechanism))

    def add_tree(self, tree: Any, sensitivity: float, *, mechanism: str | None = None) -> PrivacyLedger:
        """A continual-release tree (:class:`~dpbandit.privacy.tree.TreeAggregator`,
        :class:`~dpbandit.privacy.window.WindowTree` or their :class:`~dpbandit.privacy.tree.TreeAccounting`).

        ``sensitivity`` is the per-item distance between neighbouring leaves in the noise's norm: l2 (Gaussian,
        Gamma-norm), Frobenius (symmetric Gaussian, E5), l1 (Laplace), l_r (generalized Gaussian). A window tree
        makes every report of this ledger a window guarantee.
        """
        acc = tree if isinstance(tree, TreeAccounting) else getattr(tree, "accounting", None)
        if not isinstance(acc, TreeAccounting):
            raise TypeError(f"tree must be a tree mechanism or a TreeAccounting, got {type(tree).__name__}")
        sensitivity = check_real("sensitivity", sensitivity, low=0.0, low_inclusive=False)
        return self.add_event(PrivacyEvent.for_tree(acc, sensitivity, mechanism))

    def extend(self, other: PrivacyLedger) -> PrivacyLedger:
        """Add all events of ``other`` (same users: composition, e.g. agents sharing users, §8)."""
        if not isinstance(other, PrivacyLedger):
            raise TypeError(f"other must be a PrivacyLedger, got {type(other).__name__}")
        if (other.neighboring, other.unit) != (self._neighboring, self._unit):
            raise ValueError("cannot compose ledgers with different neighbouring relations or privacy units")
        self._events.extend(other.events)
        return self

    # -- accounting -----------------------------------------------------------------------------------------------

    @property
    def window(self) -> int | None:
        """The protected window if a window tree was recorded (all windows must agree), else None."""
        windows = {e.window for e in self._events if e.window is not None}
        if len(windows) > 1:
            raise UnsupportedEventError(f"window trees with different windows {sorted(windows)} cannot be combined")
        return windows.pop() if windows else None

    @property
    def rho(self) -> float:
        """Total zCDP rho (inf if a non-private event was recorded)."""
        self._require_events()
        return math.fsum(e.rho for e in self._events)

    def _require_events(self) -> None:
        if not self._events:
            raise ValueError("the ledger is empty: there is nothing to account")

    def epsilon(self, delta: float, method: str = "exact") -> float:
        """epsilon at ``delta`` for the composition of all events under ``method`` (one of :data:`METHODS`).

        ``delta`` in [0, 1); ``delta = 0`` only for ledgers of pure-DP events (Laplace, pure) with "exact" or
        "basic". Raises :class:`UnsupportedEventError` where ``method`` does not apply; inf with a non-private event.
        """
        method = check_choice("method", method, METHODS)
        delta = check_delta(delta)
        self._require_events()
        approx = any(e.approximate for e in self._events)
        if delta == 0.0 and (approx or method not in ("exact", "basic")):
            raise ValueError("delta must be > 0 for Gaussian or zCDP events and for the pld/rdp/zcdp accountings, "
                             "got 0.0")
        if any(e.kind == "non-private" for e in self._events):
            return math.inf
        # A conversion may return a bound below 0 for tiny rho (CKS: its delta(epsilon) condition already holds at
        # epsilon = 0, which is then (0, delta)-DP); epsilon is reported as 0 there, never negative.
        return max(0.0, getattr(self, f"_epsilon_{method}")(delta))

    def _unsupported(self, method: str, kinds: tuple[str, ...]) -> None:
        for e in self._events:
            if e.kind not in kinds:
                raise UnsupportedEventError(f"{method} accounting does not apply to the {e.kind} event "
                                            f"{e.mechanism!r} (supported: {kinds})")

    def _epsilon_exact(self, delta: float) -> float:
        if delta == 0.0:
            self._unsupported("exact (delta = 0)", ("laplace", "pure"))
            return math.fsum(e.per_user * self._pure_epsilon(e) for e in self._events)
        self._unsupported("exact", ("gaussian",))
        mu = math.sqrt(math.fsum(e.per_user / e.value**2 for e in self._events))
        return gaussian_epsilon(1.0 / mu, delta, 1.0)

    def _epsilon_pld(self, delta: float) -> float:
        self._unsupported("pld", ("gaussian", "laplace"))
        accountant = dp_pld.PLDAccountant(dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE)
        for e in self._events:
            event = dp_accounting.GaussianDpEvent if e.kind == "gaussian" else dp_accounting.LaplaceDpEvent
            accountant.compose(event(e.value), e.per_user)
        return float(accountant.get_epsilon(delta))

    def _epsilon_rdp(self, delta: float) -> float:
        accountant = dp_rdp.RdpAccountant(neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_SPECIAL)
        for e in self._events:
            n = e.per_user
            if (e.kind == "gaussian" and not e.parallel and e.window is None and e.horizon
                    and tree_depth(e.horizon) == e.count):
                accountant.compose(dp_accounting.SingleEpochTreeAggregationDpEvent(e.value, e.horizon))
            elif e.kind == "gaussian":
                accountant.compose(dp_accounting.GaussianDpEvent(e.value), n)
            elif e.kind == "laplace":
                accountant.compose(dp_accounting.LaplaceDpEvent(e.value), n)
            else:  # zcdp, or pure via eps-DP => eps^2/2-zCDP
                accountant.compose(dp_accounting.ZCDpEvent(e.rho / n), n)
        return float(accountant.get_epsilon(delta))

    def _epsilon_zcdp(self, delta: float) -> float:
        return zcdp_epsilon(self.rho, delta)

    @staticmethod
    def _pure_epsilon(e: PrivacyEvent) -> float:
        return 1.0 / e.value if e.kind == "laplace" else e.value

    def _epsilon_basic(self, delta: float) -> float:
        releases = sum(e.per_user for e in self._events if e.approximate)
        share = delta / releases if releases else 0.0
        per = {"gaussian": lambda e: gaussian_epsilon(e.value, share, 1.0), "laplace": self._pure_epsilon,
               "zcdp": lambda e: zcdp_epsilon(e.value, share), "pure": self._pure_epsilon}
        return math.fsum(e.per_user * per[e.kind](e) for e in self._events)

    def epsilons(self, delta: float) -> dict[str, float]:
        """epsilon under every method that applies (methods raising :class:`UnsupportedEventError` are left out;
        with ``delta = 0`` only "exact" and "basic" are tried). When the exact (analytic Gaussian) value exists the
        PLD accountant, a discretised approximation of the same curve that gets slow at large epsilon, is skipped."""
        methods = METHODS if check_delta(delta) > 0.0 else ("exact", "basic")
        out = {}
        for method in methods:
            if method == "pld" and "exact" in out:
                continue
            try:
                out[method] = self.epsilon(delta, method)
            except UnsupportedEventError:
                continue
        return out

    # -- report ---------------------------------------------------------------------------------------------------

    def report(self, delta: float, *, guarantee: str, sensitivity_assumption: str, method: str = "auto",
               calibration_mode: str = CORRECT, note: str = "", target_epsilon: float | None = None) -> PrivacyReport:
        """The :class:`~dpbandit.privacy.report.PrivacyReport` of this ledger at ``delta``.

        ``method="auto"`` reports the smallest epsilon among the accountings that apply and lists the others as
        alternatives. Window trees require a window guarantee and vice versa; a non-private event allows only
        guarantee "none"; the published-code calibration mode always yields guarantee "none", epsilon = inf.

        ``target_epsilon``: the epsilon the noise was calibrated for. An accounted epsilon within
        :data:`CALIBRATION_TOLERANCE` (relative) *below* it is reported as the request (a rounding up, never down),
        and ``conversion`` says so with the accounted value; an epsilon above the request is reported as accounted.
        """
        method = check_choice("method", method, ("auto", *METHODS))
        delta = check_delta(delta)
        self._require_events()
        guarantee = check_choice("guarantee", guarantee, GUARANTEES)
        calibration_mode = check_choice("calibration_mode", calibration_mode, (CORRECT, PUBLISHED_CODE_SETTING))
        if not isinstance(sensitivity_assumption, str):
            raise TypeError(f"sensitivity_assumption must be a string, got {type(sensitivity_assumption).__name__}")
        published = calibration_mode == PUBLISHED_CODE_SETTING
        if published:  # spec/han-frank-wolfe.md §9.5: never a private run
            guarantee = "none"
        window = self.window
        if guarantee in WINDOW_GUARANTEES and window is None:
            raise ValueError(f"guarantee {guarantee!r} needs a window tree in the ledger; none was recorded")
        if window is not None and guarantee not in (*WINDOW_GUARANTEES, "none"):
            raise ValueError(f"the ledger holds a window tree (W={window}): its guarantee is window-DP/window-JDP, "
                             f"not {guarantee!r} (users older than the window are not protected)")
        if guarantee != "none" and any(e.kind == "non-private" for e in self._events):
            raise ValueError(f"the ledger holds a non-private release: the only honest guarantee is 'none', "
                             f"not {guarantee!r}")
        fields_ = dict(delta=delta, privacy_unit=self._unit, neighboring=self._neighboring, note=note,
                       calibration_mode=calibration_mode, sensitivity_assumption=sensitivity_assumption,
                       mechanisms=tuple(dict.fromkeys(e.mechanism for e in self._events)),
                       events=tuple(e.to_dict() for e in self._events), **self._tree_fields())
        if guarantee == "none":
            if published:
                fields_["note"] = note or "published code setting: the nominal calibration is not private"
            return PrivacyReport(guarantee="none", epsilon=math.inf, **fields_)
        results = self.epsilons(delta)
        if method == "auto":
            if not results:
                raise UnsupportedEventError(f"no accounting applies to this ledger at delta={delta!r}")
            chosen = min(results, key=results.get)
        else:
            chosen = method
            if method not in results:
                self.epsilon(delta, method)  # raises the reason the method does not apply
        composition, conversion = _labels(chosen, {e.kind for e in self._events})
        epsilon = results[chosen]
        if target_epsilon is not None:
            target = check_real("target_epsilon", target_epsilon, low=0.0, low_inclusive=False)
            if target * (1.0 - CALIBRATION_TOLERANCE) <= epsilon < target:
                conversion += (f"; accounted epsilon {epsilon!r} is within the calibration's relative tolerance "
                               f"{CALIBRATION_TOLERANCE:g} below the requested {target!r}: reported as the request")
                epsilon = target
        parallel = sum(e.count for e in self._events if e.parallel)
        if parallel:
            composition += (f"; parallel composition over {parallel} releases on disjoint users (each user in one "
                            "release: charged once, the maximum over releases, not the sum)")
        return PrivacyReport(
            guarantee=guarantee, epsilon=epsilon, rho=self.rho, window=window, conversion=conversion,
            composition=f"{composition}; {sum(e.count for e in self._events)} releases in {len(self._events)} events",
            alternatives=tuple((m, e) for m, e in results.items() if m != chosen), **fields_)

    def _tree_fields(self) -> dict:
        trees = [e for e in self._events if e.horizon is not None or e.window is not None]

        def unique(values):
            values = set(values)
            return values.pop() if len(values) == 1 else None

        if not trees:
            return {}
        z = unique(e.value for e in trees if e.kind in ("gaussian", "laplace"))
        return dict(
            per_node_sigma=unique(e.scale for e in trees), noise_multiplier=z,
            tree_depth=unique(e.count for e in trees), horizon=unique(e.horizon for e in trees),
            sensitivity=unique(e.sensitivity for e in trees),
        )

    # -- serialisation --------------------------------------------------------------------------------------------

    def to_dict(self) -> dict:
        return {"neighboring": self._neighboring, "unit": self._unit, "events": [e.to_dict() for e in self._events]}

    @classmethod
    def from_dict(cls, data: dict) -> PrivacyLedger:
        ledger = cls(neighboring=data["neighboring"], unit=data["unit"])
        for e in data["events"]:
            ledger.add_event(PrivacyEvent.from_dict(e))
        return ledger

    def __repr__(self) -> str:
        return f"PrivacyLedger(neighboring={self._neighboring!r}, events={len(self._events)})"
