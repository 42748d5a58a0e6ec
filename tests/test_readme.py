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
