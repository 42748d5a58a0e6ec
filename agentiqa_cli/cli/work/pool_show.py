"""`experience show`'s work: a pool's rankings as a table or JSON (no scipy: reading a pool
needs none)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table

from agentiqa_cli.cli import render as ui
from agentiqa_cli.experience.pool import Pool, read_pool


def show_file(path: Path, json_out: bool) -> None:
    show(read_pool(path), json_out)


def pool_json(pool: Pool) -> dict[str, Any]:
    return {
        "path": str(pool.path),
        "source": pool.meta.source,
        "records": len(pool.records),
        "entries": [
            {
                "mode": e.mode,
                "degradations": e.degradations,
                "records": e.records,
                "significant": e.significant,
                "best": e.best,
                "d": e.d,
                "se": e.se,
                "nu": e.nu,
                "ranking": [{"tool": t, "theta": th, "se": se} for t, th, se in e.ranking()],
                "profiles": [p.model_dump() for p in e.profiles],
                "insight": e.insight(),
            }
            for e in pool.entries.values()
        ],
    }


def show(pool: Pool, json_out: bool) -> None:
    if json_out:
        ui.print_json(pool_json(pool))
        return
    table = Table(title=f"experience pool {ui.cell(str(pool.path))}")
    cols = ("mode", "degradations", "records", "ranking (θ, best first)", "d", "SE", "significant",
            "profiles")  # fmt: skip
    for col in cols:
        table.add_column(col, justify="right" if col in ("records", "d", "SE") else "left")
    for e in pool.entries.values():
        ranking = ", ".join(f"{t} {th:+.2f}" for t, th, _ in e.ranking()[:4])
        table.add_row(
            e.mode,
            e.degradations,
            str(e.records),
            ui.cell(ranking),
            f"{e.d:.2f}" if e.d is not None else "-",
            f"{e.se:.2f}" if e.se is not None else "-",
            "yes" if e.significant else "no",
            str(len(e.profiles)),
        )
    ui.out.print(table)
    covered = sum(e.significant for e in pool.entries.values())
    ui.out.print(
        f"{covered} of {len(pool.entries)} keys significant: their tool is chosen without "
        "asking the VLM (assess --experience)",
        highlight=False,
    )
