"""Build the documentation site offline: ``python docs/build_site.py [--out site] [--executed DIR]``.

* ``site/api/``: the API reference of every module, rendered by pdoc from the docstrings (full text, not only the
  first paragraph as in ``docs/api.md``);
* ``site/guide/``: ``README.md`` and the pages of ``docs/`` (all but the short ``api.md``) rendered from Markdown;
* ``site/notebooks/``: the teaching notebooks *with their outputs*: the executed copies in ``--executed DIR``
  (``.ci/run`` lets the test suite save them there, so nothing runs twice) or, without it, executed here;
* ``site/index.html``: links to all of it.

Nothing is downloaded (pdoc, markdown2 and pygments render everything; figures are embedded). Links to Markdown
files become links to their rendered pages, pdoc's links to members it does not render go to the closest rendered
parent (``docs/site_links.py``), and then every link is checked. Any warning — a docstring pdoc cannot resolve, a
notebook without outputs — and any broken link or anchor fails the build (exit code 1).
"""

from __future__ import annotations

import argparse
import base64
import html
import shutil
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [("README.md", "Overview"), ("docs/user-guide.md", "User guide"), ("docs/guarantees.md", "Guarantees"),
         ("docs/ARCHITECTURE.md", "Architecture"), ("docs/auditor.md", "Empirical auditor")]
STYLE = """body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;line-height:1.5}
pre{background:#f6f8fa;padding:.6rem;overflow-x:auto}code{background:#f6f8fa}table{border-collapse:collapse}
td,th{border:1px solid #ccc;padding:.2rem .5rem}.out{border-left:3px solid #9bd;margin-left:.5rem}
img{max-width:100%}"""


def _site_links():
    """``docs/site_links.py``, loaded by path (this script also runs when loaded by path, e.g. by the tests)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("site_links", Path(__file__).with_name("site_links.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _page(title: str, body: str, depth: int = 1) -> str:
    home = "../" * depth + "index.html"
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)} — dpbandit</title>"
            f"<style>{STYLE}</style></head><body><p><a href='{home}'>dpbandit documentation</a></p>{body}"
            "</body></html>")


def _markdown(text: str) -> str:
    import markdown2

    return markdown2.markdown(text, extras=["fenced-code-blocks", "tables", "code-friendly", "header-ids"])


def build_api(out: Path) -> None:
    """pdoc over every module of the package (pdoc itself would skip the submodules of a package whose ``__all__``
    does not list them); dpbandit's lazily imported names are resolved first so pdoc sees them."""
    import pkgutil

    from pdoc import doc, render

    import dpbandit

    for name in getattr(dpbandit, "_LAZY", {}):
        setattr(dpbandit, name, getattr(dpbandit, name))
    render.configure(docformat="restructuredtext", footer_text=f"dpbandit {dpbandit.__version__}", search=True)
    names = ["dpbandit", *sorted(m.name for m in pkgutil.walk_packages(dpbandit.__path__, "dpbandit.")
                                 if not m.name.endswith("__main__"))]
    modules = {name: doc.Module.from_name(name) for name in names}
    for module in modules.values():
        path = out / f"{module.fullname.replace('.', '/')}.html"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render.html_module(module, modules), encoding="utf-8")
    (out / "index.html").write_text(render.html_index(modules), encoding="utf-8")
    (out / "search.js").write_text(render.search_index(modules), encoding="utf-8")


def build_guide(out: Path) -> list[tuple[str, str]]:
    out.mkdir(parents=True, exist_ok=True)
    links = []
    others = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")
                    if p.name != "api.md" and str(p.relative_to(ROOT)) not in dict(PAGES))
    for source, title in [*PAGES, *((o, Path(o).stem.replace("-", " ").capitalize()) for o in others)]:
        name = Path(source).stem.lower() + ".html"
        (out / name).write_text(_page(title, _markdown((ROOT / source).read_text(encoding="utf-8"))),
                                encoding="utf-8")
        links.append((f"guide/{name}", title))
    return links


