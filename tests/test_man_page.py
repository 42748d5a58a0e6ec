"""docs/agentiqa.1, the man page generated from the typer app (scripts/man_page.py, make man):
checked in current, renders without warnings, and covers every command and option."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main

from agentiqa_cli.cli import app

ROOT = Path(__file__).resolve().parent.parent
MAN_PAGE = ROOT / "docs" / "agentiqa.1"


def test_man_page_is_current() -> None:
    r = subprocess.run([sys.executable, "scripts/man_page.py", "--check"], cwd=ROOT,
                       capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 0, r.stderr


def _render(page: Path) -> str:
    """The page as man (or groff alone) prints it at 80 columns; warnings fail the test."""
    env = {**os.environ, "MANWIDTH": "80", "MANPAGER": "cat", "PAGER": "cat", "LC_ALL": "C.UTF-8"}
    if shutil.which("man"):
        cmd = ["man", "--warnings", "-l", str(page)]
    elif shutil.which("groff"):
        cmd = ["groff", "-man", "-Tutf8", "-ww", "-rLL=80n", str(page)]
    else:
        pytest.skip("neither man nor groff is installed")
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0 and not r.stderr.strip(), r.stderr
    text = re.sub(r".\x08", "", r.stdout)  # overstrikes (bold, underline) when not stripped
    return text.replace("\u2212", "-").replace("\u2010", "-")


def _tree(cmd: Any, ctx: Any) -> Iterator[tuple[Any, Any]]:
    yield cmd, ctx
    for name, sub in (getattr(cmd, "commands", None) or {}).items():
        if not sub.hidden:
            yield from _tree(sub, sub.context_class(sub, info_name=name, parent=ctx))


def test_man_page_renders_every_command_and_option() -> None:
    text = _render(MAN_PAGE)
    assert text.lstrip().startswith("AGENTIQA(1)")
    for head in ("NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "EXIT STATUS", "ENVIRONMENT",
                 "FILES"):  # fmt: skip
        assert re.search(rf"^{head}$", text, re.M), head
    root = typer.main.get_command(app)
    tree = list(_tree(root, root.context_class(root, info_name="agentiqa")))
    assert len(tree) > 15  # the commands and the three groups' sub-commands
    # each command's section: from its heading to the next command's
    starts = []
    for _, ctx in tree[1:]:
        m = re.search(rf"^ {{3}}{re.escape(ctx.command_path)} \[OPTIONS\]", text, re.M)
        assert m, f"no section for {ctx.command_path}"
        starts.append(m.start())
    assert starts == sorted(starts)
    ends = [*starts[1:], text.index("\nEXIT STATUS")]
    sections = [("agentiqa", text[: starts[0]])] + [
        (ctx.command_path, text[a:b]) for (_, ctx), a, b in zip(tree[1:], starts, ends, strict=True)
    ]
    for (cmd, _), (path, section) in zip(tree, sections, strict=True):
        for p in cmd.params:
            if p.hidden:
                continue
            names = p.opts if p.param_type_name == "option" else [p.name.upper()]
            for name in names:
                assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", section), (path, name)
    assert "AGENTIQA_CONCURRENCY" in text and "XDG_CONFIG_HOME" in text


def test_the_generator_escapes_roff() -> None:
    """A help text's backslash, a line that starts with a dot, and option dashes survive."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from man_page import esc, paragraphs
    finally:
        sys.path.pop(0)
    assert esc("a\\b --x") == "a\\eb \\-\\-x"
    assert esc(".hidden\n'quote") == "\\&.hidden\n\\&'quote"
    assert paragraphs("One\n  two.\n\n\bkeep\n  lines\f secret") == [
        "One two.",
        ".nf\nkeep\n  lines\n.fi",
    ]
