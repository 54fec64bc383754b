"""The documentation covers every public entry point."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _make_api():
    spec = importlib.util.spec_from_file_location("make_api", ROOT / "docs" / "make_api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_api_reference_lists_every_public_name():
    api = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    missing = []
    for module in _make_api().public_modules():
        if f"## `{module.__name__}`" not in api:
            missing.append(module.__name__)
        missing += [f"{module.__name__}.{n}" for n in module.__all__ if f"**`{n}" not in api]
    assert not missing, f"docs/api.md is stale (run python docs/make_api.py): {missing[:20]}"


def test_user_guide_covers_every_cli_command():
    from dpbandit.experiment.cli import build_parser

    guide = (ROOT / "docs" / "user-guide.md").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    for command in sub.choices:
        assert f"dpbandit {command}" in guide + readme, command
