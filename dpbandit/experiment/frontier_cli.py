"""``dpbandit frontier``: the command line of the privacy-regret frontier (:mod:`dpbandit.experiment.frontier`):
its options, the sweep they describe, and what the command prints (the frontier table, the verdicts, the agents
that refuse the environment, where the files went).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import pandas as pd

from dpbandit.experiment.arguments import add_allow_long
from dpbandit.experiment.config import BATCH_MODES
from dpbandit.experiment.errors import run_command
from dpbandit.experiment import frontier
from dpbandit.experiment.frontier import QUICK, FrontierConfig, beating_lines, run_frontier

__all__ = ["add_arguments", "build_parser", "cli_command", "config_from_args", "main"]


def _epsilon_arg(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number > 0 or 'inf', got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a number > 0 or 'inf', got {text!r}")
    return value


def _int_arg(text: str) -> int:
    try:
        value = int(float(text)) if float(text).is_integer() else None
    except ValueError:
        value = None
    if value is None or value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1 (1e4 accepted), got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``dpbandit frontier`` options (shared by :func:`main` and the ``dpbandit`` command)."""
    parser.add_argument("--env", default=FrontierConfig.env_id, help="environment id (default: %(default)s)")
    parser.add_argument("--agents", nargs="+", help="private agents to sweep (default: all registered private agents)")
    parser.add_argument("--references", nargs="+", default=["random", "linucb"],
                        help="non-private reference agents (default: random linucb)")
    parser.add_argument("--epsilons", nargs="+", type=_epsilon_arg, help="epsilon grid, 'inf' = noise off "
                        "(default: 0.5 1 2 4 8 16 inf)")
    parser.add_argument("--horizons", nargs="+", type=_int_arg, help="horizons T (default: 1e4 1e5)")
    parser.add_argument("--seeds", type=_int_arg, help="number of seeds (default 5)")
    parser.add_argument("--delta", type=float, help="delta of every private agent (default: each agent's, 1/T)")
    parser.add_argument("--n-jobs", dest="n_jobs", type=_int_arg, help="parallel jobs (default 2)")
    parser.add_argument("--batch", choices=BATCH_MODES, help="auto (default): seeds of agents with a batched form "
                        "run in lockstep, same results; off: every seed alone")
    parser.add_argument("--out", help="parent folder of the run directory (default: runs)")
    parser.add_argument("--quick", action="store_true",
                        help="tiny grid (epsilon 1, 16, inf; T = 500, 2000; 2 seeds): well under a minute")
    parser.add_argument("--fresh", action="store_true", help="discard an earlier sweep of this name, do not resume")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_allow_long(parser)


def config_from_args(args: argparse.Namespace) -> FrontierConfig:
    kwargs: dict[str, Any] = {"env_id": args.env, "references": tuple(args.references)}
    if args.quick:
        kwargs.update(QUICK, name="frontier-quick")
    for key in ("agents", "epsilons", "horizons"):
        if getattr(args, key):
            kwargs[key] = tuple(getattr(args, key))
    for key in ("seeds", "delta", "n_jobs", "batch", "out"):  # explicit options override --quick
        if getattr(args, key) is not None:
            kwargs[key] = getattr(args, key)
    return FrontierConfig(**kwargs)


def cli_command(args: argparse.Namespace) -> int:
    """Run the sweep described by parsed :func:`add_arguments` options and print where everything went."""
    fc = config_from_args(args)
    result = run_frontier(fc, progress=not args.no_progress, fresh=args.fresh, allow_long=args.allow_long)
    with pd.option_context("display.width", 140, "display.max_columns", 20):
        cols = ["agent", "epsilon", "horizon", "seeds", "final_regret_mean", "final_regret_ci95", "guarantee"]
        print(result.frontier[cols].to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    if not result.beats_random.empty:
        print("\n" + "\n".join(beating_lines(result.beats_random, result.results)))
    if fc.refused:
        print("\nNot swept (they refuse this environment):\n" + "\n".join(f"  {n}: {why}" for n, why in fc.refused.items()))
    print(f"\nResults table: {result.run_dir / 'results.csv'}")
    print(f"Frontier table: {result.run_dir / 'frontier.csv'}")
    print(f"Frontier plot:  {result.plot_path}")
    print(f"Manifest:       {result.run_dir / 'manifest.json'}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``dpbandit frontier`` (one-line usage errors, :mod:`dpbandit.experiment.arguments`)."""
    from dpbandit.experiment.arguments import OneLineParser

    parser = OneLineParser(prog="dpbandit frontier", description=frontier.__doc__.splitlines()[0])
    add_arguments(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """``dpbandit frontier [options]`` (also ``python -m dpbandit.experiment.frontier``)."""
    return run_command("dpbandit frontier", cli_command, build_parser().parse_args(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
