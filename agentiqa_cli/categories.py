"""The seven distortion categories and every fact about them, in one place.

The categories are the executor's (AgenticIQA, App. A.2): Blurs, Color distortions,
Compression, Noise, Brightness change, Sharpness, Contrast. Each ``CategoryFacts`` holds
what names the category in words (query patterns for the rules planner, words in answer
options, words in a MOS table's distortion type names) and the hint the rules generator adds
to a prompt. Each ``Distortion`` is one concrete distortion of a category: its synthetic
kinds (``imaging/distort.py``), the built-in detectors whose readings are its findings
(``tools/severity.py``) and the artefact types a probe files under it
(``agent/probe/records.py``).

Adding a distortion is one ``Distortion`` entry in ``DISTORTIONS``: its kinds, detector,
artefacts and any extra query words then reach every reader. The module imports nothing
from the rest of the package, so every layer can read it.

Pixelation is Compression: a mosaic is hard-edged blocks left by keeping too few samples
(coding at a lower resolution, macroblocks), the look of JPEG's 8x8 blocks rather than a
soft edge (the blur detector leaves it to the pixelation detector); the probe files mosaic
beside JPEG blocks, and the pixelation card lists Compression first. Sharpness keeps a loss of fine
detail without block edges.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, get_args

# AgenticIQA App. A.2: the executor's valid distortion categories, in the paper's order.
Category = Literal[
    "Blurs",
    "Color distortions",
    "Compression",
    "Noise",
    "Brightness change",
    "Sharpness",
    "Contrast",
]
CATEGORIES: tuple[Category, ...] = get_args(Category)


@dataclass(frozen=True)
class CategoryFacts:
    """What names a category in words, and the rules generator's prompt hint for it.

    ``patterns``: regular-expression alternatives (matched on lower-case query text at word
    boundaries) that name it in a user's query. ``option_words``: substrings that name it in
    a multiple-choice option or question. ``type_words``: substrings that name it in a MOS
    table's distortion type ("gaussian blur", "JPEG2000 compression").
    """

    name: Category
    hint: str
    patterns: tuple[str, ...]
    option_words: tuple[str, ...]
    type_words: tuple[str, ...]


@dataclass(frozen=True)
class Distortion:
    """One distortion of a category and the names other modules know it by.

    ``kinds``: synthetic kinds of ``imaging/distort.py``; ``camera_kinds``: of the camera series
    (``bench/camera.py``: damage, then a camera JPEG save); ``detectors``:
    built-in detectors whose readings are findings of it (their tool cards list the category
    first); ``artefacts``: probe artefact types. ``patterns``/``option_words``/``type_words``
    add to the category's. ``says``: what a finding of it names beside its category when the
    category alone does not say it (which way an exposure went; resolution loss, which is
    not a blur), shown in findings, answers and the CSV.
    """

    name: str
    category: Category
    says: str = ""
    kinds: tuple[str, ...] = ()
    camera_kinds: tuple[str, ...] = ()
    detectors: tuple[str, ...] = ()
    artefacts: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()
    option_words: tuple[str, ...] = ()
    type_words: tuple[str, ...] = ()


# Order matters for ``category_of_type``: the first category whose words a type name holds
# wins, so noise comes before colour ("white noise in color component" is noise).
FACTS: tuple[CategoryFacts, ...] = (
    CategoryFacts(
        name="Blurs",
        hint="with fine, sharp detail",
        patterns=(
            r"blur\w*|defocus\w*|(?:out of |in |un)?focus\w*|motion|shak(?:e|y|en)",
            r"smear\w*",
        ),
        option_words=("blur", "out of focus", "soft", "smear"),
        type_words=("blur",),
    ),
    CategoryFacts(
        name="Noise",
        hint="in low light",
        patterns=(r"nois\w*|grain\w*|speckl\w*",),
        option_words=("noise", "noisy", "grain"),
        type_words=("noise",),
    ),
    CategoryFacts(
        name="Compression",
        hint="with smooth gradients",
        patterns=(r"jpe?g\w*|compress\w*|block\w*|artefact\w*|artifact\w*|ringing", r"banding"),
        option_words=("compress", "jpeg", "block", "artifact"),
        type_words=("jpeg", "compression", "block"),
    ),
    CategoryFacts(
        name="Sharpness",
        hint="with small text and thin lines",
        patterns=(r"sharp\w*|crisp\w*|details?|detailed|clarity|acutance",),
        option_words=("sharp", "detail"),
        type_words=("sharp",),
    ),
    CategoryFacts(
        name="Brightness change",
        hint="in harsh, contrasty light",
        patterns=(
            r"bright\w*|dark\w*|dim|dimly|gloomy|(?:under|over) ?expos\w*",
            r"expos\w*|lighting|lit|illuminat\w*|luminance",
        ),
        option_words=("dark", "bright", "exposure", "exposed", "luminance"),
        type_words=("bright", "dark", "mean_shift"),
    ),
    CategoryFacts(
        name="Contrast",
        hint="in flat, hazy light",
        patterns=(r"contrast\w*|washed out|flat|faded|hazy|haze",),
        option_words=("contrast", "washed", "flat"),
        type_words=("contrast",),
    ),
    CategoryFacts(
        name="Color distortions",
        hint="with vivid, saturated colours",
        patterns=(
            # "cast" but not "casts a shadow": a colour cast, not the verb
            r"colou?r\w*|(?:over|de|un)?saturat\w*|tint\w*|casts?(?! (?:an? |any |long )?shadows?)"
            r"|hues?",
            r"white balance|vibran\w*|chroma\w*",
        ),
        option_words=("colour", "color", "saturat", "tint", "cast"),
        type_words=("color", "colour", "saturat", "chromatic"),
    ),
)

# Within a category, kinds are listed in the order ``kinds_of`` returns them.
DISTORTIONS: tuple[Distortion, ...] = (
    Distortion(
        "blur",
        "Blurs",
        kinds=("blur", "motion_blur"),
        camera_kinds=("defocus", "shake"),
        detectors=("sharpness", "camera_blur", "page_sharpness"),
        artefacts=("blur",),
    ),
    # an image blown up from a smaller one, or detail its sensor never held: its finest
    # octaves are empty while the coarser ones keep their contrast. Not a blur (no optical
    # spread, and a photographer names it apart); Sharpness is the paper's category for a
    # loss of fine detail (docs/tools.md, "What the detectors call a defect")
    Distortion(
        "resolution loss",
        "Sharpness",
        says="resolution loss",
        camera_kinds=("resolution",),
        detectors=("resolution",),
        patterns=(r"resolution|upscal\w*|up-?sampl\w*|low[- ]res\w*|blown up|enlarg\w*",),
        type_words=("resolution", "upscal"),
    ),
    Distortion(
        "noise",
        "Noise",
        kinds=("noise",),
        camera_kinds=("sensor_noise",),
        detectors=("noise", "camera_noise"),
        artefacts=("noise",),
    ),
    # a probe's "other" man-made artefact is filed with the coding artefacts
    Distortion(
        "jpeg",
        "Compression",
        kinds=("jpeg",),
        camera_kinds=("low_jpeg",),
        detectors=("blockiness", "camera_compression", "jpeg_quality", "ringing"),
        artefacts=("jpeg", "scanlines", "grid", "other"),
    ),
    Distortion("jpeg2000", "Compression", kinds=("jpeg2000",)),  # no 8x8 grid to read
    Distortion(
        "pixelation",
        "Compression",
        kinds=("pixelate",),
        detectors=("pixelation",),
        artefacts=("mosaic",),
        patterns=(r"pixelat\w*|macroblock\w*",),
        type_words=("pixel",),
    ),
    Distortion(
        "brightening",
        "Brightness change",
        says="over-exposed",
        kinds=("brighten",),
        camera_kinds=("overexpose",),
        detectors=("overexposure", "camera_over"),
    ),
    Distortion(
        "darkening",
        "Brightness change",
        says="under-exposed",
        kinds=("darken",),
        camera_kinds=("underexpose", "low_light"),
        detectors=("underexposure", "camera_under"),
    ),
    Distortion("contrast loss", "Contrast", kinds=("contrast",), detectors=("contrast",)),
    # the colourfulness and colour-cast detectors score but make no finding (tools/severity.py)
    Distortion("desaturation", "Color distortions", kinds=("desaturate",)),
    Distortion(
        "oversaturation",
        "Color distortions",
        kinds=("oversaturate",),
        detectors=("saturation_clip",),
    ),
    Distortion("colour cast", "Color distortions", kinds=("color_cast",)),
    Distortion(
        "posterization",
        "Color distortions",
        kinds=("posterize",),
        detectors=("posterization",),
        artefacts=("posterize",),
    ),
)

# the artefact a probe's unknown or unlisted type is filed as
FALLBACK_ARTEFACT = "other"


def _table(field: str) -> dict[str, Category]:
    out: dict[str, Category] = {}
    for d in DISTORTIONS:
        for name in getattr(d, field):
            if out.setdefault(name, d.category) != d.category:
                raise ValueError(f"{field[:-1]} {name!r} is filed under two categories")
    return out


def _check() -> None:
    named = [f.name for f in FACTS]
    if sorted(named) != sorted(CATEGORIES):
        raise ValueError(f"FACTS must hold each category once, got {named}")
    for d in DISTORTIONS:
        if d.category not in CATEGORIES:
            raise ValueError(f"distortion {d.name!r}: unknown category {d.category!r}")


_check()
KIND_CATEGORY: dict[str, Category] = _table("kinds")
CAMERA_KIND_CATEGORY: dict[str, Category] = _table("camera_kinds")
DETECTOR_CATEGORY: dict[str, Category] = _table("detectors")
ARTEFACT_CATEGORY: dict[str, Category] = _table("artefacts")
_FACTS: dict[str, CategoryFacts] = {f.name: f for f in FACTS}


def facts(category: Category) -> CategoryFacts:
    return _FACTS[category]


def distortions_of(category: str) -> tuple[Distortion, ...]:
    return tuple(d for d in DISTORTIONS if d.category == category)


def category_of_kind(kind: str) -> Category | None:
    """The category of a synthetic kind of ``imaging/distort.py`` (None for one not listed)."""
    return KIND_CATEGORY.get(kind)


def category_of_camera_kind(kind: str) -> Category | None:
    """The category of a camera-series kind of ``bench/camera.py`` (None for a compound
    pair, which is two)."""
    return CAMERA_KIND_CATEGORY.get(kind)


def category_of_detector(name: str) -> Category | None:
    """The category a built-in detector's findings report; None for a tool that makes none."""
    return DETECTOR_CATEGORY.get(name)


