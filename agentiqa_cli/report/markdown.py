"""The report as Markdown: a short summary for a CI job's page (GitHub's job summary)."""

from __future__ import annotations

import re

from agentiqa_cli.report.build import Report
from agentiqa_cli.report.table import cutoffs

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+!|~&])")


def md_text(text: str) -> str:
    """Data (a file name, an error) as literal Markdown text in a table cell: controls shown
    as escapes, every character Markdown or HTML would act on backslash-escaped."""
    shown = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    return _SPECIAL.sub(r"\\\1", shown)


def render_markdown(report: Report, worst: int = 3) -> str:
    s = report.summary
    mean = f"; mean score {s.mean:.2f}" if s.mean is not None else ""
    lines = [
        f"## agentiqa report: {md_text(report.csv)}",
        "",
        f"{report.images} image(s), {report.readable} readable{mean}; "
        f"{sum(1 for r in report.rows if r.findings)} with findings.",
        "",
        "| level | scores | images |",
        "|---|---|---:|",
    ]
    limits = cutoffs()
    lines += [
        f"| {level} | {limits.get(level, '')} | {n} |"
        for level, n in s.levels.items()
        if n or level in limits  # "no score" and "error" only when some row is one
    ]
    found = [i for i in report.issues if i.count]
    if found:
        lines += ["", "| finding | images | worst |", "|---|---:|---|"]
        for issue in found:
            names = ", ".join(md_text(w.image) for w in issue.worst[:worst])
            lines.append(f"| {md_text(issue.name)} | {issue.count} | {names} |")
    else:
        lines += ["", "No findings."]
    return "\n".join(lines) + "\n"
