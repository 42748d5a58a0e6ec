"""``agentiqa experience build``: a pool from a folder of the user's clean images (synthetic
levels) or from a MOS table with a distortion type per image (``--layout``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from agentiqa_cli.batch import Pair, Process
from agentiqa_cli.bench.datasets import load_dataset
from agentiqa_cli.categories import category_of_type, kinds_of
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.experience.measure import (
    Series,
    coupled_kinds,
    measure,
    mos_series,
    union_of,
    vote_series,
)
from agentiqa_cli.experience.measure import kinds_of as synthetic_kinds
from agentiqa_cli.experience.pool import Pool, write_pool
from agentiqa_cli.imaging.discover import Job, discover, pair
from agentiqa_cli.io.guard import check_pool_out
from agentiqa_cli.records import CATEGORIES, LearnedTools, Mode, Result
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


Run = Callable[[list[Job], Process], Awaitable[object]]


async def build_pool(
    data: Path,
    out: Path,
    *,
    cards: CardSet,
    runner: ToolRunner,
    run: Run,
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
    MOS table's images) and write the pool to ``out``. A folder's images go through ``run``
    (the commands' one batch path, ``Runtime.run``: its decoding, limits and error rows),
    which hands each decoded image to a ``SeriesOf`` process; a MOS table's series are read
    pairwise here, ``on_image(name, status)`` reporting each image (status "ok" or the
    decode error). What was left out is added to ``notes``. ``coupled`` also measures every
    pair of categories together (keys of two categories); ``force`` replaces a file at
    ``out`` that is not a pool of ours."""
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
    jobs = pair(discover([str(data)], recursive), None)
    if not jobs:
        raise ConfigError(f"no images in {data}")
    check_pool_out(out, [j.image for j in jobs], force)  # exit 2 before any image is measured
    kinds = synthetic_kinds(categories) + (coupled_kinds(categories) if coupled else [])
    series_of = SeriesOf(jobs, runner, union_of(by_mode), kinds, seed, size)
    await run(jobs, series_of)
    series = series_of.in_order()
    if not series:
        raise ConfigError(f"no readable images in {data}")
    meta, records = vote_series(series, by_mode, cards_hashes=cards.hashes,
                                calibration=calibration, source=str(data), size=size,
                                seed=seed)  # fmt: skip
    return write_pool(out, meta, records)


class SeriesOf:
    """`experience build`'s process on the batch path: one decoded image in, its synthetic
    series measured (``measure``, in a worker thread); ``in_order`` gives them back in the
    folder's order whatever order they finished in, so a pool does not depend on timing."""

    def __init__(
        self,
        jobs: Sequence[Job],
        runner: ToolRunner,
        cards: Sequence[ToolCard],
        kinds: Sequence[str],
        seed: int,
        size: int | None,
    ):
        self.names = _names(jobs)
        self.runner, self.cards, self.kinds = runner, list(cards), list(kinds)
        self.seed, self.size = seed, size
        self.measured: dict[str, list[Series]] = {}

    async def __call__(self, one: Pair) -> Result:
        name = self.names[one.job.image]
        self.measured[name] = await asyncio.to_thread(
            measure, one.image.pixels, name, self.kinds, self.runner, self.cards, self.seed,
            self.size,
        )  # fmt: skip
        return one.result()

    def in_order(self) -> list[Series]:
        return [s for name in self.names.values() for s in self.measured.get(name, [])]


def _names(jobs: Sequence[Job]) -> dict[Path, str]:
    """Each image's name in the pool (its records' source, its distortions' seed): the file
    stem, numbered when an earlier image has the same stem."""
    names: dict[Path, str] = {}
    used: set[str] = set()
    for j in jobs:
        stem = j.image.stem
        name = stem if stem not in used else f"{stem}_{len(used)}"
        used.add(name)
        names[j.image] = name
    return names


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
