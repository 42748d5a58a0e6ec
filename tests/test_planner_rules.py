"""The rules planner follows AgenticIQA App. A.2: query words → plan fields and switches."""

from __future__ import annotations

from typing import Any

import pytest

from agentiqa_cli.agent.planner_rules import plan_query
from agentiqa_cli.records import Plan

TOOLS = [
    "topiq_fr",
    "topiq_nr",
    "psnr",
    "ssim",
    "ms_ssim",
    "lpips",
    "niqe",
    "brisque",
    "mad",
    "clipiqa",
    "blur_effect",
    "noise_sigma",
]

G = "Global"
# switches: (detection, analysis, selection, execute)
ALL_ON = (True, True, True, True)
OFF = (False, False, False, False)
EXPLICIT_GLOBAL = (False, True, True, True)
EXPLICIT_REGION = (False, True, False, False)
INFERRED_REGION = (True, True, False, False)
TOOL_INFERRED = (True, True, False, True)
TOOL_EXPLICIT = (False, True, False, True)

# query, has_reference, query_type, scope, distortions ({scope: [...]} or None), tools, switches
CASES: list[tuple[str, bool, str, Any, Any, Any, tuple[bool, bool, bool, bool]]] = [
    # the default query
    ("How is the overall quality of this image?", False, "IQA", G, None, None, ALL_ON),
    ("How is the overall quality of this image?", True, "IQA", G, None, None, ALL_ON),
    ("Rate the quality of this picture.", False, "IQA", G, None, None, ALL_ON),
    # explicit distortions, whole image
    ("Is the image blurry?", False, "IQA", G, {G: ["Blurs"]}, None, EXPLICIT_GLOBAL),
    ("Is this photo noisy or grainy?", True, "IQA", G, {G: ["Noise"]}, None, EXPLICIT_GLOBAL),
    (
        "Are there JPEG blocking artifacts?",
        False,
        "IQA",
        G,
        {G: ["Compression"]},
        None,
        EXPLICIT_GLOBAL,
    ),
    (
        "Is the image over-exposed or too dark?",
        False,
        "IQA",
        G,
        {G: ["Brightness change"]},
        None,
        EXPLICIT_GLOBAL,
    ),
    ("Is the contrast washed out?", False, "IQA", G, {G: ["Contrast"]}, None, EXPLICIT_GLOBAL),
    (
        "Are the colours oversaturated?",
        False,
        "IQA",
        G,
        {G: ["Color distortions"]},
        None,
        EXPLICIT_GLOBAL,
    ),
    (
        "Is the image sharp, or is there noise?",
        False,
        "IQA",
        G,
        {G: ["Sharpness", "Noise"]},
        None,
        EXPLICIT_GLOBAL,
    ),
    # named objects and regions
    (
        "Is the bird in focus?",
        False,
        "IQA",
        ["the bird"],
        {"the bird": ["Blurs"]},
        None,
        EXPLICIT_REGION,
    ),
    (
        "Are the purple flowers sharp?",
        False,
        "IQA",
        ["the purple flowers"],
        {"the purple flowers": ["Sharpness"]},
        None,
        EXPLICIT_REGION,
    ),
    (
        "Is there noise in the sky?",
        True,
        "IQA",
        ["the sky"],
        {"the sky": ["Noise"]},
        None,
        EXPLICIT_REGION,
    ),
    (
        "Does the image's background look noisy?",
        False,
        "IQA",
        ["background"],
        {"background": ["Noise"]},
        None,
        EXPLICIT_REGION,
    ),
    (
        "Is there a colour cast on the face?",
        False,
        "IQA",
        ["the face"],
        {"the face": ["Color distortions"]},
        None,
        EXPLICIT_REGION,
    ),
    ("How does the subject look?", False, "IQA", ["the subject"], None, None, INFERRED_REGION),
    (
        "Is the text on the sign readable?",
        False,
        "IQA",
        ["the text", "the sign"],
        None,
        None,
        INFERRED_REGION,
    ),
    (
        "Is the main subject sharp while the background is blurred?",
        False,
        "IQA",
        ["the main subject", "the background"],
        {"the main subject": ["Sharpness", "Blurs"], "the background": ["Sharpness", "Blurs"]},
        None,
        EXPLICIT_REGION,
    ),
    (
        "Is the foreground well lit?",
        False,
        "IQA",
        ["the foreground"],
        {"the foreground": ["Brightness change"]},
        None,
        EXPLICIT_REGION,
    ),
    # named tools
    ("What does MS-SSIM say about this image?", True, "IQA", G, None, ["ms_ssim"], TOOL_INFERRED),
    ("Score it with PSNR and LPIPS.", True, "IQA", G, None, ["psnr", "lpips"], TOOL_INFERRED),
    (
        "Is the image noisy according to NIQE?",
        False,
        "IQA",
        G,
        {G: ["Noise"]},
        ["niqe"],
        TOOL_EXPLICIT,
    ),
    (
        "Does the ssim score agree with ms_ssim?",
        True,
        "IQA",
        G,
        None,
        ["ssim", "ms_ssim"],
        TOOL_INFERRED,
    ),
    ("What is the TOPIQ score?", False, "IQA", G, None, ["topiq_nr"], TOOL_INFERRED),
    ("What is the TOPIQ score?", True, "IQA", G, None, ["topiq_fr"], TOOL_INFERRED),
    # tool + region
    ("Use TOPIQ to rate the sky.", False, "IQA", ["the sky"], None, ["topiq_nr"], TOOL_INFERRED),
    (
        "Is the car blurry according to CLIP-IQA?",
        False,
        "IQA",
        ["the car"],
        {"the car": ["Blurs"]},
        ["clipiqa"],
        TOOL_EXPLICIT,
    ),
    # ordinary words that happen to be tool names are not tool requests
    ("Does this picture make you mad?", False, "IQA", G, None, None, ALL_ON),
    ("Is there a blur effect?", False, "IQA", G, {G: ["Blurs"]}, None, EXPLICIT_GLOBAL),
    # "Other" queries
    ("How does this image make you feel?", False, "Other", G, None, None, OFF),
    ("Is the composition of this photo pleasing?", True, "Other", G, None, None, OFF),
    ("How is the color composition?", False, "Other", G, None, None, OFF),
    (
        "How would you rate the aesthetics of the sunset?",
        False,
        "Other",
        ["the sunset"],
        None,
        None,
        OFF,
    ),
    ("Is this portrait beautiful?", True, "Other", G, None, None, OFF),
    # an aesthetic word next to a distortion word is still a quality question
    ("Is this photo beautiful but noisy?", False, "IQA", G, {G: ["Noise"]}, None, EXPLICIT_GLOBAL),
]


