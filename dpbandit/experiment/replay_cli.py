"""``dpbandit replay``: evaluate agents on a log file (replay, IPS, doubly robust; :mod:`dpbandit.offline`).

    dpbandit replay LOG.npz --agent random --agent linucb --agent dp_ucb:epsilon=1 --seeds 5
    dpbandit replay LOG.csv --config agents.toml --uniform --reward-range 0 1 --out replay.csv

LOG is Open Bandit Pipeline's bandit-feedback dict saved with ``numpy.savez`` (``.npz``) or a table
(``.csv``/``.parquet``: ``action``, ``reward``, ``pscore``, context columns). Agents come from ``--agent
TYPE[:key=value,...]`` or the ``[[agents]]`` tables of a TOML file. Each agent is replayed once per seed; the table
shows, per agent, its privacy guarantee and the mean over seeds of each estimate of its reward per round with a
95% interval across seeds (with one seed: the interval over rounds).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

__all__ = ["main", "replay_table"]


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


def replay_table(data, specs, seeds, *, horizon=None, uniform=False, shuffle=False, context_norm="l2",
                 context_bound=1.0, reward_range=(0.0, 1.0), theta_norm="l2", theta_bound=math.inf) -> pd.DataFrame:
    """One row per agent: guarantee, ε, δ, accepted rounds and each estimate (mean over seeds, 95% CI).

    Everything is checked before any replay: the log must let replay expect at least
    :data:`~dpbandit.offline.replay.MIN_EXPECTED_ACCEPTED` accepted rounds (one near-zero propensity makes
    rejection sampling accept almost nothing: refused in one line, :func:`~dpbandit.offline.replay.check_replayable`),
    and every agent is built first (an agent that would be meaningless, e.g. DP-UCB without ``theta_bound``,
    refuses in one line). The default ``horizon`` is the expected number of accepted rounds, ``n_rounds * p_min``.
    An estimate that is still undefined (no accepted round in a seed) is refused, never printed as NaN."""
    from dpbandit.agents import make_agent
    from dpbandit.offline import OFFLINE_PRIVACY_SCOPE, ReplayEnv, evaluate_offline
    from dpbandit.offline.replay import check_replayable

    expected = check_replayable(data, uniform)
    horizon = horizon or max(1, int(expected))
    env = ReplayEnv.from_logged(data, horizon, context_norm=context_norm, context_bound=context_bound,
                                reward_range=reward_range, theta_norm=theta_norm, theta_bound=theta_bound)
    agents = [(spec, make_agent(spec.type, env, **spec.params)) for spec in specs]
    rows = []
    for spec, agent in agents:
        results = [evaluate_offline(data, agent, seed, uniform=uniform, shuffle=shuffle) for seed in seeds]
        report = results[0].privacy_report or {}
        row = {"agent": spec.label, "guarantee": report.get("guarantee", "none"),
               "epsilon": float(report.get("epsilon", math.inf)), "delta": report.get("delta", 0.0),
               "accepted": float(np.mean([r.accepted for r in results]))}
        for name in results[0].estimates:
            means = np.array([r.estimates[name][0] for r in results])
            if not np.isfinite(means).all():
                bad = [seed for seed, r in zip(seeds, results) if not math.isfinite(r.estimates[name][0])]
                raise ValueError(f"agent {spec.label!r}: the {name} estimate is undefined in seed(s) {bad} "
                                 f"(accepted rounds per seed: {[r.accepted for r in results]}; expected "
                                 f"{expected:.3g} per full pass): use a longer log or fewer rounds of tiny propensity")
            if len(results) > 1:
                half = float(stats.t.ppf(0.975, len(means) - 1) * means.std(ddof=1) / math.sqrt(len(means)))
            else:
                half = results[0].estimates[name][1]
            row[name], row[f"{name}_ci95"] = float(means.mean()), half
        rows.append(row)
    table = pd.DataFrame(rows)
    table["privacy_scope"] = OFFLINE_PRIVACY_SCOPE
    return table


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
    p.add_argument("--horizon", type=int, help="accepted rounds per replay (default: n_rounds * min propensity)")
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
    p.add_argument("--out", help="write the table to this CSV file")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run ``dpbandit replay`` (errors propagate to the one-line handler of ``dpbandit``'s main)."""
    from dpbandit.experiment.config import _agent_from_mapping
    from dpbandit.offline import read_logged

    args = build_parser().parse_args(argv)
    specs = [_agent_spec(a) for a in args.agent]
    if args.config:
        specs += [_agent_from_mapping(a, i) for i, a in enumerate(_toml(args.config).get("agents", []))]
    if not specs:
        raise ValueError("name at least one agent: --agent TYPE (e.g. --agent random) or --config FILE.toml")
    if args.seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {args.seeds}")
    data = read_logged(args.log, n_actions=args.n_actions)
    table = replay_table(data, specs, range(args.seeds), horizon=args.horizon, uniform=args.uniform,
                         shuffle=args.shuffle, context_norm=args.context_norm, context_bound=args.context_bound,
                         reward_range=tuple(args.reward_range), theta_norm=args.theta_norm,
                         theta_bound=args.theta_bound)
    print(f"{Path(args.log).name}: {data.n_rounds} logged rounds, {data.n_actions} actions, d={data.dim}, "
          f"propensities {'logged' if data.pscore is not None else 'uniform (declared)'}; {args.seeds} seed(s)")
    shown = table.drop(columns=["privacy_scope"])
    with pd.option_context("display.width", 140, "display.max_columns", 20):
        print(shown.to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    print(f"\nPrivacy: {table['privacy_scope'].iloc[0]}")
    if args.out:
        table.to_csv(args.out, index=False)
        print(f"Table: {args.out}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
