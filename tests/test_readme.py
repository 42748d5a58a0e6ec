"""The README's --help sections are generated from the code and must not go stale."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_readme_help_is_current() -> None:
    r = subprocess.run([sys.executable, "scripts/readme_help.py", "--check"], cwd=ROOT,
                       capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 0, r.stderr


def test_readme_opens_with_the_two_commands() -> None:
    head = (ROOT / "README.md").read_text().split("## ")[0]
    assert "make demo" in head and "make test" in head


def test_layout_names_every_package_and_module() -> None:
    text = (ROOT / "README.md").read_text()
    layout = text[text.index("## Layout") : text.index("## Dependencies")]
    pkg = ROOT / "agentiqa_cli"
    names = [f"{d.name}/" for d in pkg.iterdir() if d.is_dir() and (d / "__init__.py").exists()]
    names += [f.name for f in pkg.glob("*.py") if f.name not in ("__init__.py", "__main__.py")]
    missing = [n for n in names if f"  {n}" not in layout]
    assert not missing, f"README Layout does not list {missing}"