def _outputs(cell) -> str:
    parts = []
    for output in cell.get("outputs", []):
        data = output.get("data", {})
        if output.get("output_type") == "stream":
            parts.append(f"<pre class='out'>{html.escape(''.join(output.get('text', '')))}</pre>")
        elif "image/png" in data:
            png = data["image/png"]
            png = png if isinstance(png, str) else base64.b64encode(png).decode()
            parts.append(f"<img class='out' src='data:image/png;base64,{png.strip()}'>")
        elif "text/html" in data:
            parts.append(f"<div class='out'>{''.join(data['text/html'])}</div>")
        elif "text/plain" in data:
            parts.append(f"<pre class='out'>{html.escape(''.join(data['text/plain']))}</pre>")
        elif output.get("output_type") == "error":
            raise RuntimeError(f"notebook cell failed: {output.get('ename')}: {output.get('evalue')}")
    return "".join(parts)


def render_notebook(nb) -> str:
    """HTML of an executed notebook: Markdown cells, highlighted code, text/HTML/PNG outputs."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    formatter = HtmlFormatter(noclasses=True)
    body = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            body.append(_markdown(cell.source))
        elif cell.cell_type == "code":
            body.append(highlight(cell.source, PythonLexer(), formatter) + _outputs(cell))
    return "\n".join(body)


def build_notebooks(out: Path, executed: Path | None) -> list[tuple[str, str]]:
    import nbformat

    out.mkdir(parents=True, exist_ok=True)
    links = []
    for source in sorted((ROOT / "notebooks").glob("*.ipynb")):
        copy = executed / source.name if executed is not None else None
        if copy is not None and copy.is_file():
            nb = nbformat.read(copy, as_version=4)
        else:
            import os

            import nbclient

            os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"  # figures inline, as in the tests
            nb = nbformat.read(source, as_version=4)
            nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                    resources={"metadata": {"path": str(out)}}).execute()
        code = [c for c in nb.cells if c.cell_type == "code"]
        if not any(c.get("outputs") for c in code):
            warnings.warn(f"notebook {source.name} has no outputs: it was not executed")
        title = next((c.source.splitlines()[0].lstrip("# ") for c in nb.cells if c.cell_type == "markdown"),
                     source.stem)
        (out / f"{source.stem}.html").write_text(_page(title, render_notebook(nb)), encoding="utf-8")
        links.append((f"notebooks/{source.stem}.html", title))
    return links


def build(out: Path, executed: Path | None = None) -> Path:
    if out.exists():
        shutil.rmtree(out)
    build_api(out / "api")
    guide = build_guide(out / "guide")
    notebooks = build_notebooks(out / "notebooks", executed)
    items = lambda links: "".join(f"<li><a href='{h}'>{html.escape(t)}</a></li>" for h, t in links)  # noqa: E731
    body = (f"<h1>dpbandit</h1><p>A simulator for differentially private contextual bandits.</p>"
            f"<h2>Guides</h2><ul>{items(guide)}</ul>"
            f"<h2>Notebooks (executed)</h2><ul>{items(notebooks)}</ul>"
            f"<h2>API reference</h2><ul><li><a href='api/dpbandit.html'>dpbandit</a> (every module)</li></ul>")
    (out / "index.html").write_text(_page("dpbandit", body, depth=0), encoding="utf-8")
    rendered = {p.name.lower(): f"guide/{p.stem.lower()}.html" for p in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
                if p.name != "api.md"}
    links = _site_links()
    links.rewrite_markdown_links(out, {**rendered, "api.md": "api/dpbandit.html"})
    links.repair_api_anchors(out / "api")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(ROOT / "site"), help="output folder (default: site/)")
    parser.add_argument("--executed", help="folder of executed notebooks (default: execute them here)")
    args = parser.parse_args(argv)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = build(Path(args.out), Path(args.executed) if args.executed else None)
    ours = [w for w in caught if "dpbandit" in str(w.filename) or "pdoc" in str(w.filename)
            or "build_site" in str(w.filename)]
    for w in ours:
        print(f"warning: {w.filename}:{w.lineno}: {w.message}", file=sys.stderr)
    broken = _site_links().broken_links(out)
    for link in broken:
        print(f"broken link: {link}", file=sys.stderr)
    if ours or broken:
        print(f"docs build: {len(ours)} warning(s), {len(broken)} broken link(s)", file=sys.stderr)
        return 1
    print(f"documentation site: {out / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
