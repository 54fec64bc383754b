"""The ``dpbandit`` command.

    dpbandit run                       the default quick experiment (non-private baselines, sparse linear bandit)
    dpbandit run --config FILE.toml    an experiment described in TOML (see dpbandit.experiment.config);
                                       re-running it resumes (finished jobs are kept), --fresh starts over
    dpbandit plot RUN_DIR              redraw the figure of a run, frontier or oco run directory
    dpbandit compare RUN_DIR --baseline random   paired differences of final regret against a baseline agent
    dpbandit reproduce table-5.1       Han et al.'s Table 5.1: published vs correctly calibrated (--quick for a subset)
    dpbandit reproduce figure-5.1      Han et al.'s Figure 5.1 in one environment, with random-play reference
    dpbandit reproduce fliphat         FLIPHAT's experiment: published (NOT PRIVATE) vs correct calibration, DP-HDB
    dpbandit frontier [--quick]        privacy-regret frontier: final regret vs epsilon, with random/non-private lines
    dpbandit oco [--quick] [--fresh]   regret of the private OCO learners against the best point in hindsight
    dpbandit bench [--quick]           the benchmark suite: private agents scored against random play and noise off
                                       (--agent module:Class scores a new agent against the shipped reference)
    dpbandit replay LOG --agent TYPE   evaluate agents on logged data (replay, IPS, doubly robust)
    dpbandit envs                      registered environments with their parameters
    dpbandit agents                    available agent types
"""

from __future__ import annotations

import argparse
import inspect
import sys

import pandas as pd

__all__ = ["main"]


