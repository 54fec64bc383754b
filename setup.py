"""Build hook (the project's metadata is in pyproject.toml): the wheel ships copies of the teaching notebooks, the
guide pages they cite (``docs/*.md``) and ``CITATION.cff`` under ``dpbandit/_shipped/``, where ``dpbandit notebooks``
finds them in an installed copy. Their single source stays in the repository (an editable install reads it there;
nothing is copied)."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class BuildPy(build_py):
    """``build_py`` plus the copies of ``notebooks/*.ipynb``, ``docs/*.md`` and ``CITATION.cff``."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "dpbandit" / "_shipped"
        for folder, pattern in (("notebooks", "*.ipynb"), ("docs", "*.md")):
            (target / folder).mkdir(parents=True, exist_ok=True)
            for source in sorted((ROOT / folder).glob(pattern)):
                shutil.copyfile(source, target / folder / source.name)
        shutil.copyfile(ROOT / "CITATION.cff", target / "CITATION.cff")


setup(cmdclass={"build_py": BuildPy})
