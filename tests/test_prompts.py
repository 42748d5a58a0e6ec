"""Every shipped prompt loads, renders, and its schema is bounded and agrees with its reply."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from annotated_types import MaxLen
from jinja2.exceptions import SecurityError
from pydantic import BaseModel, ValidationError

from agentiqa_cli.agent.replies import (
    AnalysisItem,
    AnalyzeReply,
    ExamineItem,
    ExamineReply,
    InterpretReply,
    ScoreReply,
)
from agentiqa_cli.asking.prompts import (
    PromptSpec,
    load_prompt,
    load_prompts,
    make_env,
    option_letters,
)
from agentiqa_cli.asking.registry import roles
from agentiqa_cli.asking.schemas import reply_schema, schema_problems
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.records import CATEGORIES, ToolScore
from agentiqa_cli.resources import default_prompts_dir
from agentiqa_cli.vlm.base import ImagePart

ROLES = tuple(roles())
REPLY_MODELS = {name: r.reply for name, r in roles().items()}

PROMPTS_DIR = default_prompts_dir()

VARS: dict[str, Any] = {
    "query": "Is the bird in focus?",
    "has_reference": True,
    "scopes": ["the bird", "Global"],
    "tool_names": ["topiq_nr", "niqe", "psnr"],
    "distortions": {"the bird": ["Blurs", "Sharpness"], "Global": ["Noise"]},
    "evidence": [
        {"tool": "noise_sigma", "raw": 0.031, "norm": 2.4, "reading": "sigma 0.031 (moderate)"},
        {"tool": "blur_effect", "raw": 0.41, "norm": None, "reading": "blur effect 0.41"},
    ],
    "tools": [
        {"name": "topiq_nr", "description": "Learned NR.", "distortions": ["Blurs"], "mode": "NR"},
        {
            "name": "niqe",
            "description": "Natural scene statistics.",
            "distortions": [],
            "mode": "NR",
        },
    ],
    "tool_scores": [
        ToolScore(tool="niqe", raw=5.2, norm=3.1, distortion="Noise"),
        ToolScore(tool="musiq", error="weights missing"),
    ],
    "analysis": {
        "the bird": [AnalysisItem(type="Blurs", severity="slight", explanation="Soft feathers.")]
    },
    "options": ["Sharp", "Slightly blurred", "Very blurred"],
    # probing turns
    "turn": 2,
    "max_turns": 6,
    "width": 2048,
    "height": 1536,
    "crops": [{"id": "crop1", "turn": 1, "box": [0.1, 0.1, 0.4, 0.4], "width": 614, "height": 461}],
}
# schema_for arguments matching VARS
DYNAMIC: dict[str, Any] = {
    "tool_names": VARS["tool_names"],
    "scopes": VARS["scopes"],
    "distortions": VARS["distortions"],
    "letters": option_letters(len(VARS["options"])),
    "crop_ids": ["crop1"],
}
IMAGE = ImagePart(sha256="ab" * 32, path="/tmp/x.png")


@pytest.fixture(scope="module")
def prompts() -> dict[str, PromptSpec]:
    return load_prompts(PROMPTS_DIR)


def _yaml(role: str) -> dict[str, Any]:
    return yaml.safe_load((PROMPTS_DIR / f"{role}.yaml").read_text(encoding="utf-8"))


def test_every_role_loads_with_version_and_hash(prompts: dict[str, PromptSpec]) -> None:
    assert set(ROLES) <= set(prompts)
    for role in ROLES:
        spec = prompts[role]
        assert spec.name == role
        assert len(spec.sha256) == 64
        assert spec.fingerprint.startswith(f"{role}@{spec.version}#")


# evaluate's planner is rendered from its own input in tests/test_evaluate_units.py
IMAGE_ROLES = [r for r in ROLES if r != "eval_plan"]


@pytest.mark.parametrize("role", IMAGE_ROLES)
def test_renders_system_and_user_with_images_on_user(
    prompts: dict[str, PromptSpec], role: str
) -> None:
    messages = prompts[role].render(images=[IMAGE], **VARS)
    assert [m.role for m in messages] == ["system", "user"]
    system, user = messages
    assert system.images == [] and user.images == [IMAGE]
    assert VARS["query"] in user.text
    for text in (system.text, user.text):
        assert text and "{{" not in text and "{%" not in text
        assert "\n\n\n" not in text


def test_rendered_text_carries_the_run_values(prompts: dict[str, PromptSpec]) -> None:
    detect = prompts["detect"].render(**VARS)[0].text
    assert all(c in detect for c in CATEGORIES)
    assert "the bird; Global" in detect
    assert "sigma 0.031 (moderate) (quality 2.40)" in detect
    select = prompts["select"].render(**VARS)[0].text
    assert "topiq_nr [NR]: Learned NR. Best at: Blurs." in select
    summary = prompts["summarize"].render(**VARS)[0].text
    assert "niqe (for Noise): 3.10" in summary and "musiq: failed" in summary
    assert "the bird: Blurs is slight. Soft feathers." in summary
    interpret = prompts["interpret"].render(**VARS)[1].text
    assert "A. Sharp\nB. Slightly blurred\nC. Very blurred" in interpret


def test_optional_inputs_use_defaults_and_extra_values_are_ignored(
    prompts: dict[str, PromptSpec],
) -> None:
    spec = prompts["summarize"]
    minimal = {"query": "q?", "has_reference": False, "scopes": ["Global"], "unused": 1}
    text = spec.render(**minimal)[0].text
    assert "Distortion analysis: none was run." in text
    assert "Tool scores: none were run." in text
    planner = prompts["planner"]
    first = planner.render(query="q?", has_reference=False, tool_names=["psnr"])[1].text
    again = planner.render(
        query="q?", has_reference=False, tool_names=["psnr"], feedback="no tool scores"
    )[1].text
    assert "previous plan" not in first and "no tool scores" in again


@pytest.mark.parametrize("role", ROLES)
def test_missing_variable_is_an_error(prompts: dict[str, PromptSpec], role: str) -> None:
    spec = prompts[role]
    for name in set(spec.inputs) - set(spec.defaults):
        partial = {k: v for k, v in VARS.items() if k != name}
        with pytest.raises(ConfigError, match=name):
            spec.render(**partial)


def test_a_missing_key_inside_a_variable_is_an_error(prompts: dict[str, PromptSpec]) -> None:
    bad = {**VARS, "evidence": [{"tool": "x", "raw": 1.0, "norm": 2.0}]}  # no "reading"
    with pytest.raises(ConfigError, match="reading"):
        prompts["detect"].render(**bad)


@pytest.mark.parametrize(
    "expr",
    [
        "{{ ''.__class__.__mro__ }}",
        "{{ query.__class__.__init__.__globals__ }}",
        "{{ cycler.__init__.__globals__ }}",
    ],
)
def test_templates_cannot_reach_python_internals(expr: str) -> None:
    # refused at load (exit 2 before any image), not per image
    with pytest.raises(ValidationError, match="unsafe template"):
        PromptSpec.model_validate({**_yaml("planner"), "system": expr})
    # and the sandbox still refuses it when rendering
    with pytest.raises(SecurityError):
        make_env().from_string(expr).render(query="q")


# -- schemas ----------------------------------------------------------------------------


def _walk(schema: Any, path: str = "$") -> list[str]:
    """Independent of schema_problems: every string bounded, every array capped."""
    if not isinstance(schema, dict):
        return []
    bad: list[str] = []
    if "enum" in schema or "const" in schema:
        return []
    for i, branch in enumerate(schema.get("anyOf", [])):
        bad += _walk(branch, f"{path}|{i}")
    types = schema.get("type", [])
    types = [types] if isinstance(types, str) else types
    if "string" in types and "maxLength" not in schema:
        bad.append(f"{path}: string")
    if "array" in types:
        if "maxItems" not in schema:
            bad.append(f"{path}: array")
        for i, sub in enumerate(schema.get("prefixItems", [])):
            bad += _walk(sub, f"{path}[{i}]")
        bad += _walk(schema.get("items"), f"{path}[]")
    if "object" in types:
        if schema.get("additionalProperties") is not False:
            bad.append(f"{path}: open object")
        if schema.get("patternProperties") and "maxProperties" not in schema:
            bad.append(f"{path}: uncapped keys")
        for key, sub in {
            **schema.get("properties", {}),
            **schema.get("patternProperties", {}),
        }.items():
            bad += _walk(sub, f"{path}.{key}")
    return bad


@pytest.mark.parametrize("role", ROLES)
def test_expanded_schemas_are_bounded(prompts: dict[str, PromptSpec], role: str) -> None:
    spec = prompts[role]
    for values in (DYNAMIC, spec.example_vars):
        schema = spec.schema_for(**values)
        assert _walk(schema) == []
        assert schema_problems(schema) == []
        assert "enum_from" not in str(schema) and "keys_from" not in str(schema)


@pytest.mark.parametrize("role", ROLES)
def test_example_matches_schema_and_reply_model(prompts: dict[str, PromptSpec], role: str) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    spec = prompts[role]
    schema = spec.schema_for(**spec.example_vars)
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(spec.example)
    REPLY_MODELS[role].model_validate(spec.example)


@pytest.mark.parametrize("role", ROLES)
def test_schema_properties_are_the_reply_fields(prompts: dict[str, PromptSpec], role: str) -> None:
    schema = prompts[role].output_schema
    fields = list(REPLY_MODELS[role].model_fields)
    assert list(schema["properties"]) == fields
    assert schema["required"] == fields
    assert schema["additionalProperties"] is False


def test_summarize_generates_level_first(prompts: dict[str, PromptSpec]) -> None:
    schema = prompts["summarize"].schema_for()
    assert next(iter(schema["properties"])) == "level"
    assert schema["required"][0] == "level"
    assert schema["properties"]["level"]["enum"] == ["bad", "poor", "fair", "good", "excellent"]
    assert prompts["summarize"].top_logprobs >= 5


def _max_length(schema: Any, prop: str) -> int | None:
    if isinstance(schema, dict):
        if prop in schema.get("properties", {}):
            return schema["properties"][prop].get("maxLength")
        for sub in schema.values():
            found = _max_length(sub, prop)
            if found is not None:
                return found
    if isinstance(schema, list):
        for sub in schema:
            found = _max_length(sub, prop)
            if found is not None:
                return found
    return None


@pytest.mark.parametrize(
    ("role", "model", "field"),
    [
        ("analyze", AnalysisItem, "explanation"),
        ("examine", ExamineItem, "explanation"),
        ("summarize", ScoreReply, "answer"),
        ("summarize", ScoreReply, "reasoning"),
        ("interpret", InterpretReply, "quality_reasoning"),
    ],
)
def test_string_limits_match_the_reply_models_and_the_prompt_text(
    prompts: dict[str, PromptSpec], role: str, model: Any, field: str
) -> None:
    spec = prompts[role]
    limit = _max_length(spec.schema_for(**DYNAMIC), field)
    pydantic_limit = next(
        m.max_length for m in model.model_fields[field].metadata if isinstance(m, MaxLen)
    )
    assert limit == pydantic_limit
    text = " ".join(spec.render(**VARS)[0].text.split())
    assert f"at most {limit} characters" in text


def test_decoding_bounds_come_from_the_reply_models(prompts: dict[str, PromptSpec]) -> None:
    detect = prompts["detect"].schema_for(scopes=["Global"])["properties"]["distortion_set"]
    assert detect["required"] == ["Global"]
    assert detect["properties"]["Global"]["maxItems"] == 7
    examine = prompts["examine"].schema_for(scopes=["a"])["properties"]["distortion_analysis"]
    item = examine["properties"]["a"]["items"]
    assert examine["properties"]["a"]["maxItems"] == 7
    assert item["properties"]["severity"]["enum"] == ["slight", "moderate", "severe", "extreme"]
    plan = prompts["planner"].schema_for(tool_names=["psnr"])["properties"]
    scope_list = next(b for b in plan["query_scope"]["anyOf"] if b.get("type") == "array")
    assert (scope_list["minItems"], scope_list["maxItems"]) == (1, 4)
    assert (scope_list["items"]["minLength"], scope_list["items"]["maxLength"]) == (1, 40)
    mapping = next(b for b in plan["distortions"]["anyOf"] if b.get("type") == "object")
    assert (mapping["minProperties"], mapping["maxProperties"]) == (1, 4)
    [(pattern, cats)] = mapping["patternProperties"].items()
    assert pattern == "^[A-Za-z0-9][A-Za-z0-9 ',_-]{0,39}$" and cats["maxItems"] == 7
    tools = next(b for b in plan["required_tools"]["anyOf"] if b.get("type") == "array")
    assert tools["items"]["enum"] == ["psnr"] and tools["maxItems"] == 4


def test_an_unbounded_reply_model_is_refused() -> None:
    class Loose(BaseModel):
        note: str
        tags: list[str]

    assert schema_problems(reply_schema(Loose), directives=True) == [
        "$.note: string without maxLength",
        "$.tags: array without maxItems",
        "$.tags.items: string without maxLength",
    ]

    class OpenMapping(BaseModel):
        by_name: dict[str, bool]

    with pytest.raises(TypeError, match="keys_from"):
        reply_schema(OpenMapping)


def test_what_examine_may_generate_is_an_analysis(prompts: dict[str, PromptSpec]) -> None:
    """examine is decoded with ExamineReply and read as an AnalyzeReply by the pipeline."""
    example = ExamineReply.model_validate(prompts["examine"].example)
    assert AnalyzeReply.model_validate(example.model_dump()).model_dump() == example.model_dump()


def test_dynamic_enums_constrain_the_reply(prompts: dict[str, PromptSpec]) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    select = jsonschema.Draft202012Validator(
        prompts["select"].schema_for(distortions={"the bird": ["Blurs"]}, tool_names=["a", "b"])
    )
    assert select.is_valid({"selected_tools": {"the bird": {"Blurs": "a"}}})
    assert not select.is_valid({"selected_tools": {"the bird": {"Blurs": "c"}}})
    assert not select.is_valid({"selected_tools": {"the bird": {"Blurs": "a", "Noise": "a"}}})
    assert not select.is_valid({"selected_tools": {"the bird": {}}})
    assert not select.is_valid({"selected_tools": {"Global": {"Blurs": "a"}}})

    analyze = jsonschema.Draft202012Validator(
        prompts["analyze"].schema_for(distortions={"Global": ["Blurs", "Noise"]})
    )
    item = {"severity": "none", "explanation": "ok"}
    assert analyze.is_valid(
        {"distortion_analysis": {"Global": [{"type": "Blurs", **item}, {"type": "Noise", **item}]}}
    )
    assert not analyze.is_valid({"distortion_analysis": {"Global": [{"type": "Blurs", **item}]}})
    assert not analyze.is_valid(
        {"distortion_analysis": {"Global": [{"type": "Noise", **item}, {"type": "Blurs", **item}]}}
    )

    examine = jsonschema.Draft202012Validator(prompts["examine"].schema_for(scopes=["Global"]))
    assert examine.is_valid({"distortion_analysis": {"Global": []}})
    assert not examine.is_valid({"distortion_analysis": {"Global": [{"type": "Noise", **item}]}})

    detect = jsonschema.Draft202012Validator(prompts["detect"].schema_for(scopes=["the sky"]))
    assert detect.is_valid({"distortion_set": {"the sky": ["Noise"]}})
    assert not detect.is_valid({"distortion_set": {"the sky": ["Grain"]}})
    assert not detect.is_valid({"distortion_set": {"Global": ["Noise"]}})

    interpret = jsonschema.Draft202012Validator(
        prompts["interpret"].schema_for(letters=option_letters(2))
    )
    reply = {"quality_reasoning": "r", "sufficient": True}
    assert interpret.is_valid({"final_answer": "B", **reply})
    assert not interpret.is_valid({"final_answer": "C", **reply})

    planner = jsonschema.Draft202012Validator(prompts["planner"].schema_for(tool_names=["psnr"]))
    plan = dict(prompts["planner"].example)
    assert planner.is_valid({**plan, "required_tools": ["psnr"]})
    assert not planner.is_valid({**plan, "required_tools": ["ssim"]})
    assert not planner.is_valid({**plan, "distortions": {"the bird": ["Blur"]}})


def test_schema_for_needs_its_values(prompts: dict[str, PromptSpec]) -> None:
    with pytest.raises(ConfigError, match="tool_names"):
        prompts["select"].schema_for(distortions={"Global": ["Noise"]})
    with pytest.raises(ConfigError, match="empty"):
        prompts["planner"].schema_for(tool_names=[])
    assert option_letters(8)[-1] == "H"  # as many options as a question file may hold
    with pytest.raises(ConfigError):
        option_letters(27)


# -- loader errors ---------------------------------------------------------------------------


def _write(tmp_path: Path, role: str, **changes: Any) -> Path:
    data = _yaml(role)
    data.update(changes)
    path = tmp_path / f"{data['name']}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("role", "changes", "field", "message"),
    [
        ("detect", {"colour": "red"}, "colour", "Extra inputs"),
        ("detect", {"system": "{{ qeury }}"}, "system", "undeclared variables: qeury"),
        ("detect", {"user": "{% if query %}"}, "user", "syntax"),
        ("detect", {"version": "v1"}, "version", "semver"),
        ("summarize", {"schema": {"type": "object"}}, "", "comes from its reply model"),
        ("detect", {"name": "spotter"}, "name", "no role named 'spotter'"),
        ("interpret", {"example": {"final_answer": "AB", "quality_reasoning": "r"}}, "", "example"),
        ("detect", {"defaults": {"nope": 1}}, "defaults", "undeclared inputs: nope"),
    ],
)
def test_bad_prompt_files_name_file_and_field(
    tmp_path: Path, role: str, changes: dict[str, Any], field: str, message: str
) -> None:
    path = _write(tmp_path, role, **changes)
    with pytest.raises(ConfigError) as info:
        load_prompt(path)
    text = str(info.value)
    assert str(path) in text and message in text
    if field:
        assert f"field {field}" in text


def test_file_name_must_match_and_roles_must_be_complete(tmp_path: Path) -> None:
    path = _write(tmp_path, "detect")
    path.rename(tmp_path / "spotter.yaml")
    with pytest.raises(ConfigError, match="must match the file name"):
        load_prompt(tmp_path / "spotter.yaml")
    (tmp_path / "spotter.yaml").unlink()
    _write(tmp_path, "detect")
    with pytest.raises(ConfigError, match="missing prompts for roles: planner"):
        load_prompts(tmp_path)
    assert set(load_prompts(tmp_path, required=["detect"])) == {"detect"}
    (tmp_path / "planner.yaml").write_text("- not\n- a mapping\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="must be a mapping"):
        load_prompts(tmp_path)


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"type": "string"}, "string without maxLength"),
        ({"type": "array", "items": {"enum": ["a"]}}, "array without maxItems"),
        ({"type": "object", "properties": {}}, "additionalProperties: false"),
        (
            {
                "type": "object",
                "additionalProperties": False,
                "patternProperties": {"^a$": {"enum": [1]}},
            },
            "patternProperties without maxProperties",
        ),
        (
            {
                "type": "object",
                "additionalProperties": False,
                "maxProperties": 2,
                "patternProperties": {"^a+$": {"enum": [1]}},
            },
            "unbounded repeat",
        ),
        ({"type": "number"}, "number without minimum and maximum"),
        ({"type": "string", "maxLength": 9, "format": "date"}, "unsupported keyword 'format'"),
        ({"keys_from": "scopes", "each": {"type": "string"}}, "string without maxLength"),
    ],
)
def test_schema_problems_catch_unbounded_or_unsupported_schemas(
    schema: dict[str, Any], problem: str
) -> None:
    assert any(problem in p for p in schema_problems(schema, directives=True))


# -- shared fragments ------------------------------------------------------------------------

# The analyze prompt as rendered before its rules moved into fragments (byte for byte).
ANALYZE_SYSTEM = """\
You are an expert in analysing image distortions. For every scope and every
distortion listed below, judge how strongly it shows and what it does to the image.
Reply with one JSON object:
{"distortion_analysis": {"<scope>": [{"type": "<category>", "severity": "<severity>",
"explanation": "<one sentence>"}, ...]}}.

