"""`agentiqa tools list|show|check`."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
from rich.markup import escape

from agentiqa_cli.cli import render as ui
from agentiqa_cli.cli.app import tools_app
from agentiqa_cli.cli.options import CardsDir, ConfigOpt, Device, JsonOut
from agentiqa_cli.config import load_settings


# -- tools ---------------------------------------------------------------------------------
@tools_app.command("list")
def tools_list(
    json_out: JsonOut = False,
    tool_cards: CardsDir = None,
    config: ConfigOpt = None,
) -> None:
    """All tool cards: mode, direction, weights, calibration, strengths."""
    from rich.table import Table

    from agentiqa_cli.runtime import Runtime

    rt = Runtime(load_settings({"cards_dir": tool_cards}, config))
    cards = list(rt.cards)
    if json_out:
        ui.print_json([c.model_dump(mode="json") for c in cards])
        return
    t = Table(title=f"{len(cards)} tools", title_justify="left")
    for col in ("name", "backend", "mode", "lower better", "weights", "calibrated", "best at"):
        t.add_column(col)
    for c in sorted(cards, key=lambda c: (c.mode, c.backend, c.name)):
        t.add_row(
            c.name,
            c.backend,
            c.mode,
            "yes" if c.lower_better else "no",
            "yes" if c.weights else "no",
            "yes" if c.calibrated else "no",
            ", ".join(c.distortions) or "-",
        )
    ui.out.print(t)


@tools_app.command("show")
def tools_show(name: str, tool_cards: CardsDir = None, config: ConfigOpt = None) -> None:
    """One tool card in full."""
    import yaml

    from agentiqa_cli.runtime import Runtime

    rt = Runtime(load_settings({"cards_dir": tool_cards}, config))
    card = rt.cards.get(name)
    sys.stdout.write(
        yaml.safe_dump(card.model_dump(mode="json"), sort_keys=False, allow_unicode=True)
    )


@tools_app.command("check")
def tools_check(
    names: Annotated[
        list[str] | None, typer.Argument(help="Tools to check (default: all).", show_default=False)
    ] = None,
    json_out: JsonOut = False,
    device: Device = None,
    tool_cards: CardsDir = None,
    config: ConfigOpt = None,
) -> None:
    """Which tools can run here now (builds each metric; weights must be present or downloadable)."""
    from rich.table import Table

    from agentiqa_cli.runtime import Runtime

    rt = Runtime(load_settings({"cards_dir": tool_cards, "device": device}, config))
    cards = rt.cards.resolve(names) if names else list(rt.cards)
    rows: list[dict[str, Any]] = []
    for c in cards:
        ok, why = rt.runner.availability(c)
        needs = "reference" if c.mode == "FR" else ""
        rows.append({"tool": c.name, "ready": ok, "needs": needs, "detail": why})
    if json_out:
        ui.print_json(rows)
    else:
        t = Table(title=f"tools on {rt.runner.device}", title_justify="left")
        for col in ("tool", "ready", "needs", "detail"):
            t.add_column(col, overflow="fold")
        for r in rows:
            ready = "[green]yes[/]" if r["ready"] else "[red]no[/]"
            t.add_row(str(r["tool"]), ready, str(r["needs"]), escape(str(r["detail"])))
        ui.out.print(t)
        n = sum(r["ready"] for r in rows)
        ui.out.print(f"{n} of {len(rows)} tools can run here.")
