"""``dpbandit notebooks``: the teaching notebooks, the guide pages they cite and the citation file of an installed
dpbandit.

The single source is the repository (``notebooks/*.ipynb``, ``docs/*.md``, ``CITATION.cff``). A wheel ships copies
under ``dpbandit/_shipped/`` in the same layout (``setup.py`` copies them at build time); a source checkout or an
editable install reads the repository. ``dpbandit notebooks`` lists them; ``dpbandit notebooks --copy DIR`` writes
``DIR/notebooks/*.ipynb``, ``DIR/docs/*.md`` (so the notebooks' links, e.g. ``../docs/derivations.md#e5``, open)
and ``DIR/CITATION.cff`` through the output layer (:func:`dpbandit.files.write_atomic`, ``kind="single"``): an
existing file is replaced only with ``--overwrite``, and nothing is written when any target is refused.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import dpbandit
from dpbandit.files import write_atomic

__all__ = ["shipped_files", "copy_notebooks"]

_PACKAGE = Path(dpbandit.__file__).resolve().parent


def shipped_files() -> tuple[Path, list[Path]]:
    """``(base, files)``: the folder holding ``notebooks/``, ``docs/`` and ``CITATION.cff`` (the wheel's copies or
    the source tree) and those files in order, relative to it. ``ValueError`` when this installation has none."""
    for base in (_PACKAGE / "_shipped", _PACKAGE.parent):
        notebooks = sorted((base / "notebooks").glob("*.ipynb"))
        if notebooks and (base / "CITATION.cff").is_file():
            pages = sorted((base / "docs").glob("*.md"))
            return base, [p.relative_to(base) for p in (*notebooks, *pages, base / "CITATION.cff")]
    raise ValueError(f"this installation of dpbandit ({_PACKAGE}) holds no notebooks: install it from a wheel or a "
                     "source checkout")


def copy_notebooks(folder: str | Path, *, overwrite: bool = False) -> list[Path]:
    """Copy the notebooks, the guide pages and ``CITATION.cff`` into ``folder`` (module docstring); returns the
    paths written. Every target is checked first: an existing file without ``overwrite`` is refused (``ValueError``
    naming it) before anything is written."""
    base, files = shipped_files()
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"--copy {str(folder)!r} is a file, not a folder")
    if not overwrite:
        taken = [folder / f for f in files if (folder / f).exists() or (folder / f).is_symlink()]
        if taken:
            raise ValueError(f"{str(taken[0])!r} exists ({len(taken)} of the {len(files)} files do); pass "
                             "--overwrite to replace them, or choose another folder")
    sources = [base / f for f in files]
    return [write_atomic(folder / f, lambda tmp, s=s: tmp.write_bytes(s.read_bytes()), kind="single",
                         overwrite=overwrite, inputs=sources) for f, s in zip(files, sources)]


def command(args: argparse.Namespace) -> int:
    """``dpbandit notebooks [--copy DIR] [--overwrite]``."""
    if args.copy is None:
        base, files = shipped_files()
        for path in files:
            if path.suffix == ".ipynb":
                print(path.name)
        print(f"\nCitation: {base / 'CITATION.cff'}\nCopy them (with the guide pages they cite and the citation): "
              "dpbandit notebooks --copy DIR")
        return 0
    for path in copy_notebooks(args.copy, overwrite=args.overwrite):
        print(f"Wrote {path}")
    return 0


def add_parser(sub) -> None:
    """The ``notebooks`` subcommand of the ``dpbandit`` parser."""
    parser = sub.add_parser("notebooks", help="list the teaching notebooks, or copy them, the guide pages and CITATION.cff (--copy)")
    parser.add_argument("--copy", metavar="DIR", help="write DIR/notebooks/, DIR/docs/ and DIR/CITATION.cff")
    parser.add_argument("--overwrite", action="store_true", help="let --copy replace existing files")
    parser.set_defaults(func=command)
