"""``dpbandit notebooks`` (issue 29 item 8): an installed user gets the notebooks, the guide pages they cite and the
citation, copied through the output layer (never over an existing file without --overwrite)."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

from dpbandit.experiment import notebooks
from dpbandit.experiment.cli import main

ROOT = Path(__file__).resolve().parents[2]
MD_LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_copy_writes_notebooks_guide_pages_and_citation_whose_links_open(tmp_path, capsys):
    assert main(["notebooks", "--copy", str(tmp_path / "mine")]) == 0
    out = capsys.readouterr().out
    mine = tmp_path / "mine"
    names = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert sorted(p.name for p in (mine / "notebooks").glob("*.ipynb")) == names
    assert (mine / "CITATION.cff").read_bytes() == (ROOT / "CITATION.cff").read_bytes()
    assert f"Wrote {mine / 'CITATION.cff'}" in out
    for path in (mine / "notebooks").glob("*.ipynb"):
        for cell in nbformat.read(path, as_version=4).cells:
            for link in MD_LINK.findall(cell.source) if cell.cell_type == "markdown" else ():
                if "://" not in link:
                    assert (path.parent / link.partition("#")[0]).is_file(), (path.name, link)


def test_copy_refuses_before_writing_anything(tmp_path, capsys):
    (tmp_path / "CITATION.cff").write_text("mine")
    assert main(["notebooks", "--copy", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("dpbandit notebooks: error: ") and "--overwrite" in err[0]
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["CITATION.cff"]
    assert main(["notebooks", "--copy", str(tmp_path), "--overwrite"]) == 0
    assert (tmp_path / "CITATION.cff").read_bytes() == (ROOT / "CITATION.cff").read_bytes()


def test_an_installed_wheel_reads_its_shipped_copies(tmp_path, monkeypatch):
    shipped = tmp_path / "dpbandit" / "_shipped"
    for name in ("notebooks/01_a.ipynb", "docs/guide.md", "CITATION.cff"):
        (shipped / name).parent.mkdir(parents=True, exist_ok=True)
        (shipped / name).write_text("x")
    monkeypatch.setattr(notebooks, "_PACKAGE", tmp_path / "dpbandit")
    base, files = notebooks.shipped_files()
    assert base == shipped and [f.as_posix() for f in files] == ["notebooks/01_a.ipynb", "docs/guide.md",
                                                                  "CITATION.cff"]