Distortions to analyse ("Global" means the whole image):
- the bird: Blurs, Sharpness
- Global: Noise

Rules:
1. Analyse exactly the listed distortions, in the listed order, keeping the user's
   question in mind.
2. severity is one of: none, slight, moderate, severe, extreme. Use "none" when a distortion
   is not visible or barely visible.
3. explanation is one short sentence (at most 200 characters) about the visible
   effect on quality; say nothing about content that is not about quality.
4. Two images are attached: the first is the one to assess, the second its pristine
   reference. Judge the first against the second.

Objective measurements computed from the pixels (quality 1 = bad ... 5 = excellent).
Use them as hints; where they disagree with what you see, trust your eyes:
- noise_sigma: sigma 0.031 (moderate) (quality 2.40)
- blur_effect: blur effect 0.41"""


def test_fragments_render_the_prompts_as_before(prompts: dict[str, PromptSpec]) -> None:
    system, user = prompts["analyze"].render(**VARS)
    assert system.text == ANALYZE_SYSTEM
    assert user.text == "User's query: Is the bird in focus?\nThe images are attached."
    assert prompts["analyze"].fragments == ("evidence.j2", "looking.j2", "plan.j2")


def test_a_shared_rule_is_written_once_and_reaches_every_prompt_that_uses_it(
    prompts: dict[str, PromptSpec],
) -> None:
    rule = '"Global" means the whole\n   image; any other name means that object or region only.'
    hints = "Use them as hints; where they disagree with what you see, trust your eyes:"
    for role in ("detect", "examine"):
        text = prompts[role].render(**VARS)[0].text
        assert f"1. Examine each scope on its own: the bird; Global. {rule}" in text
        assert f"{hints}\n- noise_sigma: sigma 0.031 (moderate) (quality 2.40)\n" in text
    for path in PROMPTS_DIR.glob("*.yaml"):
        assert "trust your eyes" not in path.read_text(encoding="utf-8"), path.name
        assert "Examine each scope" not in path.read_text(encoding="utf-8"), path.name
    for role in ("summarize", "interpret"):
        text = prompts[role].render(**VARS)[0].text
        assert "Signal measurements:\n- noise_sigma: sigma 0.031 (moderate) (quality 2.40)\n" in (
            text
        )
        assert "- the bird: Blurs is slight. Soft feathers." in text


def _copy_prompts(tmp_path: Path) -> Path:
    folder = tmp_path / "prompts"
    folder.mkdir()
    for path in PROMPTS_DIR.glob("*.yaml"):
        (folder / path.name).write_bytes(path.read_bytes())
    return folder


def test_a_user_folder_uses_shipped_fragments_or_overrides_them(
    tmp_path: Path, prompts: dict[str, PromptSpec]
) -> None:
    folder = _copy_prompts(tmp_path)
    copied = load_prompts(folder)
    assert {r: copied[r].fingerprint for r in ROLES} == {r: prompts[r].fingerprint for r in ROLES}
    own = folder / "_fragments"
    own.mkdir()
    shipped = (PROMPTS_DIR / "_fragments" / "looking.j2").read_text(encoding="utf-8")
    changed = shipped.replace("Examine each scope on its own", "Look at each scope alone")
    assert changed != shipped
    (own / "looking.j2").write_text(changed, encoding="utf-8")
    mine = load_prompts(folder)
    assert "1. Look at each scope alone: the bird; Global." in mine["detect"].render(**VARS)[0].text
    # a fragment change changes the fingerprint of exactly the prompts that use it
    for role in ROLES:
        uses = "looking.j2" in prompts[role].fragments
        assert (mine[role].fingerprint != prompts[role].fingerprint) == uses, role
    assert {r for r in ROLES if "looking.j2" in prompts[r].fragments} == {
        "detect",
        "analyze",
        "examine",
    }
    assert mine["detect"].sha256 != copied["detect"].sha256


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ('{% import "nowhere.j2" as x %}{{ query }}', "fragment not found: nowhere.j2"),
        ('{% include "../detect.yaml" %}', "fragment not found"),
        ('{% include "/etc/passwd" %}', "fragment not found"),
        ('{% include "outside.j2" %}', "fragment not found: outside.j2"),
        ('{% include "uses_colour.j2" %}', "undeclared variables: colour"),
        ("{% include query %}", "literal"),
    ],
)
def test_fragments_come_only_from_the_fragment_folders(
    tmp_path: Path, template: str, message: str
) -> None:
    folder = _copy_prompts(tmp_path)
    own = folder / "_fragments"
    own.mkdir()
    (own / "uses_colour.j2").write_text("{{ colour }}", encoding="utf-8")
    (tmp_path / "outside.j2").write_text("secret", encoding="utf-8")
    (own / "outside.j2").symlink_to(tmp_path / "outside.j2")
    data = yaml.safe_load((folder / "planner.yaml").read_text(encoding="utf-8"))
    (folder / "planner.yaml").write_text(
        yaml.safe_dump({**data, "user": template}, sort_keys=False), encoding="utf-8"
    )
    with pytest.raises(ConfigError) as info:
        load_prompts(folder)
    assert "planner.yaml" in str(info.value) and "field user" in str(info.value)
    assert message in str(info.value)
