"""The command line: parse flags, build the pieces, call the core, render. Nothing else.

Exit codes: 0 ok · 1 quality gate failed · 2 usage/configuration error · 3 some inputs failed.
One error boundary (``main``) turns domain errors into one red line and their exit code.
"""

from __future__ import annotations

import os
import sys

from agentiqa_cli.cli import (  # noqa: F401 - registers the commands
    bench,
    evaluate,
    experience,
    fix,
    report,
    run,
    tools,
)
from agentiqa_cli.cli import render as ui
from agentiqa_cli.cli.app import app, state
from agentiqa_cli.errors import AgentIQAError
from agentiqa_cli.gate import EXIT_INTERNAL


# -- entry point ---------------------------------------------------------------------------
def main() -> None:
    """Console-script entry: one error boundary for the whole tool.

    Parser errors exit 2 through typer's own handling; domain errors become one red line.
    """
    try:
        app()
    except AgentIQAError as e:
        if state["debug"] or os.environ.get("AGENTIQA_DEBUG"):
            raise
        ui.fail(str(e))
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        ui.fail("interrupted; rows written so far are complete (use --resume to continue)")
        sys.exit(130)
    except Exception as e:  # a bug: say so plainly, never exit with a gate code
        if state["debug"] or os.environ.get("AGENTIQA_DEBUG"):
            raise
        ui.fail(f"internal error: {type(e).__name__}: {e} (--debug shows the traceback)")
        sys.exit(EXIT_INTERNAL)


__all__ = ["app", "main"]
