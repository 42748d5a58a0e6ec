"""What a benchmark evaluates: a *method* maps a batch of items to one score per item.

A method is any ``predict(items) -> list[float | None]``; ``None`` marks an image the method
could not score (unreadable file, tool unavailable), which the reports count as failed.
The CLI builds methods for ``assess`` and ``score``; ``tool_method`` wraps a single tool.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from agentiqa_cli.errors import ImageError
from agentiqa_cli.imaging.load import LoadedImage, load_image
from agentiqa_cli.tools.cards import ToolCard
from agentiqa_cli.tools.runner import ToolRunner


@dataclass(frozen=True, eq=False)
class Item:
    """One thing to score: an image, its reference if any, and for MCQs the question."""

    image: Path
    reference: Path | None = None
    question: str | None = None
    options: dict[str, str] | None = None  # letter → text, in display order
    key: str = ""  # a stable id (MCQ id, manifest row) for traces


Predict = Callable[[list[Item]], list[float | None]]
OnItem = Callable[[], None]

Decoded = tuple[LoadedImage | None, LoadedImage | None, str | None]


def decode_in_reference_order(
    items: Sequence[Item], need_reference: bool = True
) -> Iterator[tuple[int, Decoded]]:
    """Yield ``(index, (image, reference, error))`` for every item, each file decoded once.

    Items are visited grouped by reference so a reference shared by many distorted images
    (81 in KADID-10k, 25 in TID2013) is decoded once and only one is held in memory; the
    caller puts results back by index, so the input order is kept.
    """
    order = sorted(range(len(items)), key=lambda i: str(items[i].reference or ""))
    ref_path: Path | None = None
    ref: LoadedImage | None = None
    ref_error: str | None = None
    for i in order:
        item = items[i]
        want_ref = need_reference and item.reference is not None
        if want_ref and item.reference != ref_path:
            ref_path, ref, ref_error = item.reference, None, None
            try:
                ref = load_image(item.reference)  # type: ignore[arg-type]
            except ImageError as e:
                ref_error = f"reference: {e}"
        if want_ref and ref_error:
            yield i, (None, None, ref_error)
            continue
        try:
            img = load_image(item.image)
        except ImageError as e:
            yield i, (None, None, str(e))
            continue
        yield i, (img, ref if want_ref else None, None)


def tool_method(
    runner: ToolRunner, card: ToolCard, raw: bool = False, on_item: OnItem | None = None
) -> Predict:
    """A method scoring each item with one tool: normalized [1, 5] score, or raw if asked.

    A full-reference tool gets each item's reference; a no-reference tool never decodes it.
    ``on_item`` is called once per finished item (progress bars).
    """

    def predict(items: list[Item]) -> list[float | None]:
        out: list[float | None] = [None] * len(items)
        for i, (img, ref, error) in decode_in_reference_order(items, card.mode == "FR"):
            if error is None and img is not None:
                score = runner.run(card, img, ref)
                if score.error is None:
                    out[i] = score.raw if raw else score.norm
            if on_item is not None:
                on_item()
        return out

    return predict
