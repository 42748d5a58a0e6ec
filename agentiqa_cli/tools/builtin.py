"""The built-in detectors by the tool cards' ``metric`` names (cards with ``backend:
builtin``): the signal detectors (``tools/detectors.py``) and, above them, the camera model's
heads and the resolution detector, which read the camera model (``tools/camera_model.py``),
which reads the signal detectors."""

from __future__ import annotations

from collections.abc import Callable

from agentiqa_cli.imaging.load import LoadedImage
from agentiqa_cli.records import Finding
from agentiqa_cli.tools.camera_model import RESOLUTION_TARGETS, shipped
from agentiqa_cli.tools.detectors import (
    CAMERA_HEADS,
    SIGNAL_DETECTORS,
    drawn,
    drawn_plain,
    enlarged,
    findings,
    jpeg_quality,
    lattice_found,
    page_sharpness,
    ringing,
    white_ground,
)

__all__ = ["DETECTORS", "detect", "detect_all"]

# Readings that a drawing's design trips: its white background, like a page's paper, is not
# blown light (``detectors.white_ground``), and its flat fills and straight edges (bars on
# the 8 px grid), on white or on a dark theme's flat colour (``detectors.drawn``), are not
# the blocks of a coarse save or of an enlargement; the ringing of its save around many
# small markers is not sensor noise where its background is plain (``detectors.drawn_plain``:
# noise would show there). On a drawing they stand aside by that reading; its save is still
# read by ``jpeg_quality`` (the quantizer's lattice, which a drawing's edges do not make) and
# by ``ringing`` (the save's ringing on its flat background, confined to the blocks).
DRAWN_ASIDE_SIGNALS: dict[str, Callable[[LoadedImage], float]] = {
    "overexposure": white_ground,  # raw readings, 0 on a clean photo
    "pixelation": drawn,
    "blockiness": drawn,
    "noise": drawn_plain,
}
DRAWN_ASIDE_HEADS: dict[str, Callable[[LoadedImage], float]] = {
    "over": white_ground,  # camera model heads, 1-5
    "compression": drawn,
    "noise": drawn_plain,
}


def _camera_head(head: str) -> Callable[[LoadedImage], float]:
    def read(image: LoadedImage) -> float:
        score = float(shipped().scores(image)[head])
        # detail lost to an upscale is the resolution detector's (a finding of its own)
        if head == "blur" and enlarged(image):
            return 5.0
        if head in DRAWN_ASIDE_HEADS:
            return score + (5.0 - score) * DRAWN_ASIDE_HEADS[head](image)
        return score

    read.__name__ = f"camera_{head}"
    return read


def _signal(name: str) -> Callable[[LoadedImage], float]:
    raw = SIGNAL_DETECTORS[name]
    if name not in DRAWN_ASIDE_SIGNALS:
        return raw
    aside = DRAWN_ASIDE_SIGNALS[name]

    def read(image: LoadedImage) -> float:
        # the camera model reads the raw reading (tools/camera_features.py)
        return raw(image) * (1.0 - aside(image))

    read.__name__ = name
    return read


def resolution(image: LoadedImage) -> float:
    """Resolution loss on 1-5: where an upscale's lattice is found (``detectors.enlarged``),
    the camera model's score of the detail lost (its blur head); else 5. An enlargement by
    4 found only by its phase (on the 8x8 grid's harmonic) reads no better than what an
    enlargement by 4 is worth (``RESOLUTION_TARGETS``): the aliasing of a reduction without
    a low-pass (nearest neighbour) leaves detail the blur head reads as kept."""
    if not enlarged(image):
        return 5.0
    detail = float(shipped().scores(image)["blur"])
    if lattice_found(image):
        return detail
    return min(detail, RESOLUTION_TARGETS[3])


DETECTORS: dict[str, Callable[[LoadedImage], float]] = {
    **{name: _signal(name) for name in SIGNAL_DETECTORS},
    **{f"camera_{h}": _camera_head(h) for h in CAMERA_HEADS},
    "resolution": resolution,
    # read by the camera model too, but not among SIGNALS: added after the model's other
    # readings were cached for training (tools/camera_features.JPEG_FEATURES)
    "jpeg_quality": jpeg_quality,
    # a drawing's coarse save, where clipping at its white hid the lattice (not read by the
    # camera model, which was trained before it)
    "ringing": ringing,
    # a page's blur, where the camera model (trained on photographs) reads a page as sharp
    "page_sharpness": page_sharpness,
}


def detect_all(image: LoadedImage) -> dict[str, float]:
    """Every detector's raw reading for one image."""
    return {name: fn(image) for name, fn in DETECTORS.items()}


def detect(image: LoadedImage) -> list[Finding]:
    """Findings of all detectors on one image (shipped cards for severities)."""
    return findings(detect_all(image))
