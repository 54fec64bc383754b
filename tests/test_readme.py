"""The README's two copy-paste commands are the ones CI runs."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```(?:bash|sh)\n(.*?)```", text, flags=re.S)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip().startswith("python3 -m venv")]


def test_readme_has_exactly_two_install_commands():
    commands = _readme_commands()
    assert len(commands) == 2, commands
    assert any("pytest" in c for c in commands)
    assert any("dpbandit run" in c for c in commands)


def test_ci_runs_the_readme_commands_verbatim():
    ci_lines = {line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()}
    for command in _readme_commands():
        assert command in ci_lines, f"README command not run verbatim by .ci/run: {command}"
