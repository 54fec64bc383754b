"""``dpbandit replay``: evaluate agents and policies on a log file (replay, DM, IPS, SNIPS, DR, SNDR, switch and
clipped estimators; :mod:`dpbandit.offline`).

    dpbandit replay LOG.npz --agent random --agent linucb --agent dp_ucb:epsilon=1 --seeds 5
    dpbandit replay LOG.csv --config agents.toml --uniform --reward-range 0 1 --out replay.csv
    dpbandit replay random/all/all.csv --policy uniform --policy arm:3 --estimator ips --estimator dr

LOG is Open Bandit Pipeline's bandit-feedback dict saved with ``numpy.savez`` (``.npz``), a table
(``.csv``/``.parquet``: ``action``, ``reward``, ``pscore``, optionally ``position``, context columns) or a campaign
CSV of the Open Bandit Dataset (:mod:`dpbandit.offline.open_bandit`). Agents come from ``--agent
TYPE[:key=value,...]`` or the ``[[agents]]`` tables of a TOML file; static policies from ``--policy``. Each is
evaluated once per seed over the whole log; the table shows, per agent (and position), its privacy guarantee and
each estimate of its reward per round with its 95% interval over the data (several seeds: the mean, and the
interval spanning every seed's).
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["main", "replay_table", "UndefinedEstimateWarning"]

ESTIMATOR_CHOICES = ("replay", "dm", "ips", "snips", "dr", "sndr", "switch_dr", "clipped_ips", "clipped_dr")
REWARD_MODEL_CHOICES = ("ridge", "logistic", "forest", "boosting")
MAX_FOLDS = 20
#: Most replays per agent (each a pass over the whole log; the intervals come from the data, not the seeds).
MAX_REPLAY_SEEDS = 1000


def _agent_spec(text: str):
    from dpbandit.experiment.config import AgentSpec

    name, _, rest = text.partition(":")
    params = {}
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"--agent {text!r}: parameters must be key=value, got {item!r}")
        try:
            params[key] = int(value) if value.lstrip("-").isdigit() else float(value)
        except ValueError:
            params[key] = value
    return AgentSpec(name, label=text, params=params)


def _policy_spec(text: str, data):
    """``--policy``: ``uniform``, ``arm:K`` or a ``.npy`` file of action probabilities ``(n_rounds, K)``."""
    from dpbandit.offline.policies import fixed_arm, uniform_policy

    if text == "uniform":
        return uniform_policy(data.n_rounds, data.n_actions)
    if text.startswith("arm:"):
        arm = text[4:]
        if not arm.isdigit() or int(arm) >= data.n_actions:
            raise ValueError(f"--policy {text!r}: the arm must be an integer in [0, {data.n_actions})")
        return fixed_arm(int(arm), data.n_rounds, data.n_actions)
    if not text.endswith(".npy"):
        raise ValueError(f"--policy must be 'uniform', 'arm:K' or a .npy file of action probabilities "
                         f"({data.n_rounds}, {data.n_actions}), got {text!r}")
    try:
        return np.load(text, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise ValueError(f"--policy file {text!r} is not a readable .npy array: {str(exc).splitlines()[0]}") from None


def replay_table(data, specs, seeds, *, horizon=None, uniform=False, shuffle=False, context_norm="l2",
                 context_bound=1.0, reward_range=(0.0, 1.0), theta_norm="l2", theta_bound=math.inf,
                 estimators=None, reward_model="ridge", folds=2, clip=None, interval="bca",
                 policies=()) -> pd.DataFrame:
    """One row per agent (or policy) and position: guarantee, ε, δ, accepted rounds and each estimate with its 95%
    interval over the data (columns ``NAME``, ``NAME_low``, ``NAME_high``, ``NAME_ess``); ``played_rounds``: rounds
    (mean over seeds) where the agent's action distribution is undefined and its played action stands in
    (:mod:`dpbandit.offline.policies`; shown only when some are).

    Everything is checked before any replay: the log must let replay expect at least
    :data:`~dpbandit.offline.replay.MIN_EXPECTED_ACCEPTED` accepted rounds (one near-zero propensity makes
    rejection sampling accept almost nothing: refused in one line, :func:`~dpbandit.offline.replay.check_replayable`),
    and every agent is built first (an agent that would be meaningless, e.g. DP-UCB without ``theta_bound``,
    refuses in one line). The pass always covers the whole log; ``horizon`` (default
    :func:`~dpbandit.offline.replay.covering_horizon`, which the whole log fills with probability <= 1e-9) limits
    only the accepted rounds replay learns from. With several seeds the value is the mean over seeds and the interval
    spans every seed's data interval (seeds add only the policy's and replay's own randomness). A log with several
    positions gives one row per position and a ``pooled`` row (:mod:`dpbandit.offline.positions`). ``policies``:
    ``(label, probabilities (n, K))`` pairs evaluated beside the agents. An estimate that is still undefined (no
    accepted round in a seed) is refused, never printed as NaN."""
    from dpbandit.agents import make_agent
    from dpbandit.offline import OFFLINE_PRIVACY_SCOPE, ReplayEnv
    from dpbandit.offline.estimators import DEFAULT_CLIP
    from dpbandit.offline.positions import POOLED_ASSUMPTION
    from dpbandit.offline.replay import DEFAULT_ESTIMATORS, check_replayable, covering_horizon

    estimators = tuple(estimators or DEFAULT_ESTIMATORS)
    expected = check_replayable(data, uniform) if "replay" in estimators else data.n_rounds
    horizon = horizon or covering_horizon(data, uniform)
    env = ReplayEnv.from_logged(data, horizon, context_norm=context_norm, context_bound=context_bound,
                                reward_range=reward_range, theta_norm=theta_norm, theta_bound=theta_bound)
    targets = [(spec.label, make_agent(spec.type, env, **spec.params)) for spec in specs]
    targets += [(label, probs) for label, probs in policies]
    options = dict(uniform=uniform, shuffle=shuffle, estimators=estimators, reward_model=reward_model, folds=folds,
                   clip=DEFAULT_CLIP if clip is None else clip, interval=interval, reward_range=tuple(reward_range))
    rows = []
    for label, target in targets:
        runs = _runs(label, data, target, seeds, options)
        for position in runs[0]:
            results = [run[position] for run in runs]
            report = results[0].privacy_report or {}
            row = {"agent": label, "position": position, "guarantee": report.get("guarantee", "none"),
                   "epsilon": float(report.get("epsilon", math.inf)), "delta": report.get("delta", 0.0),
                   "accepted": float(np.mean([r.accepted for r in results]))}
            for name in estimators:
                values = np.array([r.estimates[name].value for r in results])
                if not np.isfinite(values).all():  # stated, shown as "undefined", never a silent NaN
                    bad = [seed for seed, r in zip(seeds, results) if not math.isfinite(r.estimates[name].value)]
                    warnings.warn(f"agent {label!r}: the {name} estimate is undefined in seed(s) {bad} (accepted "
                                  f"rounds per seed: {[r.accepted for r in results]}; expected {expected:.3g} per "
                                  "full pass); the table shows it as undefined", UndefinedEstimateWarning,
                                  stacklevel=2)
                row[name] = float(values.mean())
                row[f"{name}_low"] = min(r.estimates[name].low for r in results)
                row[f"{name}_high"] = max(r.estimates[name].high for r in results)
                row[f"{name}_ess"] = float(np.mean([r.estimates[name].ess for r in results]))
            # rounds where the agent's distribution is undefined and its played action stands in (a warning says so)
            row["played_rounds"] = float(np.mean([r.played_rounds for r in results]))
            if all(r.truth is not None for r in results):  # a synthetic log keeps every action's expected reward
                row["truth"] = float(np.mean([r.truth for r in results]))
            row["assumption"] = POOLED_ASSUMPTION if position == "pooled" else ""
            rows.append(row)
    table = pd.DataFrame(rows)
    table["privacy_scope"] = OFFLINE_PRIVACY_SCOPE
    return table


def _runs(label: str, data, target, seeds, options) -> list:
    """Every seed's evaluation of one target; the warning that its action distribution is undefined in some rounds
    is given once for the target (the seeds' counts in one line), not once per seed; other warnings pass through."""
    from dpbandit.offline.positions import evaluate_positions
    from dpbandit.offline.replay import PlayedActionWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runs = [evaluate_positions(data, target, seed, **options) for seed in seeds]
    played = [w for w in caught if issubclass(w.category, PlayedActionWarning)]
    for w in caught:
        if not issubclass(w.category, PlayedActionWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if played:
        counts = sorted({r.played_rounds for run in runs for r in run.values()})
        warnings.warn(f"agent {label!r}: its action distribution is not defined in {counts[0]}"
                      f"{'' if len(counts) == 1 else f'-{counts[-1]}'} of {data.n_rounds} rounds per seed "
                      "(dpbandit.offline.policies); the estimators use its played action there (one-hot: unbiased, "
                      "noisier; the played_rounds column)", PlayedActionWarning, stacklevel=3)
    return runs


def shown_table(table: pd.DataFrame, estimators) -> pd.DataFrame:
    """The printed view: one ``value [low, high]`` column per estimator."""
    keep = ["agent", "position", "guarantee", "epsilon", "delta", "accepted"] + (["truth"] if "truth" in table else [])
    keep += ["played_rounds"] if table["played_rounds"].any() else []
    if table["position"].nunique() == 1:
        keep.remove("position")
    shown = table[keep].copy()
    for name in estimators:
        shown[name] = [f"{v:.4g} [{lo:.4g}, {hi:.4g}]" if math.isfinite(v) else "undefined" for v, lo, hi in
                       zip(table[name], table[f"{name}_low"], table[f"{name}_high"])]
    return shown


class UndefinedEstimateWarning(UserWarning):
    """An estimate is undefined for some seed (e.g. replay accepted no round): shown as "undefined", NaN in files."""


def _toml(path: str) -> dict:
    from dpbandit.experiment.config import read_toml

    data = read_toml(path)
    agents = data.get("agents", [])
    if not isinstance(agents, list):
        raise ValueError(f"config file {path!r}: 'agents' must be [[agents]] tables, each with a 'type' key, got "
                         f"{agents!r}")
    return data


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``dpbandit replay`` (one-line usage errors, :mod:`dpbandit.experiment.arguments`)."""
    from dpbandit.experiment.arguments import OneLineParser

    p = OneLineParser(prog="dpbandit replay", description=__doc__.split("\n\n")[0])
    p.add_argument("log", help="log file: .npz (OBP bandit-feedback dict), .csv or .parquet table")
    p.add_argument("--agent", action="append", default=[], help="TYPE[:key=value,...] (repeatable)")
    p.add_argument("--config", help="TOML file whose [[agents]] tables list the agents")
    p.add_argument("--seeds", type=int, default=5, help="replays per agent (seeds 0..N-1; default 5)")
    p.add_argument("--horizon", type=int, help="accepted rounds an agent learns from in replay (default: all a pass "
                                               "over the whole log accepts); the estimators always use the whole log")
    p.add_argument("--policy", action="append", default=[],
                   help="a static policy to evaluate: uniform, arm:K or a .npy file of probabilities (n, K) "
                        "(repeatable)")
    p.add_argument("--estimator", action="append", default=[], choices=ESTIMATOR_CHOICES,
                   help="estimator to report (repeatable; default replay, dm, ips, snips, dr, sndr)")
    p.add_argument("--reward-model", dest="reward_model", default="ridge", choices=REWARD_MODEL_CHOICES,
                   help="reward model of DM and the DR family (default ridge)")
    p.add_argument("--folds", type=int, default=2, help=f"cross-fitting folds of the reward model (2..{MAX_FOLDS})")
    p.add_argument("--clip", type=float, help="weight level of switch_dr, clipped_ips and clipped_dr (default 10)")
    p.add_argument("--interval", default="bca", choices=("bca", "t"), help="interval over the data (default bca)")
    p.add_argument("--uniform", action="store_true", help="the log has no propensities and was logged uniformly")
    p.add_argument("--shuffle", action="store_true", help="replay the log in a seeded random order")
    p.add_argument("--n-actions", dest="n_actions", type=int, help="number of actions (tables: default max+1)")
    p.add_argument("--context-norm", dest="context_norm", default="l2", choices=("l2", "linf"))
    p.add_argument("--context-bound", dest="context_bound", type=float, default=1.0,
                   help="contexts are clipped into this ball (the bound private agents calibrate to)")
    p.add_argument("--reward-range", dest="reward_range", type=float, nargs=2, default=(0.0, 1.0),
                   metavar=("LOW", "HIGH"), help="stated reward range (default 0 1)")
    p.add_argument("--theta-norm", dest="theta_norm", default="l2", choices=("l1", "l2", "linf"))
    p.add_argument("--theta-bound", dest="theta_bound", type=float, default=math.inf,
                   help="assumed bound on the linear reward model (UCB agents need one)")
    p.add_argument("--out", help="write the table to this CSV file (never over the log or the config; an existing "
                                 "file only with --overwrite)")
    p.add_argument("--overwrite", action="store_true", help="let --out replace an existing file")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run ``dpbandit replay`` (errors propagate to the one-line handler of ``dpbandit``'s main)."""
    from dpbandit.experiment.config import _agent_from_mapping
    from dpbandit.files import check_output, write_atomic
    from dpbandit.offline import read_logged

    args = build_parser().parse_args(argv)
    specs = [_agent_spec(a) for a in args.agent]
    if args.config:
        specs += [_agent_from_mapping(a, i) for i, a in enumerate(_toml(args.config).get("agents", []))]
    if not 1 <= args.seeds <= MAX_REPLAY_SEEDS:
        raise ValueError(f"--seeds must be in [1, {MAX_REPLAY_SEEDS}] (replays per agent; the intervals are over "
                         f"the data), got {args.seeds}")
    if args.out:  # before any work: a refused output wastes no replay
        check_output(args.out, kind="single", overwrite=args.overwrite,
                     inputs=[args.log] + ([args.config] if args.config else []))
    if not 2 <= args.folds <= MAX_FOLDS:
        raise ValueError(f"--folds must be in [2, {MAX_FOLDS}], got {args.folds}")
    if args.clip is not None and not (args.clip > 0):
        raise ValueError(f"--clip must be > 0 (a weight level; inf for none), got {args.clip}")
    if args.horizon is not None and args.horizon < 1:
        raise ValueError(f"--horizon must be >= 1, got {args.horizon}")
    if args.n_actions is not None and not 2 <= args.n_actions <= 10**6:
        raise ValueError(f"--n-actions must be in [2, 1000000], got {args.n_actions}")
    if not specs and not args.policy:
        raise ValueError("name at least one agent or policy: --agent TYPE (e.g. --agent random), --config FILE.toml "
                         "or --policy uniform")
    from dpbandit.offline.open_bandit import is_open_bandit_table, read_open_bandit

    if is_open_bandit_table(args.log):
        data = read_open_bandit(args.log)
        k_source = ("Open Bandit Dataset: the items of item_context.csv" if data.action_context is not None else
                    "Open Bandit Dataset: inferred as max(item_id) + 1")
    else:
        data = read_logged(args.log, n_actions=args.n_actions)
        k_source = ("--n-actions" if args.n_actions is not None else
                    "the file's n_actions" if Path(args.log).suffix.lower() == ".npz" else
                    "inferred as max(action) + 1: pass --n-actions if some actions never appear")
    policies = [(text, _policy_spec(text, data)) for text in args.policy]
    estimators = tuple(dict.fromkeys(args.estimator)) or None
    table = replay_table(data, specs, range(args.seeds), horizon=args.horizon, uniform=args.uniform,
                         shuffle=args.shuffle, context_norm=args.context_norm, context_bound=args.context_bound,
                         reward_range=tuple(args.reward_range), theta_norm=args.theta_norm,
                         theta_bound=args.theta_bound, estimators=estimators, reward_model=args.reward_model,
                         folds=args.folds, clip=args.clip, interval=args.interval, policies=policies)
    positions = "" if data.position is None else f", positions {data.positions} (and pooled)"
    print(f"{Path(args.log).name}: {data.n_rounds} logged rounds, K={data.n_actions} actions ({k_source}), "
          f"d={data.dim}, propensities {'logged' if data.pscore is not None else 'uniform (declared)'}{positions}; "
          f"{args.seeds} seed(s); 95% intervals over the data ({args.interval})")
    from dpbandit.offline.replay import DEFAULT_ESTIMATORS

    with pd.option_context("display.width", 200, "display.max_columns", 30, "display.max_colwidth", 40):
        print(shown_table(table, estimators or DEFAULT_ESTIMATORS).to_string(
            index=False, float_format=lambda x: f"{x:.4g}"))
    if (table["position"] == "pooled").any():
        print(f"\nPooled rows: {table['assumption'][table['position'] == 'pooled'].iloc[0]}")
    print(f"\nPrivacy: {table['privacy_scope'].iloc[0]}")
    if args.out:
        inputs = [args.log] + ([args.config] if args.config else [])
        path = write_atomic(args.out, lambda p: table.to_csv(p, index=False), kind="single",
                            overwrite=args.overwrite, inputs=inputs)
        print(f"Table: {path}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
