"""The command line's one-line error, as the tests check it (exit code 2 is checked by the caller)."""


def one_line_error(err: str, *needles: str) -> str:
    """Assert ``err`` (a command's stderr) is exactly one ``...: error: ...`` line holding every needle; return it."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err and ": error: " in lines[0], err
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]
