"""Labelled IQA datasets → one typed list of (image, MOS, reference, distortion type).

``load_dataset(path)`` takes the score file or the dataset folder, detects the layout (or
takes ``layout=``), resolves every path against the dataset root, and can keep a seeded
random sample or the first N rows. The per-layout readers and what was verified about
each format live in ``layouts.py``.
"""

from __future__ import annotations

import difflib
import random
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from agentiqa_cli.bench import layouts
from agentiqa_cli.bench.layouts import MosItem, Parsed
from agentiqa_cli.bench.tables import read_csv
from agentiqa_cli.errors import ConfigError

__all__ = ["LAYOUTS", "MosDataset", "MosItem", "detect_layout", "load_dataset"]

Reader = Callable[[Path], Parsed]

# layout → (reader, score file names in the order we look for them, display name)
_LAYOUTS: dict[str, tuple[Reader, tuple[str, ...], str]] = {
    "csv": (layouts.read_generic, (), "generic CSV (image, mos[, reference, distortion])"),
    "kadid10k": (layouts.read_kadid, ("dmos.csv",), "KADID-10k"),
    "tid2013": (layouts.read_tid2013, ("mos_with_names.txt",), "TID2013"),
    "koniq10k": (
        layouts.read_koniq,
        ("koniq10k_scores_and_distributions.csv", "koniq10k_distributions_sets.csv"),
        "KonIQ-10k",
    ),
    "spaq": (
        layouts.read_spaq,
        (
            "MOS and Image attribute scores.csv",
            "MOS_and_Image_attribute_scores.csv",
            "MOS and Image attribute scores.xlsx",
        ),
        "SPAQ",
    ),
    "agiqa3k": (layouts.read_agiqa3k, ("data.csv",), "AGIQA-3K"),
    "bid": (
        layouts.read_bid,
        ("DatabaseGrades.csv", "DatabaseGrades.xlsx", "DatabaseGrades.xls"),
        "BID",
    ),
}
LAYOUTS: tuple[str, ...] = tuple(_LAYOUTS)
_ALIASES = {
    "generic": "csv",
    "kadid": "kadid10k",
    "kadid-10k": "kadid10k",
    "tid": "tid2013",
    "koniq": "koniq10k",
    "koniq-10k": "koniq10k",
    "agiqa": "agiqa3k",
    "agiqa-3k": "agiqa3k",
}


class MosDataset(BaseModel):
    """A loaded dataset. ``mos_range`` is the layout's nominal MOS scale (None if unknown)."""

    model_config = ConfigDict(extra="forbid")

    layout: str
    name: str
    root: Path
    source: Path
    mos_range: tuple[float, float] | None = None
    items: list[MosItem]
    notes: list[str] = Field(default_factory=list)

    @property
    def distortions(self) -> list[str]:
        return sorted({i.distortion for i in self.items if i.distortion})