def says_of_detector(name: str) -> str:
    """What a finding of this detector names beside its category ('' when the category says
    it all)."""
    return next((d.says for d in DISTORTIONS if name in d.detectors), "")


def category_of_artefact(artefact: str) -> Category:
    """The category a probe's crop of this artefact type is filed under (an unknown type
    as ``FALLBACK_ARTEFACT``)."""
    return ARTEFACT_CATEGORY.get(artefact, ARTEFACT_CATEGORY[FALLBACK_ARTEFACT])


def type_words(category: Category) -> tuple[str, ...]:
    return facts(category).type_words + tuple(
        w for d in distortions_of(category) for w in d.type_words
    )


def category_of_type(name: str) -> Category | None:
    """The category of a synthetic kind, or of a MOS table's distortion type name by the
    first category (in ``FACTS`` order) whose type words it holds."""
    if name in KIND_CATEGORY:
        return KIND_CATEGORY[name]
    low = name.lower()
    return next((f.name for f in FACTS if any(w in low for w in type_words(f.name))), None)


def kinds_of(categories: Iterable[str]) -> list[str]:
    """The synthetic kinds of ``categories``, in ``DISTORTIONS`` order."""
    wanted = set(categories)
    return [k for d in DISTORTIONS if d.category in wanted for k in d.kinds]


