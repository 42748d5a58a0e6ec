"""Detector readings → distortion findings (category, severity, one-line reason).

Severity comes from the reading's normalized score on its tool card, so it shares one
source of truth with the scores: the built-in cards are fitted against a pseudo-MOS of
``5 - 0.8 * level`` (bench.builtin_fit), so the cut points below sit halfway between the
scores of neighbouring synthetic levels — level 1 reads "slight", 2 "moderate", 3-4
"severe", 5 "extreme", and an undistorted photo "none".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache

from agentiqa_cli.categories import category_of_detector, says_of_detector
from agentiqa_cli.records import SEVERITIES, Finding, Severity
from agentiqa_cli.resources import default_cards_dir
from agentiqa_cli.tools.cards import CardSet, load_cards

# (lowest normalized score for this severity, severity), best first
CUTS: tuple[tuple[float, Severity], ...] = (
    (4.6, "none"),
    (3.8, "slight"),
    (3.0, "moderate"),
    (1.4, "severe"),
)

# ``colorfulness`` and ``colorcast`` score but make no finding (categories.py files no
# distortion under them).
# Low colourfulness is a style (a misty morning, a forest in shade, black and white), not a
# defect. A cast is a defect, but without a reference no reading tried here tells it from a
# scene's own colour (scripts/cast_check.py): a frame filled by one coloured subject (an orange
# flower, green moss, a backlit leaf) moves every illuminant estimate as a gain does. Above
# the highest ``colorcast`` of the fit set's clean images no level 4-5 cast of the held-out
# realset is left; at its clean 97th percentile 9% are found. The best combination measured (a
# logistic over the reading, white point, Gasparini & Schettini's cast index, low-chroma
# pixels, a shared shadow/highlight offset and channel clipping, fitted on the fit set) found
# 34% of them while calling 2 of the realset's 38 held-out clean images cast; the goal is 95%.
# ``colorcast`` stays a tool (``score --tools colorcast``) and evidence for a model.

# A camera's own JPEG save (quality 70 and up) leaves 8x8 steps on dark, smooth skies that
# blockiness reads as moderate, and on wide smooth gradients (a clear sky, a bokeh backdrop, a
# flat render) at q75-85 as severe. Where the quantizer's lattice in the pixels
# (jpeg_quality) shows that the coarsest save was such a one, or finer, those steps name no
# visible compression: blockiness reads "slight" there. Only where the lattice itself was
# read (below 100: a save at q70-85 is what made those steps) does that hold for severe
# steps too; without a lattice severe blocking stands (an image edited after a coarse save
# loses the lattice but keeps its blocks).
#
# The same save clamps the ringing at the edges of deep colours to 0 or 255, which
# ``saturation_clip`` reads as clipped chroma: a clean, vivid yellow flower reads 0.076 as a
# PNG, 0.103 at q94, 0.116 at q84 and 0.124 at q75, where "moderate" starts at 0.11. Where
# the lattice reads such a save (q70 or finer, below 100), a moderate share is that save's:
# "slight". A severe one stands (the fit photos oversaturated at level 3 read a median of
# 0.27, "severe").
CAMERA_JPEG = 70.0
NO_LATTICE = 100.0


def _corroborated(name: str, severity: Severity, readings: Mapping[str, float]) -> Severity:
    quality = readings.get("jpeg_quality")
    if quality is None or quality < CAMERA_JPEG:
        return severity
    saved = quality < NO_LATTICE  # the lattice was read: a camera's save made the pixels
    if name == "blockiness" and severity in ("moderate", "severe"):
        return "slight" if severity == "moderate" or saved else severity
    if name == "saturation_clip" and severity == "moderate" and saved:
        return "slight"
    return severity


_Reason = Callable[[float], str]


def _camera_reads(what: str) -> _Reason:
    """The wording of a camera model head's reading (tools/camera_model.py): a 1-5 score."""
    return lambda v: f"the camera model reads {what} at {v:.2f} of 5"


# how each detector words its reading in a finding; the category comes from categories.py
REASONS: dict[str, _Reason] = {
    "sharpness": lambda v: f"sharpness {v:.2f} in the sharpest region of the image",
    "page_sharpness": lambda v: (
        f"a page's glyphs read sharpness {v:.2f} (a page in focus: about 0.9)"
    ),
    "pixelation": lambda v: (
        f"pixelated: {v:.0%} of rows/columns repeat (blocks of ~{1 / max(1e-3, 1 - v):.0f} px)"
    ),
    "noise": lambda v: f"noise sigma {v:.3f} of full scale",
    "blockiness": lambda v: f"8×8 block-grid steps stand out by {v:.2f}",
    "jpeg_quality": lambda v: (
        f"the pixels went through a JPEG save at about quality {v:.0f}"
        if v < 100
        else "no JPEG save coarser than about quality 85 shows in the pixels"
    ),
    "ringing": lambda v: (
        f"a JPEG save's ringing: the flat background spreads {v:.1f} codes more near lines"
        " and text inside their 8x8 blocks than outside"
    ),
    "underexposure": lambda v: (
        f"even the highlights only reach {v:.2f} of full scale (brightest channel)"
    ),
    "overexposure": lambda v: (
        f"clipped highlights {v:.2f} (areas with a channel at full scale, plus half the"
        " near-white shoulder)"
    ),
    "contrast": lambda v: (
        f"tonal spread {v:.2f} (darkest to brightest channel value, 0.5th-99.5th)"
    ),
    "posterization": lambda v: f"posterized: tones {2**v:.0f} codes apart on average (banding)",
    "saturation_clip": lambda v: f"{v:.1%} of the image clipped out of gamut with its texture lost",
    # the camera model's heads (tools/camera_model.py): their reading is a 1-5 score
    "camera_blur": _camera_reads("lost detail (defocus, shake or an upscale)"),
    "resolution": lambda v: (
        f"an upscale's interpolation lattice, with the detail lost read at {v:.2f} of 5"
    ),
    "camera_noise": _camera_reads("sensor noise"),
    "camera_compression": _camera_reads("JPEG compression"),
    "camera_under": _camera_reads("under-exposure"),
    "camera_over": _camera_reads("over-exposure"),
}


