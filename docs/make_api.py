"""Regenerate docs/api.md from the package's docstrings: ``python docs/make_api.py``.

For every public module (those with ``__all__``) it lists each public name with its signature and the first
paragraph of its docstring. tests/test_docs.py checks that the committed file covers every public name.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

import dpbandit

OUT = Path(__file__).with_name("api.md")


def _first_paragraph(obj) -> str:
    doc = inspect.getdoc(obj) or ""
    return " ".join(doc.split("\n\n")[0].split())


def _signature(obj) -> str:
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return ""


def public_modules() -> list:
    names = sorted(m.name for m in pkgutil.walk_packages(dpbandit.__path__, "dpbandit.") if not m.name.endswith("__main__"))
    modules = [importlib.import_module(n) for n in ["dpbandit", *names]]
    return [m for m in modules if getattr(m, "__all__", None) and not m.__name__.split(".")[-1].startswith("_")]


def render() -> str:
    lines = [
        "# API reference",
        "",
        "Generated from the docstrings by `python docs/make_api.py`; each entry shows the signature and the first",
        "paragraph of the docstring (read the module source for the full text, formulas and spec citations).",
        "",
    ]
    for module in public_modules():
        lines += [f"## `{module.__name__}`", "", _first_paragraph(module), ""]
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.ismodule(obj):
                continue
            kind = "class" if inspect.isclass(obj) else ("function" if callable(obj) else "constant")
            sig = _signature(obj) if kind != "constant" else ""
            lines.append(f"- **`{name}{sig}`** ({kind}) {_first_paragraph(obj) if kind != 'constant' else ''}".rstrip())
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    OUT.write_text(render(), encoding="utf-8")
    print(f"wrote {OUT}")
