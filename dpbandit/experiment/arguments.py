"""The argument parser of every ``dpbandit`` command: a usage error is one line on stderr and exit code 2.

argparse's own :meth:`~argparse.ArgumentParser.error` prints the whole usage block and then the error; the command
line's rule (:mod:`dpbandit.experiment.errors`) is one line per expected failure, so :class:`OneLineParser` prints
only ``"<prog>: error: <message> (see <prog> --help)"`` and exits with code 2 (``SystemExit``, as argparse does).
``dpbandit``'s parser and the parsers of the subcommands that parse their own options (``oco``, ``frontier``,
``replay``, the ``reproduce`` targets) are all built from it; sub-parsers inherit it.
"""

from __future__ import annotations

import argparse
from typing import NoReturn

__all__ = ["Distinct", "OneLineParser", "add_allow_long"]


class OneLineParser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` whose usage errors are one line (see the module docstring)."""

    def error(self, message: str) -> NoReturn:
        text = " ".join(str(message).split())
        self.exit(2, f"{self.prog}: error: {text} (see {self.prog} --help)\n")


class Distinct(argparse.Action):
    """A list option (``nargs="+"``) whose values must not repeat: a usage error naming the option otherwise."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values, option_string=None):
        if len(set(values)) != len(values):
            parser.error(f"argument {option_string}: values must not repeat, got {' '.join(map(str, values))}")
        setattr(namespace, self.dest, values)


def add_allow_long(parser: argparse.ArgumentParser) -> None:
    """``--allow-long``: the escape from the planned-time refusal (:mod:`dpbandit.experiment.planning`), the same
    flag on every command whose run is planned before any work."""
    parser.add_argument("--allow-long", dest="allow_long", action="store_true",
                        help="run even when the estimated time exceeds a week (refused otherwise, before any work)")
