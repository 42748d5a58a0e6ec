"""Detector readings → distortion findings (category, severity, one-line reason).

Severity comes from the reading's normalized score on its tool card, so it shares one
source of truth with the scores: the built-in cards are fitted against a pseudo-MOS of
``5 - 0.8 * level`` (bench.builtin_fit), so the cut points below sit halfway between the
scores of neighbouring synthetic levels — level 1 reads "slight", 2 "moderate", 3-4
"severe", 5 "extreme", and an undistorted photo "none".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import lru_cache

from agentiqa_cli.records import SEVERITIES, Category, Finding, Severity
from agentiqa_cli.tools.cards import CardSet, load_cards

# (lowest normalized score for this severity, severity), best first
CUTS: tuple[tuple[float, Severity], ...] = (
    (4.6, "none"),
    (3.8, "slight"),
    (3.0, "moderate"),
    (1.4, "severe"),
)

# below this colourfulness the image is treated as black-and-white on purpose: a detector
# cannot tell that from a fully desaturated photo, and calling every B/W photo an
# "extreme colour distortion" would be a false alarm on a whole genre
MONOCHROME = 0.002

_Reason = Callable[[float], str]

CATEGORY: dict[str, tuple[Category, _Reason]] = {
    "sharpness": ("Blurs", lambda v: f"sharpness {v:.2f} on the most detailed tiles (sharp ≥ 0.7)"),
    "pixelation": (
        "Sharpness",
        lambda v: (
            f"pixelated: {v:.0%} of rows/columns repeat (blocks of ~{1 / max(1e-3, 1 - v):.0f} px)"
        ),
    ),
    "noise": ("Noise", lambda v: f"noise sigma {v:.3f} of full scale"),
    "blockiness": ("Compression", lambda v: f"8×8 block-grid steps stand out by {v:.2f}"),
    "underexposure": (
        "Brightness change",
        lambda v: f"highlights only reach luma {v:.2f} (99.5th percentile)",
    ),
    "overexposure": (
        "Brightness change",
        lambda v: f"highlight mass {v:.2f} (blown or near-white pixels)",
    ),
    "contrast": ("Contrast", lambda v: f"luma spread {v:.2f} (0.5th-99.5th percentile)"),
    "colorfulness": ("Color distortions", lambda v: f"colourfulness {v:.3f}"),
    "colorcast": ("Color distortions", lambda v: f"neutral tones shifted {v:.1f} a*b* units"),
    "saturation_clip": (
        "Color distortions",
        lambda v: f"{v:.1%} of vivid pixels clipped out of gamut",
    ),
}


def severity_of(norm: float) -> Severity:
    for cut, sev in CUTS:
        if norm >= cut:
            return sev
    return "extreme"


@lru_cache(maxsize=1)
def _default_cards() -> CardSet:
    from agentiqa_cli.resources import default_cards_dir

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
    for name, raw in readings.items():
        if name not in CATEGORY or name not in cards or raw is None or raw != raw:
            continue
        if name == "colorfulness" and raw < MONOCHROME:
            continue
        category, reason = CATEGORY[name]
        sev = severity_of(cards.get(name).normalize(float(raw)))
        f = Finding(category=category, severity=sev, reason=f"{reason(float(raw))} ({sev})")
        old = best.get(category)
        if old is None or SEVERITIES.index(sev) > SEVERITIES.index(old.severity):
            best[category] = f
    return sorted(best.values(), key=lambda f: (-SEVERITIES.index(f.severity), f.category))
