"""Process helpers of the process tests: they wait for conditions, never for a wall-clock budget of the work."""

from __future__ import annotations

import os
import time
from pathlib import Path


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie has ended; only its exit status waits for its new parent)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    except OSError:  # pragma: no cover - no /proc
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return state != "Z"


def poll(condition, limit: float) -> bool:
    """Poll ``condition()`` until it holds or ``limit`` seconds pass (a hang guard); its last value."""
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
