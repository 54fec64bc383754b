"""Reproductions of published results, each under a run directory like every other run.

    dpbandit reproduce table-5.1 [--quick] [options]    Han et al.'s Table 5.1, published vs correctly calibrated
    dpbandit reproduce figure-5.1 [--quick] [options]   Han et al.'s Figure 5.1 (module figure_5_1)
    dpbandit reproduce fliphat [--quick] [options]      FLIPHAT's experiment, published vs correct (module fliphat)

:data:`REPRODUCTIONS` maps a target name to its ``main(argv) -> exit code``; :func:`main` dispatches
``[target, *options]`` to it.
"""

from __future__ import annotations

import sys

__all__ = ["REPRODUCTIONS", "build_parser", "main"]


def _table_5_1(argv: list[str]) -> int:
    from dpbandit.experiment.reproduce.table_5_1 import main as table_main

    return table_main(argv)


def _figure_5_1(argv: list[str]) -> int:
    from dpbandit.experiment.reproduce.figure_5_1 import main as figure_main

    return figure_main(argv)


def _fliphat(argv: list[str]) -> int:
    from dpbandit.experiment.reproduce.fliphat import main as fliphat_main

    return fliphat_main(argv)


#: target name -> main(argv) of that reproduction (modules are imported only when their target runs).
REPRODUCTIONS = {"table-5.1": _table_5_1, "figure-5.1": _figure_5_1, "fliphat": _fliphat}
_MODULES = {"table-5.1": "table_5_1", "figure-5.1": "figure_5_1", "fliphat": "fliphat"}


def build_parser(target: str):
    """The argument parser of reproduction ``target`` (one of :data:`REPRODUCTIONS`)."""
    from importlib import import_module

    return import_module(f"{__name__}.{_MODULES[target]}").build_parser()


def main(argv: list[str] | None = None) -> int:
    """``main(["table-5.1", "--quick"])``: run one reproduction. A missing or unknown target is one line on stderr
    naming the targets (exit code 2); ``--help`` lists them."""
    argv = list(sys.argv[1:] if argv is None else argv)
    targets = ", ".join(REPRODUCTIONS)
    if argv and argv[0] in ("-h", "--help"):
        print(f"usage: dpbandit reproduce TARGET [options]   (TARGET: {targets}; 'dpbandit reproduce TARGET --help' "
              f"lists its options)\n\n{__doc__}")
        return 0
    if not argv:
        problem = "name a target"
    elif argv[0] not in REPRODUCTIONS:
        problem = f"invalid choice: {argv[0]!r} is not a target" if not argv[0].startswith("-") else \
            f"name a target before the options (got {argv[0]!r})"
    else:
        return REPRODUCTIONS[argv[0]](argv[1:])
    print(f"dpbandit reproduce: error: {problem}; choose one of {targets} (e.g. dpbandit reproduce table-5.1 --quick)",
          file=sys.stderr)
    return 2
