"""The package's layering (import-linter contracts in pyproject.toml) and the role registry."""

from __future__ import annotations

import ast
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
             "scipy.stats", "scipy.optimize", "scipy.ndimage", "skimage", "torch", "httpx",
             "matplotlib", "agentiqa_cli.imperfect.checks", "agentiqa_cli.bench.runs",
             "agentiqa_cli.evaluate.loop", "agentiqa_cli.report.html", "agentiqa_cli.experience.pool",
             "agentiqa_cli.cli.work.bench_run", "agentiqa_cli.cli.work.report",
             "agentiqa_cli.cli.work.experience", "agentiqa_cli.cli.work.fix",
             "agentiqa_cli.cli.work.evaluate", "agentiqa_cli.imperfect.apply"]  # fmt: skip
    code = f"import sys, agentiqa_cli.cli; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def test_a_plain_assess_loads_no_heavy_scipy_or_scikit_image(tmp_path: Path) -> None:
    """Start-up time: a default `assess` (rules) reads prompts, cards and detectors, but not
    scipy.stats/signal/optimize/special/ndimage or scikit-image (together over a second):
    those belong to probing, `--fix`, `--experience`, evaluate's statistics and the fitting
    scripts (a role's module is imported to load every prompt: it must not pull them in)."""
    from tests.conftest import scene

    scene(0).save(tmp_path / "a.png")
    code = (
        "import sys, runpy\n"
        "sys.argv = ['agentiqa', 'assess', sys.argv[1], '-o', sys.argv[2], '-q']\n"
        "try:\n    runpy.run_module('agentiqa_cli', run_name='__main__')\n"
        "except SystemExit as e:\n    assert not e.code, e.code\n"
        "heavy = ['scipy.stats', 'scipy.signal', 'scipy.optimize', 'scipy.special',\n"
        "         'scipy.ndimage', 'skimage']\n"
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "a.png"), str(tmp_path / "r.csv")],
        capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"
    assert (tmp_path / "r.csv").read_text().count("\n") == 2  # header and the image's row


# Function-local imports are for start-up time (a heavy library or feature loads with the
# command that needs it) or an optional extra (torch, pyiqa, ray, vllm, matplotlib,
# openpyxl); everything else is imported at the top, where lint-imports sees the layering.
# The count may only fall. The CLI defers a command's work through one place (cli/work/) and
# the numeric libraries load through one place (heavy.py); an import by name counts too.
LOCAL_IMPORTS_MAX = 12


def _is_import(node: ast.AST) -> bool:
    """An import statement, or a call of ``importlib.import_module`` / ``__import__`` (an
    import by name counts as one: it defers the same way)."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return True
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
    return name in ("import_module", "__import__")


def _local_imports(package: Path) -> list[tuple[str, int, bool]]:
    """Every import inside a function body under ``package``: (file, line, has a why
    comment), the comment on its line or on the line just above it (a ``try:`` or the
    block's other imports between)."""
    found: dict[tuple[str, int], bool] = {}
    for path in sorted(package.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for fn in ast.walk(ast.parse(text)):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):  # nested functions are walked twice: keyed by line
                if not _is_import(node):
                    continue
                at = node.lineno - 1
                above = at - 1
                while above > 0 and lines[above].strip().startswith(("try:", "import ", "from ")):
                    above -= 1
                why = "#" in lines[at] or lines[above].strip().startswith("#")
                found[(path.relative_to(package).as_posix(), node.lineno)] = why
    return [(f, n, why) for (f, n), why in sorted(found.items())]


def test_function_local_imports_are_few_and_say_why() -> None:
    local = _local_imports(ROOT / "agentiqa_cli")
    silent = [f"{f}:{n}" for f, n, why in local if not why]
    assert not silent, f"function-local imports without a comment saying why: {silent}"
    assert len(local) <= LOCAL_IMPORTS_MAX, [f"{f}:{n}" for f, n, _ in local]


def test_the_local_import_count_finds_nested_and_silent_imports(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "import os\n\n\n"
        "def f():\n"
        "    def g():\n"
        "        # optional extra: json\n"
        "        try:\n"
        "            import json\n"
        "        except ImportError:\n"
        "            pass\n"
        "    from csv import reader\n"
        "    import re  # start-up time\n"
        "    # start-up time: both\n"
        "    import abc\n"
        "    import ast\n"
        "    x = ast\n"
        "    return importlib.import_module('x'), __import__('y'), str('z')\n",
        encoding="utf-8",
    )
    assert _local_imports(tmp_path) == [
        ("m.py", 8, True), ("m.py", 11, False), ("m.py", 12, True), ("m.py", 14, True),
        ("m.py", 15, True), ("m.py", 17, False),
    ]  # fmt: skip


def test_the_heavy_libraries_load_when_first_read() -> None:
    """``heavy.stats`` imports scipy.stats on its first read, not at ``import heavy``; and no
    module takes a name from it (``from agentiqa_cli.heavy import stats`` imports at once)."""
    code = (
        "import sys\nfrom agentiqa_cli import heavy\n"
        "before = 'scipy.stats' in sys.modules\n"
        "print(before, heavy.stats.rankdata([3, 1, 2]).tolist(), 'scipy.stats' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.stdout.split() == ["False", "[3.0,", "1.0,", "2.0]", "True"], done.stderr[-2000:]
    takers = [
        p.relative_to(ROOT).as_posix()
        for p in sorted((ROOT / "agentiqa_cli").rglob("*.py"))
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and node.module == "agentiqa_cli.heavy"
    ]
    assert takers == []
