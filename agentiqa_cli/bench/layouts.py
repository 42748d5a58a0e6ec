"""Readers for the labelled IQA datasets users actually have, one function per layout.

What was checked against public sources (loaders in other projects that read the original
files) and what is assumed:

- **csv** (ours): ``image, mos[, reference, distortion]``, paths relative to the CSV.
- **KADID-10k**: ``dmos.csv`` with ``dist_img, ref_img, dmos, var`` (confirmed: IQA-PyTorch
  ``scripts/process_kadid10k.py`` reads columns 0–3 in that order); images and references
  both in ``images/`` (confirmed: IQA-PyTorch ``default_dataset_configs.yml``); the ``dmos``
  column is a MOS on 1–5, higher is better (confirmed: same config, ``mos_range: [1, 5]``,
  ``lower_better: false``). Names ``I01_01_05.png`` = reference 01, type 01, level 05; the 25
  type names follow the KADID-10k paper's Table 1 (confirmed in several loaders).
- **TID2013**: ``mos_with_names.txt``, one ``MOS name`` per line (confirmed: IQA-PyTorch
  ``scripts/process_tid.py``); distorted images in ``distorted_images/``, references in
  ``reference_images/`` named ``I01.BMP`` but ``i25.bmp`` for the 25th and some distorted
  names upper-case (confirmed: the same script patches both cases; we look names up
  case-insensitively); MOS range 0–9 (confirmed: IQA-PyTorch config). The 24 type names are
  the readme's Table I (confirmed), shortened here to snake_case.
- **KonIQ-10k**: ``koniq10k_scores_and_distributions.csv`` with header
  ``image_name,c1,c2,c3,c4,c5,c_total,MOS,SD,MOS_zscore`` (confirmed in two projects); we use
  ``MOS`` (1–5); ``koniq10k_distributions_sets.csv`` (the official split file) has the same
  columns and is read the same way. Images in ``1024x768/`` or ``512x384/`` (confirmed).
- **SPAQ**: ``Annotations/MOS and Image attribute scores.xlsx`` with columns ``Image name``,
  ``MOS``, Brightness, Colorfulness, Contrast, Noisiness, Sharpness (confirmed in several
  loaders, which also read a CSV export of it); images in ``TestImage/`` (confirmed); MOS
  0–100 (assumed from IQA-PyTorch's ``mos_range``).
- **AGIQA-3K**: ``data.csv`` with ``name, prompt, adj1, adj2, style, mos_quality,
  std_quality, mos_align, std_align`` (confirmed); we use ``mos_quality``. The image folder's
  name varies between copies (``images/``, ``Images/``, ``image/``, or none): we look for the
  first listed image in each. MOS range 0–5 is assumed.
- **BID**: ``DatabaseGrades.xlsx`` (or a CSV export): column 1 the image number, column 2
  the mean score, one header row (confirmed: loaders read cells by position); images
  ``DatabaseImage%04d.JPG`` (confirmed); their folder is found by looking for the first image
  in the root and its sub-folders (assumed layout). MOS range 0–5 is assumed. The header
  names (``Image Number``, ``Average Subjective Score``) are not relied on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from agentiqa_cli.bench.methods import Item
from agentiqa_cli.bench.tables import Folder, find_dir, read_csv, read_table
from agentiqa_cli.errors import ConfigError


class MosItem(BaseModel):
    """One labelled image: path, mean opinion score, reference and distortion type if known."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    image: Path
    mos: float
    reference: Path | None = None
    distortion: str | None = None

    def item(self) -> Item:
        return Item(image=self.image, reference=self.reference, key=str(self.image))


@dataclass
class Parsed:
    root: Path
    items: list[MosItem]
    mos_range: tuple[float, float] | None
    notes: list[str] = field(default_factory=list)


KADID_TYPES: tuple[str, ...] = (
    "gaussian_blur", "lens_blur", "motion_blur", "color_diffusion", "color_shift",
    "color_quantization", "color_saturation_1", "color_saturation_2", "jpeg2000", "jpeg",
    "white_noise", "white_noise_color_component", "impulse_noise", "multiplicative_noise",
    "denoise", "brighten", "darken", "mean_shift", "jitter", "non_eccentricity_patch",
    "pixelate", "quantization", "color_block", "high_sharpen", "contrast_change",
)  # fmt: skip

TID2013_TYPES: tuple[str, ...] = (
    "additive_gaussian_noise", "color_component_noise", "spatially_correlated_noise",
    "masked_noise", "high_frequency_noise", "impulse_noise", "quantization_noise",
    "gaussian_blur", "image_denoising", "jpeg", "jpeg2000", "jpeg_transmission_errors",
    "jpeg2000_transmission_errors", "non_eccentricity_pattern_noise",
    "local_blockwise_distortions", "mean_shift", "contrast_change", "color_saturation_change",
    "multiplicative_gaussian_noise", "comfort_noise", "lossy_compression_of_noisy_images",
    "color_quantization_dither", "chromatic_aberrations", "sparse_sampling_reconstruction",
)  # fmt: skip


def _type_name(names: tuple[str, ...], number: str) -> str | None:
    k = int(number)
    return names[k - 1] if 1 <= k <= len(names) else None


def _resolve(root: Path, cell: str) -> Path:
    p = Path(cell).expanduser()
    return p if p.is_absolute() else root / p


