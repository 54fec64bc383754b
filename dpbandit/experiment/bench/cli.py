"""``dpbandit bench``: score private agents on the benchmark suite and write the scorecard.

    dpbandit bench --quick                         every built-in private agent, the quick suite (minutes)
    dpbandit bench                                 the full suite (hours: the planned time is printed first)
    dpbandit bench --quick --agent mypkg.mine:Mine only the new agent (and its noise-off version), compared with the
                                                   shipped reference results of the built-in agents on the same seeds
"""

from __future__ import annotations

import argparse
import sys

import pandas as pd

from dpbandit.experiment.errors import run_command

__all__ = ["add_arguments", "build_parser", "config_from_args", "cli_command", "main"]


def _epsilon(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0 (noise off, inf, is always added), got {text!r}")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``dpbandit bench``."""
    from dpbandit.experiment.arguments import Distinct, add_allow_long
    from dpbandit.experiment.bench.suite import scenario_names, suite_name

    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_const", const="quick", dest="size",
                      help="the quick sizes (short horizons, 5 seeds, epsilon 1 and 8 and noise off): minutes")
    size.add_argument("--tiny", action="store_const", const="tiny", dest="size", help=argparse.SUPPRESS)  # tests
    parser.add_argument("--suite", default=suite_name(), choices=(suite_name(),),
                        help="the suite (default and only one: %(default)s)")
    parser.add_argument("--agent", action="append", dest="agents", metavar="TYPE",
                        help="score only this agent: a registry name or package.module:Class (imports that module: "
                             "use only code you trust); repeatable. Default: every built-in private agent")
    parser.add_argument("--no-reference", dest="use_reference", action="store_false",
                        help="with --agent: run uniform random play here instead of reading the shipped reference "
                             "(the built-in agents' rows are then left out)")
    parser.add_argument("--scenarios", nargs="+", action=Distinct, choices=scenario_names(), metavar="NAME",
                        help="a subset of the suite's scenarios (default: all)")
    parser.add_argument("--epsilons", nargs="+", type=_epsilon, action=Distinct,
                        help="replace every scenario's epsilon grid (finite values; noise off is always added)")
    parser.add_argument("--seeds", type=_count, help="the first N seeds instead of the size's")
    parser.add_argument("--audit", action="store_true",
                        help="also run check_private_agent(..., audit=True) (conformance and an empirical audit) per "
                             "scenario and agent, at its smallest epsilon")
    parser.add_argument("--n-jobs", dest="n_jobs", type=_count, default=2, help="parallel jobs (default 2)")
    parser.add_argument("--backend", choices=("local", "dask"), default="local", help="where jobs run")
    parser.add_argument("--dask-address", dest="dask_address", help="dask.distributed scheduler (--backend dask)")
    parser.add_argument("--name", help="run folder name (default: bench-<size>[-<agents>])")
    parser.add_argument("--out", default="runs", help="parent folder of the run directory (default: runs)")
    parser.add_argument("--fresh", action="store_true", help="discard an earlier bench of this name, do not resume")
    add_allow_long(parser)
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def config_from_args(args: argparse.Namespace):
    from dpbandit.experiment.bench.runner import BenchConfig

    return BenchConfig(size=args.size or "full", agents=tuple(args.agents or ()), scenarios=tuple(args.scenarios or ()),
                       epsilons=tuple(args.epsilons) if args.epsilons else None, seeds=args.seeds,
                       use_reference=args.use_reference, audit=args.audit, n_jobs=args.n_jobs,
                       name=args.name or "", out=args.out)


def cli_command(args: argparse.Namespace) -> int:
    """Run the bench and print its table (ratio, interval, epsilon columns) and where everything went."""
    from dpbandit.experiment.bench.runner import run_bench

    if args.dask_address is not None and args.backend != "dask":
        raise ValueError("--dask-address is only used with --backend dask")
    result = run_bench(config_from_args(args), progress=not args.no_progress, fresh=args.fresh,
                       backend=args.backend, dask_address=args.dask_address, allow_long=args.allow_long)
    shown = result.scores[result.scores["agent"] != "random"][[
        "scenario", "agent", "epsilon", "guarantee", "ratio_random", "ratio_random_low", "ratio_random_high",
        "ratio_noise_off", "ratio_noise_off_low", "ratio_noise_off_high", "cpu_us_per_round"]]
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.max_rows", 1000):
        print(shown.to_string(index=False, float_format=lambda x: f"{x:.3g}"))
    print(f"\nScores table: {result.run_dir / 'scores.csv'}")
    print(f"Scorecard:    {result.scorecard}")
    print(f"              {result.scorecard_html}")
    print(f"Results:      {result.run_dir / 'results.csv'} (dpbandit plot / dpbandit compare {result.run_dir})")
    print(f"Manifest:     {result.run_dir / 'manifest.json'}")
    t = result.timing
    load = ", ".join(f"{x:.2f}" for x in t["load_average_1_5_15"]) if t.get("load_average_1_5_15") else "?"
    resumed = f" ({t['resumed_jobs']} of {t['jobs']} jobs read back)" if t.get("resumed_jobs") else ""
    print(f"Time:         {result.seconds:.0f} s wall; CPU {t['jobs_cpu_seconds']:.0f} s in jobs{resumed}, "
          f"{result.cpu_seconds:.0f} s in this process; load average {load}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from dpbandit.experiment.arguments import OneLineParser

    parser = OneLineParser(prog="dpbandit bench", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """``python -m dpbandit.experiment.bench.cli`` (the same as ``dpbandit bench``)."""
    return run_command("dpbandit bench", cli_command, build_parser().parse_args(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
