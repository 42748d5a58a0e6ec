"""``agentiqa experience build``: a pool from a folder of the user's clean images (synthetic
levels) or from a MOS table with a distortion type per image (``--layout``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np

from agentiqa_cli.bench.datasets import load_dataset
from agentiqa_cli.categories import category_of_type, kinds_of
from agentiqa_cli.errors import ConfigError, ImageError
from agentiqa_cli.experience.measure import build_records, mos_series, union_of, vote_series
from agentiqa_cli.experience.pool import Pool, write_pool
from agentiqa_cli.imaging.discover import discover
from agentiqa_cli.imaging.load import load_image
from agentiqa_cli.io.guard import check_pool_out
from agentiqa_cli.records import CATEGORIES, LearnedTools, Mode
from agentiqa_cli.tools.cards import CardSet, ToolCard
from agentiqa_cli.tools.runner import ToolRunner
from agentiqa_cli.tools.weights import candidates

MODES: tuple[Mode, ...] = ("NR", "FR")


def candidate_cards(
    cards: CardSet, mode: Mode, learned_tools: LearnedTools, tools: Sequence[str] | None
) -> list[ToolCard]:
    """The tools that compete for ``mode``: ``tools`` if given (FR ones only in FR mode),
    else exactly those the agent's ``select`` chooses from (tools/weights.candidates)."""
    if tools:
        chosen = cards.resolve(tools)
        return [c for c in chosen if mode == "FR" or c.mode == "NR"]
    return candidates(cards, mode == "FR", learned_tools)


def build_pool(
    data: Path,
    out: Path,
    *,
    cards: CardSet,
    runner: ToolRunner,
    modes: Sequence[Mode] = ("NR",),
    tools: Sequence[str] | None = None,
    learned_tools: LearnedTools = "auto",
    categories: Sequence[str] = CATEGORIES,
    size: int | None = 384,
    seed: int = 0,
    calibration: str | None = None,
    recursive: bool = False,
    max_pixels: int = 100_000_000,
    layout: str | None = None,
    on_image: Callable[[str, str], None] | None = None,
    notes: list[str] | None = None,
    coupled: bool = False,
    force: bool = False,
) -> Pool:
    """Measure every clean image of ``data`` (or, with ``layout`` or a file as ``data``, the
    MOS table's images) and write the pool to ``out``. ``on_image(name, status)`` reports
    each image (status "ok" or the decode error); what was left out is added to ``notes``.
    ``coupled`` also measures every pair of categories together (keys of two categories);
    ``force`` replaces a file at ``out`` that is not a pool of ours."""
    data = Path(data)
    by_mode = {m: candidate_cards(cards, m, learned_tools, tools) for m in modes}
    for m, cs in by_mode.items():
        if len(cs) < 2:
            raise ConfigError(f"{m}: at least two candidate tools are needed, got {len(cs)}")
    if layout is not None or data.is_file():
        return _from_mos(data, out, layout, cards, runner, by_mode, categories, calibration,
                         max_pixels, on_image, notes, force)  # fmt: skip
    # a category without a synthetic kind has no series to measure (categories.py)
    no_kind = [c for c in categories if not kinds_of([c])]
    if len(no_kind) == len(categories):
        raise ConfigError(
            f"no synthetic distortion kind for {', '.join(no_kind)}: nothing to build"
        )
    if no_kind and notes is not None:
        notes.append(f"no synthetic distortion kind for {', '.join(no_kind)}: left out")
    found = [p for p, _ in discover([str(data)], recursive)]
    if not found:
        raise ConfigError(f"no images in {data}")
    check_pool_out(out, found, force)  # exit 2 before any image is measured
    loaded: list[str] = []

    def images() -> Iterator[tuple[str, np.ndarray]]:
        used: set[str] = set()
        for p in found:
            try:
                img = load_image(p, max_pixels)
            except ImageError as e:
                if on_image is not None:
                    on_image(str(p), str(e))
                continue
            name = p.stem if p.stem not in used else f"{p.stem}_{len(used)}"
            used.add(name)
            loaded.append(name)
            yield name, img.pixels

    def done(name: str) -> None:
        if on_image is not None:
            on_image(name, "ok")

    meta, records = build_records(
        images(), runner, by_mode, cards_hashes=cards.hashes, calibration=calibration,
        categories=categories, seed=seed, size=size, source=str(data), on_image=done,
        coupled=coupled,
    )  # fmt: skip
    if len(loaded) < 1 or not records:
        raise ConfigError(f"no readable images in {data}")
    return write_pool(out, meta, records)


def _from_mos(
    data: Path,
    out: Path,
    layout: str | None,
    cards: CardSet,
    runner: ToolRunner,
    by_mode: dict[Mode, list[ToolCard]],
    categories: Sequence[str],
    calibration: str | None,
    max_pixels: int,
    on_image: Callable[[str, str], None] | None,
    notes: list[str] | None,
    force: bool,
) -> Pool:
    dataset = load_dataset(data, layout)
    refs = [i.reference for i in dataset.items if i.reference is not None]
    check_pool_out(out, [dataset.source, *(i.image for i in dataset.items), *refs], force)
    wanted = set(categories)
    items = [i for i in dataset.items if i.distortion and category_of_type(i.distortion) in wanted]
    if not items:
        raise ConfigError(
            f"{data}: no rows with a distortion type of the categories asked for (the table "
            "needs a distortion column, e.g. KADID-10k, TID2013 or a CSV with 'distortion')"
        )
    if any(i.reference is None for i in items) and "FR" in by_mode:
        raise ConfigError(f"{data}: FR mode needs a reference for every row")
    series, left_out = mos_series(items, dataset.mos_range, runner, union_of(by_mode),
                                  max_pixels=max_pixels, on_image=on_image)  # fmt: skip
    if notes is not None:
        skipped = len(dataset.items) - len(items)
        if skipped:
            left_out.insert(0, f"{skipped} rows without a distortion type of the categories "
                            "asked for left out")  # fmt: skip
        notes.extend([*dataset.notes, *left_out])
    if not series:
        raise ConfigError(f"{data}: no (reference, distortion) group with three readable images")
    meta, records = vote_series(series, by_mode, cards_hashes=cards.hashes,
                                calibration=calibration, source=str(data), size=None,
                                seed=0)  # fmt: skip
    return write_pool(out, meta, records)