def canonical_layout(name: str) -> str:
    key = name.strip().lower().replace("_", "-")
    key = _ALIASES.get(key, key.replace("-", ""))
    if key not in _LAYOUTS:
        options = list(_LAYOUTS) + list(_ALIASES)
        close = difflib.get_close_matches(name.lower(), options, n=2, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ConfigError(f"unknown dataset layout {name!r} (known: {', '.join(LAYOUTS)}){hint}")
    return key


def _header_has(path: Path, *columns: str) -> bool:
    try:
        table = read_csv(path)
    except ConfigError:
        return False
    return all(table.has(c) for c in columns)


def _layout_of_file(path: Path) -> str | None:
    name = path.name.lower()
    for layout, (_, files, _) in _LAYOUTS.items():
        if name in {f.lower() for f in files}:
            # dmos.csv and data.csv are common names: trust them only with the right columns
            if layout == "kadid10k" and not _header_has(path, "dist_img"):
                break
            if layout == "agiqa3k" and not _header_has(path, "mos_quality"):
                break
            return layout
    if path.suffix.lower() in (".csv", ".tsv", ".txt") and _header_has(path, "image", "mos"):
        return "csv"
    return None


def _find_in(folder: Path, layout: str) -> Path | None:
    files = _LAYOUTS[layout][1]
    for where in (folder, folder / "Annotations", folder / "annotations"):
        for f in files:
            if (where / f).is_file() and _layout_of_file(where / f) == layout:
                return where / f
    return None


def detect_layout(path: Path, layout: str | None = None) -> tuple[str, Path]:
    """``(layout, score file)`` for a score file or a dataset folder."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"dataset {path}: no such file or folder")
    if layout is not None:
        layout = canonical_layout(layout)
        if path.is_file():
            return layout, path
        if layout == "csv":
            found = [p for p in sorted(path.glob("*.csv")) if _layout_of_file(p) == "csv"]
            if len(found) == 1:
                return layout, found[0]
            raise ConfigError(f"dataset {path}: pass the CSV file itself ({len(found)} candidates)")
        score_file = _find_in(path, layout)
        if score_file is None:
            wanted = " or ".join(_LAYOUTS[layout][1])
            raise ConfigError(f"dataset {path}: no {wanted} for layout {layout}")
        return layout, score_file
    if path.is_file():
        found_layout = _layout_of_file(path)
        if found_layout is None:
            raise ConfigError(
                f"dataset {path}: unknown layout; a CSV needs columns image and mos, or name the "
                f"layout with --layout ({', '.join(LAYOUTS)})"
            )
        return found_layout, path
    hits = [(lay, f) for lay in LAYOUTS if lay != "csv" and (f := _find_in(path, lay))]
    if not hits:
        hits = [("csv", p) for p in sorted(path.glob("*.csv")) if _layout_of_file(p) == "csv"]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise ConfigError(
            f"dataset {path}: no known score file here (KADID-10k dmos.csv, TID2013 "
            f"mos_with_names.txt, KonIQ-10k koniq10k_scores_and_distributions.csv, SPAQ "
            f"'MOS and Image attribute scores', AGIQA-3K data.csv, BID DatabaseGrades, or a CSV "
            f"with columns image and mos); pass the file or --layout"
        )
    listed = ", ".join(f"{f.name} ({lay})" for lay, f in hits)
    raise ConfigError(f"dataset {path}: several score files ({listed}); pass one of them")


def load_dataset(
    path: Path,
    layout: str | None = None,
    *,
    limit: int | None = None,
    sample: int | None = None,
    seed: int = 0,
    check_files: bool = True,
) -> MosDataset:
    """Read a dataset; ``sample`` keeps N random rows (seeded, file order kept), then
    ``limit`` the first N. Missing image files are noted (they score as failed); a dataset
    where none of the images exist is a ConfigError (wrong folder, most likely)."""
    found_layout, score_file = detect_layout(Path(path), layout)
    reader, _, display = _LAYOUTS[found_layout]
    parsed = reader(score_file)
    items = parsed.items
    notes = list(parsed.notes)
    if not items:
        raise ConfigError(f"{score_file}: no rows")
    total = len(items)
    if sample is not None:
        if sample < 1:
            raise ConfigError(f"--sample must be at least 1, got {sample}")
        keep = sorted(random.Random(seed).sample(range(total), min(sample, total)))
        items = [items[i] for i in keep]
    if limit is not None:
        if limit < 1:
            raise ConfigError(f"--limit must be at least 1, got {limit}")
        items = items[:limit]
    if len(items) < total:
        notes.append(f"using {len(items)} of {total} rows")
    if check_files:
        missing = [i for i in items if not i.image.is_file()]
        if len(missing) == len(items):
            raise ConfigError(
                f"dataset {score_file}: none of the {len(items)} images exist (first: "
                f"{missing[0].image}); is this the dataset folder?"
            )
        if missing:
            notes.append(f"{len(missing)} image files missing (they count as failed)")
    return MosDataset(
        layout=found_layout,
        name=display if found_layout != "csv" else score_file.name,
        root=parsed.root,
        source=score_file,
        mos_range=parsed.mos_range,
        items=items,
        notes=notes,
    )