def _cmd_run(args: argparse.Namespace) -> int:
    from dpbandit.experiment.config import DEFAULT_CONFIG, EnvSpec, load_config
    from dpbandit.experiment.runner import run_experiment

    config = load_config(args.config or DEFAULT_CONFIG)
    changes = {}
    if args.seeds is not None:
        changes["seeds"] = args.seeds
    if args.n_jobs is not None:
        changes["n_jobs"] = args.n_jobs
    if args.batch is not None:
        changes["batch"] = args.batch
    if args.horizon is not None:
        changes["envs"] = tuple(EnvSpec(e.id, {**e.kwargs, "horizon": args.horizon}, e.label) for e in config.envs)
    if changes:
        config = config.replace(**changes)
    result = run_experiment(
        config,
        out=args.out or True,
        format=args.format,
        progress=not args.no_progress,
        fresh=args.fresh,
        backend=args.backend,
        dask_address=args.dask_address,
        allow_long=args.allow_long,
    )
    if result.resumed_jobs:
        print(f"Resumed: {result.resumed_jobs} finished job(s) read back from {result.run_dir / 'jobs'}")
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(result.summary.to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    print(f"\nResults table: {result.table_path}")
    print(f"Summary table: {result.run_dir / f'summary.{args.format}'}")
    print(f"Regret plot:   {result.plot_path}")
    print(f"Manifest:      {result.run_dir / 'manifest.json'}")
    return 0


def _cmd_plot(args: argparse.Namespace) -> int:
    from dpbandit.experiment.replot import replot

    for path in replot(args.run_dir, args.output, title=args.title, overwrite=args.overwrite):
        print(f"Plot: {path}")
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from dpbandit.experiment.contrasts import compare_run, format_comparison
    from dpbandit.experiment.run_data import load_run

    print(format_comparison(compare_run(load_run(args.run_dir), args.baseline, level=args.level)))
    return 0


def _cmd_envs(args: argparse.Namespace) -> int:
    from dpbandit.envs import registered_envs

    for env_id, kwargs in registered_envs().items():
        params = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
        print(f"{env_id}\n    {params or '(defaults)'}")
    return 0


def _cmd_agents(args: argparse.Namespace) -> int:
    from dpbandit.agents import discover_agents

    for name, cls in discover_agents().items():
        sig = inspect.signature(cls.__init__)
        params = [str(p) for p in list(sig.parameters.values())[2:]]
        doc = (inspect.getdoc(cls) or "").splitlines()[0] if inspect.getdoc(cls) else ""
        kind = "private" if cls.private else "non-private"
        print(f"{name:10s} {kind:12s} {doc}\n{'':10s} params: {', '.join(params) or '-'}")
    return 0


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    from dpbandit import __version__
    from dpbandit.experiment.arguments import OneLineParser, add_allow_long

    parser = OneLineParser(
        prog="dpbandit",
        description="Simulate differentially private contextual bandits and plot their regret.",
    )
    parser.add_argument("--version", action="version", version=f"dpbandit {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of an error instead of one line (also DPBANDIT_DEBUG=1)")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run an experiment (default: a quick comparison of baselines)")
    run.add_argument("--config", help="TOML experiment file (default: the packaged quick experiment)")
    run.add_argument("--out", help="parent folder of the run directory (default: the config's 'out', 'runs')")
    run.add_argument("--seeds", type=_positive_int, help="number of seeds (overrides the config)")
    run.add_argument("--n-jobs", dest="n_jobs", type=_positive_int, help="parallel jobs (overrides the config)")
    run.add_argument("--horizon", type=_positive_int, help="horizon T (overrides the config)")
    run.add_argument("--batch", choices=("auto", "off"),
                     help="auto: seeds of agents with a batched form run in lockstep, same results (the default); "
                          "off: every seed alone (overrides the config)")
    run.add_argument("--no-progress", action="store_true", help="no progress bar (and no planned-work line)")
    add_allow_long(run)
    run.add_argument(
        "--fresh", action="store_true", help="discard an earlier run of this name instead of resuming it"
    )
    run.add_argument("--backend", choices=("local", "dask"), default="local", help="where jobs run (default: local)")
    run.add_argument("--dask-address", dest="dask_address", help="dask.distributed scheduler address (--backend dask)")
    run.add_argument("--format", choices=("csv", "parquet"), default="csv",
                     help="file format of results and summary (parquet needs pyarrow; default csv)")
    run.set_defaults(func=_cmd_run)

    plot = sub.add_parser("plot", help="redraw the figure of a run directory (run, figure-5.1, frontier, oco, bench)")
    plot.add_argument("run_dir", help="a folder written by 'dpbandit run', 'reproduce figure-5.1', 'frontier' or 'oco'")
    plot.add_argument("--output", help="image path (default: RUN_DIR/regret.png); never a file of the run, an existing "
                                       "file only with --overwrite")
    plot.add_argument("--overwrite", action="store_true", help="let --output replace an existing file")
    plot.add_argument("--title", help="plot title")
    plot.set_defaults(func=_cmd_plot)

    compare = sub.add_parser("compare", help="paired differences of every agent against a baseline, over seeds")
    compare.add_argument("run_dir", help="a folder written by 'dpbandit run'")
    compare.add_argument("--baseline", default="random", help="agent label or type (default: random)")
    compare.add_argument("--level", type=float, default=0.95, help="interval level (default 0.95)")
    compare.set_defaults(func=_cmd_compare)

    envs = sub.add_parser("envs", help="list the registered environments and their parameters")
    envs.set_defaults(func=_cmd_envs)

    agents = sub.add_parser("agents", help="list the available agent types")
    agents.set_defaults(func=_cmd_agents)

    from dpbandit.experiment.notebooks import add_parser as add_notebooks

    add_notebooks(sub)

    rep = sub.add_parser("reproduce", help="reproduce a published result (table-5.1, figure-5.1, fliphat); --help "
                         "after it", add_help=False)
    rep.add_argument("options", nargs=argparse.REMAINDER, help="TARGET and its options, e.g. table-5.1 --quick")

    oco = sub.add_parser(
        "oco", help="regret of the (private) online-convex-optimisation learners on regression streams", add_help=False
    )
    oco.add_argument("options", nargs=argparse.REMAINDER, help="options of the OCO runner (--quick, --help)")

    frontier = sub.add_parser(
        "frontier", help="privacy-regret frontier: final regret vs epsilon per horizon (--quick, --help)",
        add_help=False,
    )
    frontier.add_argument("options", nargs=argparse.REMAINDER, help="options of the frontier (--quick, --help)")

    bench = sub.add_parser("bench", help="the benchmark suite of private agents: scorecard with ratios to random "
                           "play and to noise off (--quick, --agent module:Class, --help)", add_help=False)
    bench.add_argument("options", nargs=argparse.REMAINDER, help="options of the bench (--quick, --help)")

    replay = sub.add_parser("replay", help="evaluate agents on logged bandit data (replay, IPS, DR; --help)",
                            add_help=False)
    replay.add_argument("options", nargs=argparse.REMAINDER, help="LOG file and options (--agent TYPE, --help)")
    return parser


#: Subcommands with parsers of their own: everything after the name (``--help`` included) goes to their main()
#: (``reproduce``: to the target's, :data:`dpbandit.experiment.reproduce.REPRODUCTIONS`).
_DELEGATED = {"oco": "dpbandit.experiment.oco", "frontier": "dpbandit.experiment.frontier_cli",
              "replay": "dpbandit.experiment.replay_cli", "reproduce": "dpbandit.experiment.reproduce",
              "bench": "dpbandit.experiment.bench.cli"}


def command_parsers() -> dict[str, argparse.ArgumentParser]:
    """The parser of every command by its words: ``"run"``, ``"plot"``, ..., the delegated commands' own parsers
    (``"oco"``, ``"frontier"``, ``"replay"``) and one per reproduction (``"reproduce table-5.1"``, ...); the
    command line's fuzz test reads every subcommand and flag from here."""
    from importlib import import_module

    from dpbandit.experiment.reproduce import REPRODUCTIONS
    from dpbandit.experiment.reproduce import build_parser as reproduction_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parsers = {name: p for name, p in sub.choices.items() if name not in _DELEGATED}
    parsers.update({name: import_module(module).build_parser() for name, module in _DELEGATED.items()
                    if name != "reproduce"})
    parsers.update({f"reproduce {target}": reproduction_parser(target) for target in REPRODUCTIONS})
    return parsers


def _cmd_delegated(args: argparse.Namespace) -> int:
    from importlib import import_module

    return import_module(_DELEGATED[args.command]).main(args.options)


def main(argv: list[str] | None = None) -> int:
    """Run the ``dpbandit`` command; every expected failure of every subcommand is one line on stderr and exit code
    2 (:mod:`dpbandit.experiment.errors`); ``--debug`` anywhere on the line shows the traceback instead."""
    from dpbandit.experiment.errors import debug_enabled, run_command, set_debug

    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    if argv and argv[0] in _DELEGATED:
        args = argparse.Namespace(command=argv[0], func=_cmd_delegated, options=argv[1:])
    else:
        args = parser.parse_args(argv)
    previous = debug_enabled()
    set_debug(debug or previous)
    try:
        return run_command(f"dpbandit {args.command}", args.func, args)
    finally:
        set_debug(previous)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