def _reason(detector: str, raw: float) -> str:
    say = REASONS.get(detector)
    return say(raw) if say else f"{detector} reading {raw:.3g}"


def band(severity: Severity) -> tuple[float, float]:
    """The normalized scores (low, high) that read as ``severity``."""
    bounds = [5.0, *(cut for cut, _ in CUTS), 1.0]
    names = [sev for _, sev in CUTS] + ["extreme"]
    i = names.index(severity)
    return bounds[i + 1], bounds[i]


# How far below the lowest of them two or more readings of one category put the cap when
# they agree: a soft minimum, -AGREE log sum exp(-v / AGREE). One reading is its own cap; two
# equal ones cap AGREE ln 2 = 0.14 lower; a second reading far above the lowest changes
# nothing. Where both detectors of a category sit near their worst (the camera model's
# under head and ``underexposure`` at darken levels 4-5), the lowest alone orders the levels
# by the head's last wobble; the soft minimum lets the other reading order them too. Chosen
# on the fit set's lossless and camera series (scripts/quality_check.py's per-kind SRCC
# within photos): 0.1, 0.15, 0.2, 0.25, 0.3 read lossless 0.9687, 0.9696, 0.9706, 0.9704,
# 0.9703 (min alone 0.9687; darken 0.966 -> 0.991 at 0.2) and camera 0.946 throughout.
AGREE = 0.2


def soft_min(values: Sequence[float], temperature: float = AGREE) -> float:
    """A minimum that also counts the readings close to it (never above the minimum)."""
    low = min(values)
    return low - temperature * math.log(sum(math.exp((low - v) / temperature) for v in values))


def cap_for(finding: Finding, norms: Mapping[str, float]) -> float:
    """The highest score an image with ``finding`` may get, so that the words and the number
    agree: the normalized scores of the detectors that measured the category (``norms``:
    tool name -> normalized score), their soft minimum when several did, kept within the
    finding's severity band; the band's top when no detector of the category was read (a
    model's finding)."""
    low, high = band(finding.severity)
    measured = [v for t, v in norms.items() if category_of_detector(t) == finding.category]
    return min(high, max(low, soft_min(measured))) if measured else high


def severity_of(norm: float) -> Severity:
    for cut, sev in CUTS:
        if norm >= cut:
            return sev
    return "extreme"


@lru_cache(maxsize=1)
def _default_cards() -> CardSet:
    return load_cards(default_cards_dir())


def findings(readings: Mapping[str, float], cards: CardSet | None = None) -> list[Finding]:
    """One Global finding per category that a detector measured, the worst one winning.

    ``readings`` maps detector tool names (their cards' names) to raw values; names that are
    not built-in detectors are ignored. Severity "none" findings are kept: they carry the
    measured value, which answers "is it noisy?" with a number. ``cards`` defaults to the
    shipped tool cards.
    """
    cards = cards or _default_cards()
    best: dict[str, Finding] = {}

    # on a tie the detector earlier in the default set wins (the signal detectors before the
    # camera model's heads): its reason cites a plain measurement (a noise sigma, a sharpness)
    def order(name: str) -> int:
        return (cards.get(name).default_order or 99) if name in cards else 99

    for name, raw in sorted(readings.items(), key=lambda kv: order(kv[0])):
        category = category_of_detector(name)
        if category is None or name not in cards or raw is None or raw != raw:
            continue
        sev = _corroborated(name, severity_of(cards.get(name).normalize(float(raw))), readings)
        f = Finding(
            category=category,
            severity=sev,
            reason=f"{_reason(name, float(raw))} ({sev})",
            says="" if sev == "none" else says_of_detector(name),
        )
        old = best.get(category)
        if old is None or SEVERITIES.index(sev) > SEVERITIES.index(old.severity):
            best[category] = f
    _low_light(best)
    return sorted(best.values(), key=lambda f: (-SEVERITIES.index(f.severity), f.category))


def under_exposed(f: Finding) -> bool:
    """A finding of under-exposure (its category, Brightness change, goes either way)."""
    return f.says == says_of_detector("underexposure")


def _low_light(best: dict[str, Finding]) -> None:
    """Low light: an under-exposed image whose noise shows too (a camera gained the dark
    frame back up, its noise with it) is named as both, each at least "moderate". Either
    reading alone at "slight" is within what clean photos show; the two together are what a
    photographer calls a low-light shot, dark and grainy. No clean image of the fit set, the
    realset (lossless, camera JPEGs at q75 and q80-95, either recipe), the renders or the
    drawings reads both."""
    dark = best.get(category_of_detector("underexposure") or "")
    grain = best.get(category_of_detector("noise") or "")
    if dark is None or grain is None or not under_exposed(dark):
        return
    if "none" in (dark.severity, grain.severity):
        return
    for f, other in ((dark, "noise"), (grain, "under-exposure")):
        if f.severity == "slight":
            best[f.category] = f.model_copy(
                update={
                    "severity": "moderate",
                    "reason": f"{f.reason.removesuffix(' (slight)')} with {other}: low light"
                    " (moderate)",
                }
            )
