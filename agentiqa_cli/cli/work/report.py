"""The dataset issue report made, written and shown: `agentiqa report` and `--report` on
score/assess (the report's page templates load jinja2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table

from agentiqa_cli.cli import render as ui
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.io.guard import write_whole
from agentiqa_cli.report import Report, build_report, render_html, rows
from agentiqa_cli.report.markdown import render_markdown


def make_report(csv: Path, html: Path, top: int) -> Report:
    """Measure, build and write the page; the CLI's one path for `report` and `--report`."""
    found = rows.read_rows(csv)
    reporter = ui.Reporter(len(found), "report")
    with reporter.running():
        report = build_report(
            csv, rows=found, top=top, on_image=lambda n: reporter.advance(n, "read")
        )
    try:
        html.parent.mkdir(parents=True, exist_ok=True)
        write_whole(html, render_html(report, page=html))  # renamed into place once complete
    except OSError as e:
        raise ConfigError(f"{html}: cannot write the report: {e.strerror or e}") from None
    return report


def issues_table(report: Report) -> Table:
    table = Table(title=f"agentiqa report: {ui.cell(report.csv)}", title_justify="left")
    table.add_column("issue")
    table.add_column("from")
    table.add_column("images", justify="right")
    table.add_column("worst", overflow="fold")
    for issue in report.issues:
        worst = ", ".join(s.image for s in issue.worst[:3])
        style = "dim" if issue.count == 0 else ""
        table.add_row(
            ui.cell(issue.name), issue.source, str(issue.count), ui.cell(worst), style=style
        )
    table.caption = (
        f"{report.images} images, {report.readable} readable; "
        f"{len(report.exact_sets)} exact and {len(report.near_sets)} near duplicate sets"
    )
    return table


# thumbnails are for the page; JSON on stdout names the images only
_THUMBS: dict[str, Any] = {
    "issues": {"__all__": {"worst": {"__all__": {"thumbnail"}}}},
    "exact_sets": {"__all__": {"__all__": {"thumbnail"}}},
    "near_sets": {"__all__": {"__all__": {"thumbnail"}}},
    "unreadable": {"__all__": {"thumbnail"}},
    "rows": {"__all__": {"thumbnail"}},
}


def show(csv: Path, html: Path, top: int, fmt: str) -> bool:
    """Make the report, print it on stdout as ``fmt`` (table | json | md); whether some
    images could not be read."""
    result = make_report(csv, html, top)
    if fmt == "json":
        ui.print_json({**result.model_dump(mode="json", exclude=_THUMBS), "html": str(html)})
    elif fmt == "md":
        ui.print_text(render_markdown(result))
    else:
        ui.out.print(issues_table(result))
        ui.out.print(f"report → {ui.visible(str(html))}", highlight=False, markup=False)
    if result.unreadable:
        ui.warn(f"{len(result.unreadable)} image(s) could not be read; listed in {html}")
    return bool(result.unreadable)
