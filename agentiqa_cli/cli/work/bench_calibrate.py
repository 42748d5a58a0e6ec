"""`agentiqa calibrate`'s run: each tool's five-parameter logistic fitted to MOS, written as
an overlay for --calibration."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from agentiqa_cli.bench import calibrate, datasets, runs
from agentiqa_cli.bench.calibrate import CalibrationFit
from agentiqa_cli.bench.runs import Bench
from agentiqa_cli.cli import render as ui
from agentiqa_cli.cli.options import Common, tool_list
from agentiqa_cli.cli.work.bench_run import fmt, inputs, run_bench
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.io.guard import check_overlay_out
from agentiqa_cli.tools.extras import require_extras


def run(
    dataset: Path,
    opts: Common,
    tools: str,
    overlay: Path,
    overlay_flag: str,
    force: bool,
    layout: str | None,
    mos_range: str | None,
    include_suspect: bool,
    limit: int | None,
    sample: int | None,
    seed: int,
) -> None:
    """``overlay_flag`` names the flag that gave ``overlay`` (for the refusal to overwrite)."""
    rng: tuple[float, float] | None = None
    if mos_range:
        try:
            lo, hi = (float(v) for v in mos_range.split(","))
            rng = (lo, hi)
        except ValueError:
            raise ConfigError(f"--mos-range must be LO,HI, got {mos_range!r}") from None
    settings = opts.settings()
    data = datasets.load_dataset(dataset, layout, limit=limit, sample=sample, seed=seed)
    overlay_in = [settings.calibration] if settings.calibration else []
    check_overlay_out(overlay, [*inputs(data.source, data.items), *overlay_in], force,
                      overlay_flag)  # fmt: skip

    async def main(b: Bench) -> list[CalibrationFit]:
        cards = b.rt.cards.resolve(tool_list(tools) or [])
        require_extras(cards)
        return await runs.run_calibrate(b, data, cards, rng)

    fits = run_bench(settings, None, len(data.items), "calibrate", main,
                     command="calibrate")  # fmt: skip
    written = calibrate.write_overlay(
        fits, overlay, f"{data.name} ({data.layout}, {len(data.items)} images)", include_suspect
    )
    t = Table(title=f"logistic fits on {data.name}", title_justify="left")
    for col in ("tool", "n", "failed", "SRCC", "PLCC", "RMSE", "note"):
        t.add_column(col)
    for f in fits:
        note = f.error or "; ".join(f.warnings) or ""
        t.add_row(f.tool, str(f.n), str(f.failed), fmt(f.srcc), fmt(f.plcc), fmt(f.rmse), note)
    ui.out.print(t)
    if written == 0:
        raise ConfigError("no usable fit; nothing written")
    ui.out.print(
        f"{written} tool(s) → {overlay} (apply with --calibration {overlay})", highlight=False
    )
