"""``agentiqa experience build``: a pool from a folder of the user's clean images."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np

from agentiqa_cli.errors import ConfigError, ImageError
from agentiqa_cli.experience.measure import build_records
from agentiqa_cli.experience.pool import Pool, write_pool
from agentiqa_cli.imaging.discover import discover
from agentiqa_cli.imaging.load import load_image
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
    on_image: Callable[[str, str], None] | None = None,
) -> Pool:
    """Measure every clean image of ``data`` and write the pool to ``out``.
    ``on_image(name, status)`` reports each image (status "ok" or the decode error)."""
    data = Path(data)
    if data.is_file():
        raise ConfigError(
            f"{data}: experience build takes a folder of clean images (MOS tables are not "
            "supported yet)"
        )
    found = [p for p, _ in discover([str(data)], recursive)]
    if not found:
        raise ConfigError(f"no images in {data}")
    by_mode = {m: candidate_cards(cards, m, learned_tools, tools) for m in modes}
    for m, cs in by_mode.items():
        if len(cs) < 2:
            raise ConfigError(f"{m}: at least two candidate tools are needed, got {len(cs)}")
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
    )  # fmt: skip
    if len(loaded) < 1 or not records:
        raise ConfigError(f"no readable images in {data}")
    return write_pool(out, meta, records)