def kinds_of_detector(name: str) -> tuple[str, ...]:
    """The synthetic kinds of the distortions a built-in detector makes findings of: what
    its card's logistic is fitted on (``bench/builtin_fit.py``)."""
    return tuple(k for d in DISTORTIONS if name in d.detectors for k in d.kinds)


def artefact_of_detector(name: str) -> str | None:
    """The probe artefact type a built-in detector's local reading names (the first of its
    distortion's), or None."""
    return next((d.artefacts[0] for d in DISTORTIONS if name in d.detectors and d.artefacts), None)


def detectors_of(category: str) -> list[str]:
    """The built-in detectors whose readings are findings of ``category``."""
    return [n for d in distortions_of(category) for n in d.detectors]


def query_patterns() -> tuple[tuple[Category, str], ...]:
    """(category, regular-expression alternatives) pairs that name a category in a query."""
    own = [(f.name, p) for f in FACTS for p in f.patterns]
    return (*own, *((d.category, p) for d in DISTORTIONS for p in d.patterns))


def query_regexes() -> tuple[tuple[Category, re.Pattern[str]], ...]:
    """``query_patterns`` compiled to match whole words."""
    return tuple((c, re.compile(rf"\b(?:{p})\b")) for c, p in query_patterns())


def option_words(category: Category) -> tuple[str, ...]:
    """Substrings that name ``category`` in a multiple-choice option or question."""
    return facts(category).option_words + tuple(
        w for d in distortions_of(category) for w in d.option_words
    )


def hint(category: str | None) -> str:
    """The rules generator's prompt hint that stresses ``category`` ("" for none)."""
    f = _FACTS.get(category or "")
    return f.hint if f else ""


__all__ = [
    "ARTEFACT_CATEGORY",
    "CATEGORIES",
    "DETECTOR_CATEGORY",
    "DISTORTIONS",
    "FACTS",
    "KIND_CATEGORY",
    "Category",
    "CategoryFacts",
    "Distortion",
    "artefact_of_detector",
    "category_of_artefact",
    "category_of_detector",
    "category_of_kind",
    "category_of_type",
    "detectors_of",
    "distortions_of",
    "facts",
    "hint",
    "kinds_of",
    "kinds_of_detector",
    "option_words",
    "query_patterns",
    "query_regexes",
    "type_words",
]
