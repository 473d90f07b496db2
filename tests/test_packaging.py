"""A plain (non-editable) install must carry everything the app reads from the package folder:
templates, static files (the vendored htmx too, once `make assets` fetched it), the migrations and
the default topic questions. Builds the wheel from a copy of the source, as pip would install it."""
from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile

from tests.conftest import REPO

DATA_DIRS = ("templates", "static", "migrations")


def package_files(folder) -> set[str]:
    return {p.relative_to(REPO).as_posix() for p in (REPO / "nistchat" / folder).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


def test_the_wheel_carries_templates_static_files_and_migrations(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(REPO / "nistchat", src / "nistchat", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                          "--quiet", "--wheel-dir", str(tmp_path / "dist"), str(src)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("nistchat-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())

    for folder in DATA_DIRS:
        expected = package_files(folder)
        assert expected, folder
        assert not expected - names, f"{folder}: missing from the wheel: {sorted(expected - names)}"
    for required in ("nistchat/templates/base.html", "nistchat/templates/chat/index.html",
                     "nistchat/static/htmx-pins.json", "nistchat/static/css/app.css",
                     "nistchat/migrations/env.py", "nistchat/migrations/alembic.ini",
                     "nistchat/migrations/script.py.mako", "nistchat/migrations/versions/0001_initial_schema.py",
                     "nistchat/topics/default_questions.json"):
        assert required in names, required
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert not [n for n in names if n.startswith(("tests/", "scripts/", "templates/", "static/", "migrations/"))]
