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
