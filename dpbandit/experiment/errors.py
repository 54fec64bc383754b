"""Expected failures of the command line: one line on stderr and exit code 2, never a traceback.

Every ``dpbandit`` subcommand (and each runner's own ``main``) reports an expected failure with :func:`report`:
bad input (``ValueError``, ``TypeError``: unknown ids, invalid parameters, sizes that cannot fit), I/O errors
(``OSError``: an output folder that is not writable or is a file), a run directory in use
(:class:`~dpbandit.experiment.rundir.RunLockedError`), gymnasium's own errors and ``MemoryError``. With ``--debug``
(``dpbandit --debug ...``) or the environment variable ``DPBANDIT_DEBUG=1`` the exception propagates with its
traceback instead. Anything else is a bug and keeps its traceback.

Ctrl-C (``KeyboardInterrupt``) ends a command with one line, ``"<prog>: interrupted: ..."`` (a run says how many
finished jobs it kept: :class:`RunInterrupted`), and exit code 130, the shell's code for SIGINT.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import gymnasium

from dpbandit.experiment.rundir import RunLockedError

__all__ = ["EXPECTED", "RunInterrupted", "debug_enabled", "one_line", "one_line_warnings", "report", "run_command",
           "set_debug", "INTERRUPTED"]

#: Exception types the command line reports in one line (exit code 2).
EXPECTED: tuple[type[BaseException], ...] = (
    ValueError, TypeError, OSError, MemoryError, RunLockedError, gymnasium.error.Error,
)
_DEBUG = [False]
#: Exit code of a command stopped by Ctrl-C (128 + SIGINT, as shells report it).
INTERRUPTED = 130


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during a run, raised once its workers are stopped: ``finished`` jobs are kept in the run directory."""

    def __init__(self, finished: int):
        self.finished = int(finished)
        super().__init__(f"{self.finished} finished job{'s' * (self.finished != 1)} kept; rerun the same command "
                         "to resume")


def set_debug(on: bool) -> None:
    """Let expected failures propagate with their traceback (``dpbandit --debug``)."""
    _DEBUG[0] = bool(on)


def debug_enabled() -> bool:
    return _DEBUG[0] or os.environ.get("DPBANDIT_DEBUG", "") not in ("", "0")


def one_line(exc: BaseException) -> str:
    """The exception's message on one line (OSError: "what: strerror: file", without the "[Errno n]" prefix)."""
    if isinstance(exc, OSError) and exc.strerror:
        text = exc.strerror + (f": {exc.filename!r}" if exc.filename else "")
    elif isinstance(exc, MemoryError):
        text = f"out of memory ({exc})" if str(exc) else "out of memory"
    else:
        text = str(exc) or type(exc).__name__
    return " ".join(text.split())


def report(prog: str, exc: BaseException) -> int:
    """Print ``"<prog>: error: <message>"`` on stderr and return 2, or re-raise ``exc`` in debug mode. Call it
    from an ``except EXPECTED`` block."""
    if debug_enabled():
        raise exc
    print(f"{prog}: error: {one_line(exc)}", file=sys.stderr)
    return 2


@contextmanager
def one_line_warnings(prog: str) -> Iterator[None]:
    """Show warnings as ``"<prog>: warning: <message>"`` (one line, no source excerpt) inside the block."""
    def show(message: Any, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        print(f"{prog}: warning: {' '.join(str(message).split())}", file=sys.stderr)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


def run_command(prog: str, command: Callable[..., int], *args: Any) -> int:
    """``command(*args)`` with one-line warnings; an expected failure becomes one line and exit code 2, Ctrl-C one
    line (``"<prog>: interrupted: N finished jobs kept; ..."`` for a run) and exit code 130."""
    with one_line_warnings(prog):
        try:
            return command(*args)
        except EXPECTED as exc:
            return report(prog, exc)
        except KeyboardInterrupt as exc:
            if debug_enabled():
                raise
            detail = str(exc) if isinstance(exc, RunInterrupted) else "stopped"
            print(f"{prog}: interrupted: {detail}", file=sys.stderr, flush=True)
            return INTERRUPTED
