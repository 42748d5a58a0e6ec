"""Crop geometry for probing: normalized boxes → slices of the original pixels (Q-Probe Eq. 9).

A box from a model is checked here and nowhere else: finite numbers, x1 < x2 and y1 < y2,
inside [0, 1] (a rounding slip of up to ``CLAMP_SLACK`` is clamped, anything farther is
rejected: it is usually a box in pixel units), each side at least ``MIN_SIDE`` pixels, and
not a repeat (IoU > ``DUP_IOU``) of an earlier crop. A rejected box becomes a note for the
trace; it never raises.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray
from PIL import Image

from agentiqa_cli.agent.probe.records import MAX_BOXES, CropRecord
from agentiqa_cli.records import Box
from agentiqa_cli.vlm.base import ImagePart
from agentiqa_cli.vlm.images import fit_pixels

F32 = NDArray[np.float32]

MIN_SIDE = 32  # px, ours: smaller crops carry too little for any judgement
DUP_IOU = 0.7  # ours: a box this close to an earlier one shows nothing new
CLAMP_SLACK = 0.05
AUTO_ZOOM_FACTOR = 4  # --zoom auto probes images with more than 4× the VLM pixel budget

ZoomMode = Literal["off", "on", "auto"]
ZOOM_MODES: tuple[str, ...] = ("off", "on", "auto")


def should_zoom(
    mode: str, width: int, height: int, pixel_budget: int, full_resolution: bool = False
) -> bool:
    """Whether to probe an image: ``auto`` when the global view loses at least half the
    resolution along each side, i.e. a model that sees the image shrunk to ``pixel_budget``
    and the image has more than 4× that. ``full_resolution``: the judge already reads every
    pixel (the rules backend's detectors read full-resolution crops), so ``auto`` has no view
    to make up for and does not probe; probing it anyway made large photos score lower than
    the same photo at half the size. ``on`` always probes."""
    if mode not in ZOOM_MODES:
        raise ValueError(f"zoom mode must be one of {', '.join(ZOOM_MODES)}, got {mode!r}")
    if mode == "auto":
        return not full_resolution and width * height > AUTO_ZOOM_FACTOR * pixel_budget
    return mode == "on"


def _fmt(raw: Sequence[float]) -> str:
    return "[" + ", ".join(f"{v:.4g}" for v in raw) + "]"


def parse_box(raw: Sequence[float]) -> tuple[Box | None, str | None]:
    """A ``Box`` from ``[x1, y1, x2, y2]``, or None and why not. The note is also set when
    the box was accepted after clamping a rounding slip."""
    try:
        vals = [float(v) for v in raw]
    except (TypeError, ValueError):
        return None, f"{raw!r} rejected: not four numbers"
    if len(vals) != 4:
        return None, f"{_fmt(vals)} rejected: needs four numbers [x1, y1, x2, y2]"
    shown = _fmt(vals)
    if not all(math.isfinite(v) for v in vals):
        return None, f"{shown} rejected: not a finite number"
    if any(v < -CLAMP_SLACK or v > 1.0 + CLAMP_SLACK for v in vals):
        hint = " (pixel coordinates?)" if max(vals) > 2.0 else ""
        return None, f"{shown} rejected: outside [0, 1]{hint}"
    clamped = [min(1.0, max(0.0, v)) for v in vals]
    x1, y1, x2, y2 = clamped
    if not x1 < x2:
        return None, f"{shown} rejected: x1 ≥ x2 (empty box)"
    if not y1 < y2:
        return None, f"{shown} rejected: y1 ≥ y2 (empty box)"
    note = f"{shown} clamped to [0, 1]" if clamped != vals else None
    return Box(x1=x1, y1=y1, x2=x2, y2=y2), note


def cut(pixels: F32, px: tuple[int, int, int, int]) -> F32:
    """The crop: a view into the original array, at native resolution."""
    x0, y0, x1, y1 = px
    return pixels[y0:y1, x0:x1]


def crop_sha256(crop: F32) -> str:
    return hashlib.sha256(np.ascontiguousarray(crop, dtype=np.float32).tobytes()).hexdigest()


def fit_budget(crop: F32, pixel_budget: int | None) -> F32:
    """The crop as shown to the VLM: unchanged unless it exceeds the pixel budget."""
    h, w = crop.shape[:2]
    if pixel_budget is None or w * h <= pixel_budget:
        return crop
    u8 = (np.clip(crop, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
    small = fit_pixels(Image.fromarray(u8, mode="RGB"), pixel_budget)
    return np.asarray(small, dtype=np.float32) / np.float32(255.0)


def subject_overlap(box: Box, subject: Box | None) -> bool:
    """Whether a crop shows the subject: their intersection is at least a quarter of the
    smaller of the two (a crop grazing the subject's edge does not count)."""
    if subject is None:
        return False
    inter = box.intersection(subject)
    return inter > 0 and inter >= 0.25 * min(box.area, subject.area)


@dataclass(eq=False)
class Crop:
    """One accepted crop: its box, the native pixels, what is sent, and its identity."""

    id: str
    turn: int
    box: Box
    pixels: tuple[int, int, int, int]
    native: F32
    sent: F32
    sha256: str

    def part(self, name: str) -> ImagePart:
        return ImagePart(sha256=self.sha256, path=f"{name}#{self.id}", pixels=self.sent)

    def record(self) -> CropRecord:
        h, w = self.native.shape[:2]
        sh, sw = self.sent.shape[:2]
        return CropRecord(
            id=self.id,
            turn=self.turn,
            box=self.box,
            pixels=self.pixels,
            size=(w, h),
            sent_size=(sw, sh),
            sha256=self.sha256,
        )

    def view(self) -> dict[str, object]:
        """What a prompt shows about the crop."""
        return {
            "id": self.id,
            "turn": self.turn,
            "box": self.box.as_list(3),
            "width": int(self.native.shape[1]),
            "height": int(self.native.shape[0]),
        }


class CropBook:
    """Every crop of one image's probe: numbering and de-duplication across turns."""

    def __init__(self, pixels: F32, pixel_budget: int | None = None, min_side: int = MIN_SIDE):
        self.pixels = pixels
        self.height, self.width = int(pixels.shape[0]), int(pixels.shape[1])
        self.pixel_budget = pixel_budget
        # an image smaller than MIN_SIDE can still be cropped along its full extent
        self.min_w, self.min_h = min(min_side, self.width), min(min_side, self.height)
        self.crops: list[Crop] = []

    def accept(
        self, raw_boxes: Sequence[Sequence[float]], turn: int
    ) -> tuple[list[Crop], list[str]]:
        """Cut the valid boxes of one turn (at most ``MAX_BOXES``); a note for each box that
        was rejected, ignored or clamped."""
        new: list[Crop] = []
        notes: list[str] = []
        for i, raw in enumerate(raw_boxes, start=1):
            if i > MAX_BOXES:
                notes.append(f"box {i} ignored: at most {MAX_BOXES} boxes per turn")
                continue
            box, note = parse_box(raw)
            if note:
                notes.append(f"box {i} {note}")
            if box is None:
                continue
            crop, why = self.add_box(box, turn)
            if crop is None:
                notes.append(f"box {i} {box.as_list()} rejected: {why}")
                continue
            new.append(crop)
        return new, notes

    def add_box(self, box: Box, turn: int) -> tuple[Crop | None, str]:
        """Cut one already-valid box unless it is too small or repeats an earlier crop."""
        px = box.pixels(self.width, self.height)
        w, h = px[2] - px[0], px[3] - px[1]
        if w < self.min_w or h < self.min_h:
            return None, f"{w}×{h} px, each side needs ≥ {self.min_w} px"
        for old in self.crops:
            iou = box.iou(old.box)
            if iou > DUP_IOU:
                return None, f"repeats {old.id} (IoU {iou:.2f} > {DUP_IOU})"
        native = cut(self.pixels, px)
        crop = Crop(
            id=f"crop{len(self.crops) + 1}",
            turn=turn,
            box=box,
            pixels=px,
            native=native,
            sent=fit_budget(native, self.pixel_budget),
            sha256=crop_sha256(native),
        )
        self.crops.append(crop)
        return crop, ""
