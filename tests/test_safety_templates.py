"""Prompt templates are bounded: nested loops, huge repeats and huge powers stop with a
usage error in well under a second; str.format reaching for attributes is refused when
the prompt loads, not image after image."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from agentiqa_cli.errors import ConfigError


def _planner_with(tmp_path: Path, expr: str) -> Path:
    from agentiqa_cli.resources import default_prompts_dir

    mine = tmp_path / "prompts"
    shutil.copytree(default_prompts_dir(), mine)
    planner = mine / "planner.yaml"
    text = planner.read_text()
    assert "{{ query }}" in text
    planner.write_text(text.replace("{{ query }}", expr, 1))
    return mine


@pytest.mark.parametrize(
    "expr",
    [
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
        "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}",
        "{{ 'x' * 300000000 }}",
        "{{ 300000000 * 'xy' }}",
        "{{ [1, 2] * 300000000 }}",
        "{{ 10 ** 100000000 }}",
        "{{ range(1000000) | list }}",
    ],
    ids=["nested-empty", "nested-output", "str-repeat", "repeat-left", "list", "power", "big"],
)
def test_a_runaway_template_is_a_usage_error_fast(tmp_path: Path, expr: str) -> None:
    from agentiqa_cli.asking.prompts import load_prompts

    spec = load_prompts(_planner_with(tmp_path, expr))["planner"]
    t0 = time.monotonic()
    with pytest.raises(ConfigError, match="unsafe template"):
        spec.render(query="q", has_reference=False, tool_names=["sharpness"])
    assert time.monotonic() - t0 < 10


def test_small_loops_and_repeats_still_render(tmp_path: Path) -> None:
    from agentiqa_cli.asking.prompts import load_prompts

    expr = (
        "{% for i in range(3) %}{{ i }}{% endfor %}{{ '-' * 3 }}{{ 2 ** 10 }}{{ range(4)|length }}"
    )
    spec = load_prompts(_planner_with(tmp_path, expr))["planner"]
    text = " ".join(
        m.text for m in spec.render(query="q", has_reference=False, tool_names=["sharpness"])
    )
    assert "012---10244" in text


@pytest.mark.parametrize(
    "expr",
    ["{{ query.__class__.__mro__ }}", "{{ query|attr('__class__') }}", "{{ query['_x'] }}"],
)
def test_unsafe_prompt_template_is_refused_at_load(tmp_path: Path, expr: str) -> None:
    from agentiqa_cli.asking.prompts import load_prompts

    with pytest.raises(ConfigError, match="unsafe"):
        load_prompts(_planner_with(tmp_path, expr))


@pytest.mark.parametrize(
    "expr",
    ["{{ '{0.__class__}'.format(query) }}", "{{ '{0[x]}'.format(query) }}",
     "{{ query.format(query) }}", "{{ '{x.y}'.format_map({'x': query}) }}"],
)  # fmt: skip
def test_str_format_reaching_for_attributes_is_refused_at_load(tmp_path: Path, expr: str) -> None:
    from agentiqa_cli.asking.prompts import load_prompts

    with pytest.raises(ConfigError, match=r"unsafe template: str\.format"):
        load_prompts(_planner_with(tmp_path, expr))


def test_a_plain_str_format_is_allowed(tmp_path: Path) -> None:
    from agentiqa_cli.asking.prompts import load_prompts

    spec = load_prompts(_planner_with(tmp_path, "{{ '<{}>'.format(query) }}"))["planner"]
    assert "<q>" in " ".join(
        m.text for m in spec.render(query="q", has_reference=False, tool_names=["sharpness"])
    )


@pytest.mark.parametrize(
    ("expr", "field"),
    [
        ("{{ ('{0.__class__}'|attr('format'))(query) }}", "{0.__class__}"),
        ("{{ '{0.__class__}'['format'](query) }}", "{0.__class__}"),
        ("{% set f = '{0.__class__}'.format %}{{ f(query) }}", "{0.__class__}"),
        ("{% set f = '{0[x]}'|attr('format_map') %}{{ f({}) }}", "{0[x]}"),
        ("{{ (query ~ '}')['format'](query) }}", "a format method of a string built at render"),
        ("{{ '{}'[query](1) }}", "a method named at render"),
        ("{{ '{}'|attr(query) }}", "a method named at render"),
    ],
    ids=["attr-filter", "item", "set-then-call", "set-map", "built", "named-item", "named-attr"],
)
def test_str_format_reached_any_way_is_refused_at_load_naming_file_and_field(
    tmp_path: Path, expr: str, field: str
) -> None:
    """Not only ``'...'.format(x)``: a format method taken by ``attr``, by item, kept in a
    variable or named at render is refused when the prompts load (exit 2, before any image),
    naming the prompt file and the field."""
    from tests.conftest import natural_like, save_rgb
    from tests.test_cli_score import invoke

    mine = _planner_with(tmp_path, expr)
    img = save_rgb(tmp_path / "a.png", natural_like(64, 64))
    out = tmp_path / "r.csv"
    code, _ = invoke("assess", img, "--prompts", mine, "-o", out, "-q")
    assert code == 2
    assert not out.exists()
    from agentiqa_cli.asking.prompts import load_prompts

    with pytest.raises(ConfigError, match="unsafe template") as e:
        load_prompts(mine)
    assert str(mine / "planner.yaml") in str(e.value) and field in str(e.value)


def test_str_format_in_a_fragment_is_refused_naming_the_fragment(tmp_path: Path) -> None:
    from agentiqa_cli.asking.prompts import load_prompts

    mine = _planner_with(tmp_path, "{% include 'mine.j2' %}")
    (mine / "_fragments").mkdir(exist_ok=True)
    (mine / "_fragments" / "mine.j2").write_text("{{ ('{0.__class__}'|attr('format'))(1) }}")
    with pytest.raises(ConfigError, match=r"\{0\.__class__\} \(in _fragments/mine\.j2\)"):
        load_prompts(mine)


def test_format_fields_that_are_plain_text_stay_allowed(tmp_path: Path) -> None:
    """A literal that only looks like JSON, and format calls with plain fields, still load."""
    from agentiqa_cli.asking.prompts import load_prompts

    expr = "{{ '{\"a\": [1]}' }}{{ '{0}-{x}'.format(query, x=1) }}{{ '{:>3}'.format(1) }}"
    spec = load_prompts(_planner_with(tmp_path, expr))["planner"]
    text = " ".join(
        m.text for m in spec.render(query="q", has_reference=False, tool_names=["sharpness"])
    )
    assert '{"a": [1]}q-1  1' in text
