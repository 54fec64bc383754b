"""Links of the built documentation site: rewrite what the sources link to, then check that every link opens.

Used by ``docs/build_site.py`` (a broken link fails the build):

* :func:`rewrite_markdown_links` — the guide pages and notebooks link Markdown files as they sit in the repository
  (``docs/auditor.md``, ``../docs/derivations.md#e5``, ``api.md``); on the site those are the rendered guide pages
  (``guide/auditor.html``) and the API reference. Links to a Markdown file the site does not render stay as they are
  (and fail the check).
* :func:`repair_api_anchors` — pdoc links every identifier it recognises, also members it does not render (private
  base classes, ``__init__``, attributes inherited from Gymnasium). Such a link goes to the closest rendered parent
  (``#Agent.__init__`` -> ``#Agent``) or, with none, becomes plain text: a reader never lands on nothing.
* :func:`broken_links` — every ``href``/``src`` of every page that points into the site must name an existing file
  and, with a ``#fragment``, an ``id``/``name`` on that page.
"""

from __future__ import annotations

import os
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

__all__ = ["broken_links", "rewrite_markdown_links", "repair_api_anchors"]

_HREF = re.compile(r"""href=(['"])([^'"]*)\1""")
_ANCHOR = re.compile(r"""<a ([^>]*?)href=(['"])([^'"]*)\2([^>]*)>(.*?)</a>""", re.S)


class _Scan(HTMLParser):
    """The ids (``id``/``name`` attributes) and links (``href``/``src``) of one page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        for key, value in attrs:
            if key in ("id", "name") and value:
                self.ids.add(value)
            elif key in ("href", "src") and value is not None:
                self.links.append(value)


def _scan(path: Path) -> _Scan:
    scan = _Scan()
    scan.feed(path.read_text(encoding="utf-8"))
    return scan


def _internal(link: str) -> bool:
    return not (urlsplit(link).scheme or link.startswith("//"))


def rewrite_markdown_links(site: Path, pages: dict[str, str]) -> None:
    """Point links to Markdown files at their rendered pages: ``pages`` maps a Markdown file name, lower case
    (``"auditor.md"``, ``"readme.md"``), to its page relative to ``site`` (``"guide/auditor.html"``)."""
    for path in [*site.glob("guide/*.html"), *site.glob("notebooks/*.html"), site / "index.html"]:
        if not path.is_file():
            continue

        def replace(match: re.Match, here: Path = path.parent) -> str:
            link = match.group(2)
            parts = urlsplit(link)
            target = pages.get(Path(unquote(parts.path)).name.lower()) if _internal(link) else None
            if target is None or not parts.path.endswith(".md"):
                return match.group(0)
            new = Path(os.path.relpath(site / target, here)).as_posix()
            return f"href={match.group(1)}{new}{'#' + parts.fragment if parts.fragment else ''}{match.group(1)}"

        text = path.read_text(encoding="utf-8")
        new_text = _HREF.sub(replace, text)
        if new_text != text:
            path.write_text(new_text, encoding="utf-8")


def repair_api_anchors(api: Path) -> int:
    """Relink (closest rendered parent) or unlink pdoc's anchors to members it did not render; returns how many."""
    ids = {path.resolve(): _scan(path).ids for path in api.rglob("*.html")}
    repaired = 0
    for path in ids:

        def replace(match: re.Match, here: Path = path) -> str:
            nonlocal repaired
            before, quote, link, after, text = match.groups()
            parts = urlsplit(link)
            if not _internal(link) or not parts.fragment:
                return match.group(0)
            target = (here.parent / unquote(parts.path)).resolve() if parts.path else here
            known = ids.get(target)
            if known is None or parts.fragment in known:
                return match.group(0)
            repaired += 1
            names = parts.fragment.split(".")
            parent = next((".".join(names[:k]) for k in range(len(names) - 1, 0, -1)
                           if ".".join(names[:k]) in known), None)
            if parent is None:
                return text
            return f"<a {before}href={quote}{parts.path}#{parent}{quote}{after}>{text}</a>"

        text = path.read_text(encoding="utf-8")
        new_text = _ANCHOR.sub(replace, text)
        if new_text != text:
            path.write_text(new_text, encoding="utf-8")
    return repaired


def broken_links(site: Path) -> list[str]:
    """Every link of the site's pages into the site that does not open: ``"page: link (reason)"``."""
    root = site.resolve()
    scans = {path.resolve(): _scan(path) for path in root.rglob("*.html")}
    broken = []
    for page, scan in sorted(scans.items()):
        for link in scan.links:
            if not _internal(link) or link.startswith("data:"):
                continue
            parts = urlsplit(link)
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            where = page.relative_to(root).as_posix()
            if not target.exists():
                broken.append(f"{where}: {link} (no such file)")
            elif parts.fragment and target in scans and unquote(parts.fragment) not in scans[target].ids:
                broken.append(f"{where}: {link} (no such anchor)")
    return broken
