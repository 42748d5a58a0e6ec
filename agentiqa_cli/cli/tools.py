"""`agentiqa tools list|show|check`."""

from __future__ import annotations

import sys
from contextlib import nullcontext
from typing import Annotated, Any

import typer
import yaml
from rich.markup import escape
from rich.table import Table

from agentiqa_cli.cli import render as ui
from agentiqa_cli.cli.app import tools_app
from agentiqa_cli.cli.options import (
    CardsDir,
    ConfigOpt,
    Device,
    JsonOut,
    Quiet,
)
from agentiqa_cli.config import load_settings
from agentiqa_cli.gate import EXIT_GATE, EXIT_OK
from agentiqa_cli.tools.extras import card_extra, missing_extra
from agentiqa_cli.tools.weights import hub_offline, no_downloads, weights_cached
from agentiqa_cli.wiring import build_runtime


# -- tools ---------------------------------------------------------------------------------
@tools_app.command("list")
def tools_list(
    json_out: JsonOut = False,
    tool_cards: CardsDir = None,
    config: ConfigOpt = None,
) -> None:
    """All tool cards: mode, direction, the extra it needs (`pyiqa`: pip install
    'agentiqa[pyiqa]'; "missing" when not installed), weights (and whether they are cached:
    the agent is offered a learned tool by default exactly when they are), calibration,
    strengths."""

    rt = build_runtime(load_settings({"cards_dir": tool_cards}, config))
    cards = list(rt.cards)
    cached = {c.name: weights_cached(c) if c.weights else None for c in cards}
    if json_out:
        ui.print_json(
            [
                c.model_dump(mode="json")
                | {
                    "cached": cached[c.name],
                    "extra": card_extra(c),
                    "installed": not missing_extra(c),
                }
                for c in cards
            ]
        )
        return
    t = Table(title=f"{len(cards)} tools", title_justify="left")
    cols = ("name", "backend", "mode", "lower better", "extra", "weights", "cached", "calibrated",
            "best at")  # fmt: skip
    for col in cols:
        t.add_column(col)
    for c in sorted(cards, key=lambda c: (c.mode, c.backend, c.name)):
        extra = card_extra(c)
        t.add_row(
            c.name,
            c.backend,
            c.mode,
            "yes" if c.lower_better else "no",
            "-" if extra is None else extra + (" (missing)" if missing_extra(c) else ""),
            "yes" if c.weights else "no",
            {None: "-", True: "yes", False: "no"}[cached[c.name]],
            "yes" if c.calibrated else "no",
            ", ".join(c.distortions) or "-",
        )
    ui.out.print(t)
    lacking = sum(1 for c in cards if missing_extra(c))
    if lacking:
        ui.out.print(
            f"{lacking} tools need the pyiqa extra, not installed: pip install 'agentiqa[pyiqa]'",
            highlight=False,
        )


@tools_app.command("show")
def tools_show(name: str, tool_cards: CardsDir = None, config: ConfigOpt = None) -> None:
    """One tool card in full."""

    rt = build_runtime(load_settings({"cards_dir": tool_cards}, config))
    card = rt.cards.get(name)
    problem = card.curve_problem()
    if problem:
        ui.warn(problem)
    sys.stdout.write(
        yaml.safe_dump(card.model_dump(mode="json"), sort_keys=False, allow_unicode=True)
    )


@tools_app.command("check")
def tools_check(
    names: Annotated[
        list[str] | None, typer.Argument(help="Tools to check (default: all).", show_default=False)
    ] = None,
    json_out: JsonOut = False,
    quiet: Quiet = False,
    device: Device = None,
    tool_cards: CardsDir = None,
    config: ConfigOpt = None,
) -> None:
    """Which tools can run here now (builds each metric; weights must be cached, or are
    downloaded when huggingface.co is reachable). Progress goes to stderr. Exit codes: 0
    every tool named is ready (or none was named: a report of all); 1 a tool named is not
    ready (an error line says why, -q or not)."""

    ui.set_quiet(quiet)
    rt = build_runtime(load_settings({"cards_dir": tool_cards, "device": device}, config))
    cards = rt.cards.resolve(names) if names else list(rt.cards)
    offline = hub_offline()
    if offline:
        ui.note(
            "offline (huggingface.co unreachable or HF_HUB_OFFLINE set): weights that are "
            "not cached are reported, not downloaded",
        )
    rows: list[dict[str, Any]] = []
    reporter = ui.Reporter(len(cards), "tools check")
    with no_downloads() if offline else nullcontext(), reporter.running():
        for c in cards:
            ok, why = rt.runner.availability(c)
            reporter.advance(c.name, "ready" if ok else "not ready")
            if not ok and offline and c.weights:
                why = f"weights not cached, not downloaded offline ({why})"
            extra = missing_extra(c)  # an extra that is installed is no longer a need
            needs = [n for n, yes in (("reference", c.mode == "FR"), ("weights", c.weights)) if yes]
            needs += [f"agentiqa[{extra}]"] if extra else []
            # after the build: weights it just downloaded count as cached
            cached = weights_cached(c) if c.weights else None
            rows.append(
                {"tool": c.name, "ready": ok, "needs": ", ".join(needs), "cached": cached,
                 "detail": why, "extra_missing": extra is not None}
            )  # fmt: skip
    not_ready = [r for r in rows if not r["ready"]] if names else []
    for r in not_ready:  # an error, shown under -q too: the exit code says so
        ui.fail(f"{r['tool']} cannot run here: {r['detail']}")
    code = EXIT_GATE if not_ready else EXIT_OK
    if json_out:
        ui.print_json(rows)
        raise typer.Exit(code)
    t = Table(title=f"tools on {rt.runner.device}", title_justify="left")
    for col in ("tool", "ready", "needs", "cached", "detail"):
        t.add_column(col, overflow="fold")
    for r in rows:
        ready = "[green]yes[/]" if r["ready"] else "[red]no[/]"
        shown = {None: "-", True: "yes", False: "no"}[r["cached"]]
        t.add_row(str(r["tool"]), ready, str(r["needs"]), shown, escape(str(r["detail"])))
    ui.out.print(t)
    ready_count = sum(r["ready"] for r in rows)
    ui.out.print(f"{ready_count} of {len(rows)} tools can run here.", highlight=False)
    missing = [r["tool"] for r in rows if not r["ready"] and "weights" in r["needs"]]
    if offline and missing:
        ui.out.print(
            f"Offline: {', '.join(missing)} need weights that are not cached; run "
            "`agentiqa tools check` with network access to download them.",
            highlight=False,
        )
    # the agent's default offer rests on the cards' weight_files: say where it disagrees
    unseen = [r["tool"] for r in rows if r["ready"] and r["cached"] is False]
    if unseen:
        ui.warn(
            f"{', '.join(unseen)} ran, but not every file its card lists (weight_files) is "
            "cached, so the agent is not offered it by default (--learned-tools offers it)"
        )
    lacking = [r["tool"] for r in rows if not r["ready"] and r["extra_missing"]]
    if lacking:
        ui.out.print(
            f"{', '.join(lacking)} need{'s' if len(lacking) == 1 else ''} the pyiqa extra, "
            "which is not installed: "
            "pip install 'agentiqa[pyiqa]' (the agent is not offered them)",
            highlight=False,
        )
    broken = [r["tool"] for r in rows if not r["ready"] and r["cached"] and not r["extra_missing"]]
    if broken:
        ui.warn(
            f"{', '.join(broken)}: weights cached but the tool cannot run here; the agent is "
            "offered it by default and its cells stay empty (--no-learned-tools: none offered)"
        )
    raise typer.Exit(code)
