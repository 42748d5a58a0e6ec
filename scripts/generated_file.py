"""What cli_doc.py and man_page.py share: a file generated from the code is rewritten, or
with ``--check`` only compared (``make test`` fails on a stale one)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def check_flag(argv: list[str] | None = None) -> bool:
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    return bool(ap.parse_args(argv).check)


def write_or_check(path: Path, new: str, check: bool, stale: str) -> int:
    """Write ``new`` to ``path`` (0), or with ``check`` compare them: 1 with ``stale`` on
    stderr when they differ, else 0."""
    if check:
        if not path.is_file() or path.read_text(encoding="utf-8") != new:
            print(stale, file=sys.stderr)
            return 1
        return 0
    path.write_text(new, encoding="utf-8")
    return 0
