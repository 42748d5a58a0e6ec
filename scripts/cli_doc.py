"""Keep docs/cli.md's --help sections generated from the code (like cog).

Blocks look like ``<!-- help: score -->`` … ``<!-- /help -->``; everything between the
markers is replaced with ``agentiqa score --help`` in a fenced block.

    python scripts/cli_doc.py          # rewrite docs/cli.md
    python scripts/cli_doc.py --check  # exit 1 if docs/cli.md is stale
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

from generated_file import check_flag, write_or_check

CLI_DOC = Path(__file__).resolve().parent.parent / "docs" / "cli.md"
BLOCK = re.compile(r"(<!-- help: ?(?P<cmd>[\w -]*?) -->\n)(?P<body>.*?)(<!-- /help -->)", re.S)


def help_text(command: str) -> str:
    from agentiqa_cli.cli import app

    os.environ["COLUMNS"] = "88"
    os.environ["TERM"] = "dumb"
    buf = io.StringIO()
    args = [*command.split(), "--help"] if command else ["--help"]
    with contextlib.redirect_stdout(buf), contextlib.suppress(SystemExit):
        app(args, prog_name="agentiqa")
    return buf.getvalue().rstrip() + "\n"


def render(text: str) -> str:
    return BLOCK.sub(
        lambda m: f"{m.group(1)}```text\n{help_text(m.group('cmd'))}```\n{m.group(4)}", text
    )


def main() -> int:
    check = check_flag()
    new = render(CLI_DOC.read_text(encoding="utf-8"))
    stale = "docs/cli.md --help sections are stale: run python scripts/cli_doc.py"
    return write_or_check(CLI_DOC, new, check, stale)


if __name__ == "__main__":
    raise SystemExit(main())
