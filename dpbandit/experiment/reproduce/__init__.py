"""Reproductions of published results, each under a run directory like every other run.

    dpbandit reproduce table-5.1 [--quick] [options]    Han et al.'s Table 5.1, published vs correctly calibrated
    dpbandit reproduce figure-5.1 [--quick] [options]   Han et al.'s Figure 5.1 (module figure_5_1)
    dpbandit reproduce fliphat [--quick] [options]      FLIPHAT's experiment, published vs correct (module fliphat)

:data:`REPRODUCTIONS` maps a target name to its ``main(argv) -> exit code``; :func:`main` dispatches
``[target, *options]`` to it.
"""

from __future__ import annotations

import sys

__all__ = ["REPRODUCTIONS", "main"]


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


def main(argv: list[str] | None = None) -> int:
    """``main(["table-5.1", "--quick"])``: run one reproduction; prints the targets on a bad or missing name."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in REPRODUCTIONS:
        print(f"dpbandit reproduce: choose one of {', '.join(REPRODUCTIONS)}", file=sys.stderr)
        return 2
    return REPRODUCTIONS[argv[0]](argv[1:])
