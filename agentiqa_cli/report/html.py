"""The report as one self-contained HTML page: thumbnails as data URIs, everything escaped."""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from agentiqa_cli.report.build import Report

_TEMPLATES = Path(__file__).resolve().parent


def render_html(report: Report) -> str:
    # autoescape on: file names, error texts and CSV cells are hostile input
    env = Environment(
        loader=FileSystemLoader(_TEMPLATES),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
    )
    return env.get_template("report.html.j2").render(report=report)