@pytest.mark.parametrize(
    ("query", "has_ref", "qtype", "scope", "distortions", "tools", "switches"), CASES
)
def test_plan_table(
    query: str,
    has_ref: bool,
    qtype: str,
    scope: Any,
    distortions: Any,
    tools: Any,
    switches: tuple[bool, bool, bool, bool],
) -> None:
    plan = plan_query(query, has_ref, TOOLS)
    assert plan.query_type == qtype
    assert plan.query_scope == scope
    assert plan.distortions == distortions
    assert plan.distortion_source == ("explicit" if distortions else "inferred")
    assert plan.required_tools == tools
    assert plan.reference_mode == ("Full-Reference" if has_ref else "No-Reference")
    s = plan.plan
    got = (s.distortion_detection, s.distortion_analysis, s.tool_selection, s.tool_execute)
    assert got == switches
    # it is a valid record, and survives a JSON round trip
    assert Plan.model_validate_json(plan.model_dump_json()) == plan


def test_default_query_plan_matches_the_paper() -> None:
    plan = plan_query("How is the overall quality of this image?", False, TOOLS)
    assert plan.model_dump() == {
        "query_type": "IQA",
        "query_scope": "Global",
        "distortion_source": "inferred",
        "distortions": None,
        "reference_mode": "No-Reference",
        "required_tools": None,
        "plan": {
            "distortion_detection": True,
            "distortion_analysis": True,
            "tool_selection": True,
            "tool_execute": True,
        },
    }


def test_tool_matching_uses_the_names_it_is_given() -> None:
    assert plan_query("What does PSNR say?", True, ["ssim"]).required_tools is None
    assert plan_query("What does TOPIQ say?", False, ["topiq_fr"]).required_tools == ["topiq_fr"]
    assert plan_query("Use the blur_effect detector", False, TOOLS).required_tools == [
        "blur_effect"
    ]


def test_scope_names_are_bounded() -> None:
    plan = plan_query(
        "Is the extraordinarily tall weathered medieval stone clock tower sharp?", False, TOOLS
    )
    assert isinstance(plan.query_scope, list) and len(plan.query_scope) == 1
    assert len(plan.query_scope[0]) <= 40 and plan.query_scope[0].endswith("tower")


@pytest.mark.parametrize(
    ("query", "distortions"),
    [
        # the words before a distortion say how much or which colour, they name no object
        ("Does the photo have a green tint?", {G: ["Color distortions"]}),
        ("Is there a slight motion blur in the corner?", {"the corner": ["Blurs"]}),
        ("Does the sky show a magenta cast?", {"the sky": ["Color distortions"]}),
        # "cast" as a verb is no colour cast
        ("Does the tree cast a shadow?", None),
        ("Do the trees cast long shadows?", None),
        ("Are the purple flowers sharp?", {"the purple flowers": ["Sharpness"]}),
    ],
)
def test_distortion_modifiers_and_verbs_are_not_objects_or_casts(
    query: str, distortions: dict[str, list[str]] | None
) -> None:
    assert plan_query(query, False, TOOLS).distortions == distortions
