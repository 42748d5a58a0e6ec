"""Category facts live in agentiqa_cli/categories.py and nowhere else in the package."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import agentiqa_cli
from agentiqa_cli import categories as cats
from agentiqa_cli.agent.planner_rules import plan_query
from agentiqa_cli.agent.probe.records import ARTEFACT_TYPES
from agentiqa_cli.bench.camera import CAMERA_KINDS
from agentiqa_cli.imaging.distort import KINDS
from agentiqa_cli.resources import default_cards_dir
from agentiqa_cli.tools.cards import load_cards
from agentiqa_cli.tools.severity import REASONS, findings

PACKAGE = Path(agentiqa_cli.__file__).parent
# Modules that may spell a category's name, and why. Nothing else may: a table keyed by (or
# mapping to) category names belongs in categories.py.
ALLOWED = {
    "categories.py": "the one place",
    # example multiple-choice questions: option texts a model reads, not a lookup table
    "bench/mcq_examples.py": "question text",
}


def _category_literals(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set(cats.CATEGORIES)
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
    ]


def test_no_other_module_spells_a_category_name() -> None:
    found = {
        f"{p.relative_to(PACKAGE).as_posix()}:{line}": value
        for p in sorted(PACKAGE.rglob("*.py"))
        if p.relative_to(PACKAGE).as_posix() not in ALLOWED
        for line, value in _category_literals(p)
    }
    assert found == {}, "category facts outside agentiqa_cli/categories.py"


def test_the_scan_sees_a_table(tmp_path: Path) -> None:
    bad = tmp_path / "table.py"
    bad.write_text('WORDS = {"Noise": ("grain",)}\nKIND = [("pixelate", "Sharpness")]\n')
    assert _category_literals(bad) == [(1, "Noise"), (2, "Sharpness")]


def test_every_category_has_facts_and_every_name_one_category() -> None:
    assert sorted(f.name for f in cats.FACTS) == sorted(cats.CATEGORIES)
    for field in ("kinds", "detectors", "artefacts"):
        names = [n for d in cats.DISTORTIONS for n in getattr(d, field)]
        assert len(names) == len(set(names)), field


def test_pixelation_is_compression_everywhere() -> None:
    assert cats.category_of_kind("pixelate") == "Compression"
    assert cats.category_of_detector("pixelation") == "Compression"
    assert cats.category_of_artefact("mosaic") == "Compression"
    assert cats.category_of_type("Pixelate") == "Compression"  # a KADID-10k type name
    assert plan_query("Is the photo pixelated?", False, []).distortions == {
        "Global": ["Compression"]
    }
    assert "pixelate" in cats.kinds_of(["Compression"])
    assert "pixelate" not in cats.kinds_of(["Sharpness"])


def test_lookups() -> None:
    assert cats.category_of_kind("motion_blur") == "Blurs"
    assert cats.category_of_kind("upscale") is None
    assert cats.category_of_detector("underexposure") == "Brightness change"
    assert cats.category_of_detector("colorcast") is None  # scores, makes no finding
    assert cats.category_of_artefact("posterize") == "Color distortions"
    assert cats.category_of_artefact("unheard-of") == cats.category_of_artefact("other")
    assert cats.detectors_of("Color distortions") == ["saturation_clip", "posterization"]
    assert cats.kinds_of(["Brightness change", "Noise"]) == ["noise", "brighten", "darken"]
    assert cats.artefact_of_detector("pixelation") == "mosaic"
    assert cats.artefact_of_detector("noise") == "noise"
    assert cats.artefact_of_detector("contrast") is None
    assert cats.hint("Noise") == "in low light" and cats.hint(None) == ""
    assert "grain" in cats.option_words("Noise")


@pytest.mark.parametrize(
    ("type_name", "category"),
    [
        ("gaussian blur", "Blurs"),
        ("white noise in color component", "Noise"),  # noise is tried before colour
        ("JPEG2000 compression", "Compression"),
        ("Local block-wise distortions", "Compression"),
        ("high sharpen", "Sharpness"),
        ("mean_shift", "Brightness change"),
        ("contrast change", "Contrast"),
        ("Chromatic aberrations", "Color distortions"),
        ("jitter", None),
    ],
)
def test_mos_type_names(type_name: str, category: str | None) -> None:
    assert cats.category_of_type(type_name) == category


def test_query_patterns_name_categories() -> None:
    regexes = cats.query_regexes()
    named = {c for c, rx in regexes if rx.search("a grainy, washed out shot with a blue tint")}
    assert named == {"Noise", "Contrast", "Color distortions"}
    assert not any(rx.search("the tree casts a shadow") for _, rx in regexes)


def test_kinds_detectors_and_artefacts_exist_where_they_are_read() -> None:
    cards = load_cards(default_cards_dir())
    assert set(cats.KIND_CATEGORY) <= set(KINDS)
    assert set(cats.CAMERA_KIND_CATEGORY) <= set(CAMERA_KINDS)
    assert set(cats.ARTEFACT_CATEGORY) == set(ARTEFACT_TYPES) - {"none"}
    for name, category in cats.DETECTOR_CATEGORY.items():
        card = cards.get(name)
        assert card.detector, name
        # the card lists the category first, which is what its findings report
        assert card.category == category, name
    assert set(REASONS) <= set(cats.DETECTOR_CATEGORY)


def test_a_new_distortion_is_one_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    """One ``Distortion`` entry reaches the kind, detector and query lookups."""
    extra = cats.Distortion(
        "oversharpening", "Sharpness", kinds=("oversharpen",), detectors=("halo",),
        patterns=(r"oversharpen\w*|halos?",),
    )  # fmt: skip
    monkeypatch.setattr(cats, "DISTORTIONS", (*cats.DISTORTIONS, extra))
    monkeypatch.setattr(cats, "KIND_CATEGORY", cats._table("kinds"))
    monkeypatch.setattr(cats, "DETECTOR_CATEGORY", cats._table("detectors"))
    assert cats.category_of_kind("oversharpen") == "Sharpness"
    assert cats.category_of_detector("halo") == "Sharpness"
    assert cats.kinds_of(["Sharpness"]) == ["oversharpen"]
    assert ("Sharpness", r"oversharpen\w*|halos?") in cats.query_patterns()
    # a detector without a worded reason still makes a finding
    cards = load_cards(default_cards_dir())
    card = cards.get("pixelation").model_copy(update={"name": "halo", "default_order": None})
    (f,) = findings({"halo": 0.9}, type(cards)([*cards, card]))
    assert f.category == "Sharpness" and f.reason.startswith("halo reading 0.9")


def test_the_probe_reads_cells_for_every_local_artefact() -> None:
    from agentiqa_cli.agent.probe.scan import LOCAL_DETECTORS

    assert LOCAL_DETECTORS == {"blockiness": "jpeg", "pixelation": "mosaic", "noise": "noise",
                               "sharpness": "blur", "posterization": "posterize"}  # fmt: skip


def test_fit_targets_come_from_the_distortions() -> None:
    from agentiqa_cli.bench.builtin_fit import TARGETS

    assert TARGETS == {
        "sharpness": ("blur", "motion_blur"),
        "noise": ("noise",),
        "blockiness": ("jpeg",),
        "pixelation": ("pixelate",),
        "underexposure": ("darken",),
        "overexposure": ("brighten",),
        "contrast": ("contrast",),
        "colorfulness": ("desaturate",),
        "colorcast": ("color_cast",),
        "saturation_clip": ("oversaturate",),
        "posterization": ("posterize",),
        "detail": ("blur", "motion_blur", "noise", "jpeg", "pixelate"),
    }


def test_a_finding_says_which_way_and_what_within_its_category() -> None:
    from agentiqa_cli.records import Result

    cards = load_cards(default_cards_dir())
    dark = findings({"underexposure": 0.2}, cards)
    (f,) = [f for f in dark if f.category == "Brightness change"]
    assert f.severity != "none" and f.says == "under-exposed"
    assert f.named == "brightness change (under-exposed)"
    bright = findings({"overexposure": 0.5}, cards)
    (g,) = [f for f in bright if f.category == "Brightness change"]
    assert g.says == "over-exposed"
    assert Result(image="x", distortions=[f]).distortions_cell() == (
        f"brightness_change(under-exposed):{f.severity}"
    )
    # a clean reading names nothing beside its category
    (n,) = findings({"underexposure": 1.0}, cards)
    assert n.severity == "none" and n.says == ""
    assert cats.category_of_camera_kind("resolution") == "Sharpness"