def read_generic(path: Path) -> Parsed:
    table = read_csv(path)
    root = path.parent
    i_img, i_mos = table.col("image"), table.col("mos")
    i_ref = table.col("reference") if table.has("reference") else None
    i_dist = table.col("distortion") if table.has("distortion") else None
    items = []
    for line, row in table.rows:
        name = table.cell(row, i_img)
        if not name:
            raise ConfigError(f"{path}:{line}: empty image cell")
        ref = table.cell(row, i_ref) if i_ref is not None else ""
        dist = table.cell(row, i_dist) if i_dist is not None else ""
        items.append(
            MosItem(
                image=_resolve(root, name),
                mos=table.number(line, row, i_mos, "mos"),
                reference=_resolve(root, ref) if ref else None,
                distortion=dist or None,
            )
        )
    return Parsed(root, items, None)


_KADID_NAME = re.compile(r"^I\d+_(\d+)_(\d+)\.", re.IGNORECASE)


def read_kadid(path: Path) -> Parsed:
    table = read_csv(path)
    root = path.parent
    folder = Folder(find_dir(root, "images") or root)
    i_dist, i_ref, i_mos = table.col("dist_img"), table.col("ref_img"), table.col("dmos")
    items = []
    for line, row in table.rows:
        name = table.cell(row, i_dist)
        m = _KADID_NAME.match(name)
        items.append(
            MosItem(
                image=folder.find(name),
                mos=table.number(line, row, i_mos, "dmos"),
                reference=folder.find(table.cell(row, i_ref)),
                distortion=_type_name(KADID_TYPES, m.group(1)) if m else None,
            )
        )
    return Parsed(root, items, (1.0, 5.0))


_TID_NAME = re.compile(r"^i(\d+)_(\d+)_(\d+)\.", re.IGNORECASE)


def read_tid2013(path: Path) -> Parsed:
    table = read_csv(path, header=False)
    root = path.parent
    dist = Folder(find_dir(root, "distorted_images") or root)
    refs = Folder(find_dir(root, "reference_images") or root)
    items = []
    for line, row in table.rows:
        fields = " ".join(row).split()  # whitespace-separated "mos name"
        if len(fields) != 2:
            raise ConfigError(f"{path}:{line}: expected 'MOS name', got {' '.join(row)!r}")
        mos = table.number(line, fields, 0, "MOS")
        m = _TID_NAME.match(fields[1])
        items.append(
            MosItem(
                image=dist.find(fields[1]),
                mos=mos,
                reference=refs.find(f"I{m.group(1)}.BMP") if m else None,
                distortion=_type_name(TID2013_TYPES, m.group(2)) if m else None,
            )
        )
    return Parsed(root, items, (0.0, 9.0))


def read_koniq(path: Path) -> Parsed:
    table = read_csv(path)
    root = path.parent
    images = find_dir(root, "1024x768", "512x384")
    notes = [f"images from {images.name}/"] if images else []
    folder = Folder(images or root)
    i_img, i_mos = table.col("image_name"), table.col("MOS")
    items = [
        MosItem(
            image=folder.find(table.cell(row, i_img)), mos=table.number(line, row, i_mos, "MOS")
        )
        for line, row in table.rows
    ]
    return Parsed(root, items, (1.0, 5.0), notes)


def read_spaq(path: Path) -> Parsed:
    table = read_table(path)
    root = path.parent.parent if path.parent.name.lower() == "annotations" else path.parent
    folder = Folder(find_dir(root, "TestImage", "TestImages", "Test Images") or root)
    i_img, i_mos = table.col("Image name", "image_name", "image"), table.col("MOS")
    items = [
        MosItem(
            image=folder.find(table.cell(row, i_img)), mos=table.number(line, row, i_mos, "MOS")
        )
        for line, row in table.rows
    ]
    return Parsed(root, items, (0.0, 100.0))


def _folder_holding(root: Path, first: str, names: tuple[str, ...]) -> Folder | None:
    """The folder (one of ``names`` under root, or root) that holds the file ``first``."""
    for d in [d for n in names if (d := find_dir(root, n))] + [root]:
        f = Folder(d)
        if first and f.find(first).exists():
            return f
    return None


def read_agiqa3k(path: Path) -> Parsed:
    table = read_csv(path)
    root = path.parent
    i_img, i_mos = table.col("name"), table.col("mos_quality")
    first = table.cell(table.rows[0][1], i_img) if table.rows else ""
    names = ("images", "image", "imgs")
    folder = _folder_holding(root, first, names) or Folder(find_dir(root, *names) or root)
    items = [
        MosItem(
            image=folder.find(table.cell(row, i_img)),
            mos=table.number(line, row, i_mos, "mos_quality"),
        )
        for line, row in table.rows
    ]
    return Parsed(root, items, (0.0, 5.0))


def read_bid(path: Path) -> Parsed:
    table = read_table(path)
    root = path.parent
    rows = list(table.rows)
    if _is_number(table.header[0] if table.header else ""):
        rows.insert(0, (1, table.header))  # no header row: the first row is data
    items_raw = []
    for line, row in rows:
        number = table.number(line, row, 0, "image number")
        items_raw.append(
            (f"DatabaseImage{int(number):04d}.JPG", table.number(line, row, 1, "score"))
        )
    try:
        subdirs = sorted(p.name for p in root.iterdir() if p.is_dir())
    except OSError:
        subdirs = []
    first = items_raw[0][0] if items_raw else ""
    folder = _folder_holding(root, first, tuple(subdirs)) or Folder(root)
    items = [MosItem(image=folder.find(n), mos=mos) for n, mos in items_raw]
    return Parsed(root, items, (0.0, 5.0))


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
