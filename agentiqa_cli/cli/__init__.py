"""The command line: parse flags, build the pieces, call the core, render. Nothing else.

Exit codes: 0 ok · 1 quality gate failed · 2 usage/configuration error · 3 some inputs failed
· 4 internal error · 130 interrupted.
One error boundary (``main``) turns domain errors into one red line and their exit code.
"""

from __future__ import annotations

import os
import sys

import typer

# --help lists the commands in the order they register: report, score, plan, assess first
from agentiqa_cli.cli import run  # noqa: F401 - registers the commands

# isort: split
from agentiqa_cli.cli import (  # noqa: F401 - registers the commands
    bench,
    evaluate,
    experience,
    fix,
    report,
    tools,
)
from agentiqa_cli.cli import render as ui
from agentiqa_cli.cli.app import app, state
from agentiqa_cli.errors import AgentIQAError, ReaderGone
from agentiqa_cli.gate import EXIT_INTERNAL, EXIT_INTERRUPTED

# -- entry point ---------------------------------------------------------------------------
INTERRUPTED = "interrupted; rows written so far are complete (use --resume to continue)"


def main() -> None:
    """Console-script entry: one error boundary for the whole tool.

    Typer runs in non-standalone mode so that nothing is decided behind this boundary: in
    standalone mode it turns Ctrl-C into a silent exit 130 and a closed stdout pipe
    (``agentiqa score … | head -1``) into exit 1, the gate's code.
    """
    ui.survive_closed_stdout()
    try:
        code = app(standalone_mode=False)
    except typer.Abort:
        ui.fail(INTERRUPTED)
        sys.exit(EXIT_INTERRUPTED)
    except typer.TyperException as e:  # the parser's errors (its vendored click): usage, 2
        show = getattr(e, "show", None)
        if show is not None:
            show()
        sys.exit(int(getattr(e, "exit_code", 2)))
    except ReaderGone:  # `-o - | head`: the reader has what it wanted
        sys.exit(0)
    except AgentIQAError as e:
        if state["debug"] or os.environ.get("AGENTIQA_DEBUG"):
            raise
        ui.fail(str(e))
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        ui.fail(INTERRUPTED)
        sys.exit(EXIT_INTERRUPTED)
    except Exception as e:  # a bug: say so plainly, never exit with a gate code
        if state["debug"] or os.environ.get("AGENTIQA_DEBUG"):
            raise
        ui.fail(f"internal error: {type(e).__name__}: {e} (--debug shows the traceback)")
        sys.exit(EXIT_INTERNAL)
    code = code if isinstance(code, int) else 0
    if code == EXIT_INTERRUPTED:  # typer's own translation of KeyboardInterrupt
        ui.fail(INTERRUPTED)
    sys.exit(code)


__all__ = ["app", "main"]
