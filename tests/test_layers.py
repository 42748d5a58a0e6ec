"""The package's layering (import-linter contracts in pyproject.toml) and the role registry."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import pytest
from pydantic import BaseModel, ConfigDict, Field

from agentiqa_cli.agent.probe import ProbeTurnInput
from agentiqa_cli.asking import registry
from agentiqa_cli.asking.registry import Role, register, role, roles
from agentiqa_cli.asking.rules import RulesVLM
from agentiqa_cli.evaluate.planning import EvalPlanInput
from agentiqa_cli.imperfect.roles import FixInput
from agentiqa_cli.resources import default_cards_dir
from agentiqa_cli.tools.cards import load_cards
from agentiqa_cli.vlm.base import RoleInput, VLMRequest

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold() -> None:
    """`lint-imports`: layers, no circles, features do not import the composition or CLI."""
    exe = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    if not Path(exe).exists():
        pytest.skip("import-linter is not installed (the [dev] extra)")
    done = subprocess.run([exe], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]


class _EchoInput(RoleInput):
    role: ClassVar[str] = "test_echo"
    word: str

    def variables(self) -> dict[str, object]:
        return {"word": self.word}


class _EchoReply(BaseModel):
    model_config = ConfigDict(extra="forbid")
    echo: str = Field(max_length=20)


@pytest.fixture
def scratch_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Roles declared by a test are forgotten after it (the prompts need every role's file)."""
    monkeypatch.setattr(registry, "_ROLES", dict(roles()))
    monkeypatch.setattr(registry, "_WHERE", dict(registry._WHERE))


@pytest.mark.usefixtures("scratch_registry")
def test_a_declared_role_is_answered_by_the_rules_backend() -> None:
    """One declaration is enough for the rules backend to answer a new role."""
    register(
        Role(_EchoInput, _EchoReply, step="summarize", answer=lambda i, _: _EchoReply(echo=i.word))
    )
    assert role("test_echo").schema["properties"]["echo"]["maxLength"] == 20
    assert "test_echo" in roles() and "eval_plan" in roles() and "fix" in roles()
    vlm = RulesVLM(load_cards(default_cards_dir()))
    request = VLMRequest(role="test_echo", messages=[], inputs=_EchoInput(word="hi"))
    reply = asyncio.run(vlm.complete(request))
    assert _EchoReply.model_validate_json(reply.text).echo == "hi"


@pytest.mark.usefixtures("scratch_registry")
def test_a_role_name_is_declared_once() -> None:
    class Other(BaseModel):
        model_config = ConfigDict(extra="forbid")
        other: bool = False

    register(Role(_EchoInput, _EchoReply, step="summarize", answer=None))
    register(Role(_EchoInput, _EchoReply, step="summarize", answer=None))  # the same again
    with pytest.raises(TypeError, match="declared twice"):
        register(Role(_EchoInput, Other, step="summarize", answer=None))


def test_the_shipped_roles_are_declared_beside_their_inputs() -> None:
    """Probing has no rules answer (the agent runs its rules version); the rules backend
    refuses what no role declares."""
    assert role("probe").inputs is ProbeTurnInput and role("probe").answer is None
    assert role("eval_plan").inputs is EvalPlanInput and role("eval_plan").step == "eval_plan"
    assert role("fix").inputs is FixInput and role("fix").step == "imperfect"
    with pytest.raises(ValueError, match="cannot answer"):
        RulesVLM(load_cards(default_cards_dir())).answer(None)


def test_the_cli_starts_without_the_agent_or_heavy_libraries() -> None:
    """Start-up time: `--help` and `score` do not load the agent, the experience pool, the
    prompts' template engine or scipy's heavy parts (the composition loads them when asked)."""
    heavy = ["agentiqa_cli.agent.pipeline", "agentiqa_cli.experience.advisor", "jinja2", "scipy.signal",
             "scipy.stats", "scipy.optimize", "skimage", "torch"]  # fmt: skip
    code = f"import sys, agentiqa_cli.cli; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
