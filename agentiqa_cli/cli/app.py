"""The typer application objects and the root callback (--version, --debug)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from agentiqa_cli import __version__
from agentiqa_cli.cli import render as ui
from agentiqa_cli.cli.options import EXIT_CODES_HELP

app = typer.Typer(
    name="agentiqa",
    help="Batch image quality assessment: an agentic VLM over IQA tools.\n\n" + EXIT_CODES_HELP,
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help: readable at 80 columns and in the README
)
tools_app = typer.Typer(help="The tool cards, and which tools can run here.", no_args_is_help=True)
app.add_typer(tools_app, name="tools")
bench_app = typer.Typer(help="Measure the system against labelled data.", no_args_is_help=True)
app.add_typer(bench_app, name="eval-bench")
experience_app = typer.Typer(
    help="The experience pool: which tool to trust per distortion, learnt from your images.",
    no_args_is_help=True,
)
app.add_typer(experience_app, name="experience")

state: dict[str, Any] = {"debug": False}


@app.callback(invoke_without_command=True)
def root(
    version: Annotated[bool, typer.Option("--version", help="Show the version and exit.")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
) -> None:
    state["debug"] = debug
    ui.set_quiet(False)  # a command with -q turns it on
    if version:
        typer.echo(f"agentiqa {__version__}")
        raise typer.Exit(0)
