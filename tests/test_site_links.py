"""Issue 29 item 6: the documentation site's links open. The site build rewrites links to Markdown files into their
rendered pages, sends pdoc's links to unrendered members to the closest rendered parent, and fails on any broken
link or anchor; the notebooks cite only what a reader can open (docs/ pages, papers by name), never the specs."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
MD_LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.fixture
def docs(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "docs"))
    for name in ("site_links", "build_site"):
        sys.modules.pop(name, None)
    import build_site
    import site_links

    return build_site, site_links


def _write(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"<!doctype html><html><body>{body}</body></html>", encoding="utf-8")


def test_a_broken_link_or_anchor_fails_the_site_build(docs, tmp_path, monkeypatch, capsys):
    build_site, _ = docs

    def build(out, executed=None):
        _write(out / "index.html", "<a href='guide/a.html#here'>ok</a> <a href='guide/gone.html'>gone</a>")
        _write(out / "guide" / "a.html", "<h2 id='here'>A</h2><a href='#nowhere'>dead anchor</a>"
                                         "<a href='https://example.org/x.md'>outside</a>")
        return out

    monkeypatch.setattr(build_site, "build", build)
    assert build_site.main(["--out", str(tmp_path / "site")]) == 1
    err = capsys.readouterr().err
    assert "broken link: guide/a.html: #nowhere (no such anchor)" in err
    assert "broken link: index.html: guide/gone.html (no such file)" in err
    assert "2 broken link(s)" in err


def test_markdown_links_open_their_rendered_pages(docs, tmp_path):
    _, links = docs
    site = tmp_path / "site"
    _write(site / "guide" / "readme.html", "<a href='docs/episodic-agents.md#a'>x</a><a href=\"api.md\">y</a>"
                                           "<a href='docs/unknown.md'>z</a>")
    _write(site / "notebooks" / "n.html", "<a href='../docs/derivations.md#e5'>E5</a>")
    links.rewrite_markdown_links(site, {"episodic-agents.md": "guide/episodic-agents.html",
                                        "derivations.md": "guide/derivations.html", "api.md": "api/dpbandit.html"})
    guide = (site / "guide" / "readme.html").read_text()
    assert "href='episodic-agents.html#a'" in guide and 'href="../api/dpbandit.html"' in guide
    assert "href='docs/unknown.md'" in guide  # not rendered: left as it is, for the check to report
    assert "href='../guide/derivations.html#e5'" in (site / "notebooks" / "n.html").read_text()


def test_links_to_unrendered_members_go_to_the_parent_or_become_text(docs, tmp_path):
    _, links = docs
    api = tmp_path / "api"
    _write(api / "base.html", "<section id='Agent'></section>")
    _write(api / "mod.html", "<a href='base.html#Agent.__init__'>init</a> <a href='#_Private.x'>x</a>"
                             "<a href='base.html#Agent'>kept</a>")
    assert links.repair_api_anchors(api) == 2
    text = (api / "mod.html").read_text()
    assert "<a href='base.html#Agent'>init</a>" in text and " x<a " in text and "#_Private" not in text
    assert links.broken_links(tmp_path) == []


def _sources():
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_notebooks_cite_what_a_reader_can_open():
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            assert "spec/" not in cell.source, f"{path.name} cites a spec file: not in the repository or the site"
            for link in MD_LINK.findall(cell.source) if cell.cell_type == "markdown" else ():
                if "://" in link:
                    continue
                file, _, anchor = link.partition("#")
                target = (path.parent / file).resolve()
                assert target.is_file(), f"{path.name}: {link} does not exist"
                if anchor:
                    assert f'<a id="{anchor}"></a>' in target.read_text(), f"{path.name}: {link} has no anchor"


def test_the_guide_links_only_markdown_files_the_site_renders():
    rendered = {p.name for p in _sources()} | {"api.md"}
    for source in _sources():
        for link in MD_LINK.findall(source.read_text(encoding="utf-8")):
            file = link.partition("#")[0]
            if file.endswith(".md") and "://" not in file:
                assert Path(file).name in rendered and (source.parent / file).is_file(), f"{source.name}: {link}"
