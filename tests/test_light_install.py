"""The core install runs without torch, torchvision, pyiqa and scikit-image (issue 24, "A
light install"; scikit-image is the samples extra).

Each command runs in a subprocess whose import system refuses those packages, as if they
were not installed: the core commands must work and never try to import them; a tool or
option that needs them exits 2 naming ``agentiqa[pyiqa]``. scripts/light_install.py checks
the same against a real ``pip install`` in a fresh venv (make light-check).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import ndimage

from agentiqa_cli.resources import default_cards_dir
from agentiqa_cli.tools.cards import load_cards
from agentiqa_cli.tools.extras import card_extra
from tests.conftest import natural_like, save_rgb

ROOT = Path(__file__).resolve().parent.parent

# a finder first on sys.meta_path that refuses the extra's packages and records each import
# tried; importlib.util.find_spec (how agentiqa asks whether they are there) says "absent"
HARNESS = r"""
import importlib.abc, json, os, sys
BLOCKED = set(json.loads(os.environ["LIGHT_BLOCK"]))
tried = []
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            tried.append(name)
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Refuse())
import importlib.util
_find_spec = importlib.util.find_spec
def find_spec(name, package=None):  # asking whether it is installed is not importing it
    return None if name.split(".")[0] in BLOCKED else _find_spec(name, package)
importlib.util.find_spec = find_spec
from agentiqa_cli.cli import main
sys.argv = ["agentiqa", *json.loads(os.environ["LIGHT_ARGV"])]
code = 0
try:
    main()
except SystemExit as e:
    code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
loaded = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
sys.stderr.write("\nLIGHT " + json.dumps({"tried": tried, "loaded": loaded}) + "\n")
sys.exit(code)
"""


EXTRAS = ("torch", "torchvision", "pyiqa", "skimage")


def light(
    args: list[str], cwd: Path, blocked: tuple[str, ...] = EXTRAS
) -> tuple[int, str, str, dict[str, list[str]]]:
    env = os.environ | {
        "PYTHONPATH": str(ROOT),
        "LIGHT_ARGV": json.dumps(args),
        "LIGHT_BLOCK": json.dumps(blocked),
    }
    env.pop("AGENTIQA_VLM_URL", None)
    proc = subprocess.run(
        [sys.executable, "-c", HARNESS], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    stderr, _, tail = proc.stderr.rpartition("\nLIGHT ")
    return proc.returncode, proc.stdout, stderr, json.loads(tail)


CORE_MODULES = (
    "agentiqa_cli.cli",  # every command module: the app imports them all
    "agentiqa_cli.runtime",
    "agentiqa_cli.agent.pipeline",
    "agentiqa_cli.agent.rules",
    "agentiqa_cli.vlm.http",
    "agentiqa_cli.tools.runner",
    "agentiqa_cli.tools.detectors",
    "agentiqa_cli.tools.native",
    "agentiqa_cli.tools.weights",
    "agentiqa_cli.report.build",
    "agentiqa_cli.imperfect.apply",
    "agentiqa_cli.evaluate.loop",
)


def test_core_modules_import_nothing_of_the_extra_at_module_level() -> None:
    """Here torch, pyiqa and scikit-image are installed: importing the core must still not
    load them."""
    code = (
        f"import sys, {', '.join(CORE_MODULES)}; "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'torchvision', "
        "'pyiqa', 'matplotlib', 'skimage')); print(bad); sys.exit(1 if bad else 0)"
    )
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.fixture
def image(tmp_path: Path) -> Path:
    return save_rgb(tmp_path / "in" / "photo.png", natural_like(160, 200))


@pytest.mark.parametrize(
    "command",
    [
        ["score", "{img}", "-o", "{tmp}/s.csv"],
        ["score", "{img}", "--ref", "{img}", "--tools", "psnr,ssim,detail", "-o", "{tmp}/f.csv"],
        ["assess", "{img}", "-o", "{tmp}/a.csv"],
        ["fix", "{img}", "-o", "{tmp}/fixed"],
        ["tools", "list"],
        ["--version"],
    ],
    ids=["score", "score-fr", "assess", "fix", "tools-list", "version"],
)
def test_core_commands_never_import_torch_or_pyiqa(
    command: list[str], image: Path, tmp_path: Path
) -> None:
    args = [a.format(img=image, tmp=tmp_path) for a in command]
    code, _, err, seen = light(args, tmp_path)
    assert code == 0, err
    assert seen == {"tried": [], "loaded": []}, f"{' '.join(command)} imported {seen}"
    assert "Traceback" not in err


def test_fix_denoises_and_deblurs_and_tiny_images_score_without_the_extras(
    tmp_path: Path,
) -> None:
    """The fixes' restoration and the small-image sharpness are numpy/scipy/PyWavelets."""
    x = natural_like(160, 200)
    noisy = save_rgb(
        tmp_path / "in" / "noisy.png", x + np.random.default_rng(0).normal(0, 0.08, x.shape)
    )
    blurry = save_rgb(tmp_path / "in" / "blurry.png", ndimage.gaussian_filter(x, (2.5, 2.5, 0)))
    code, _, err, seen = light(
        ["fix", str(noisy), str(blurry), "-o", str(tmp_path / "fixed")], tmp_path
    )
    assert code == 0, err
    assert seen == {"tried": [], "loaded": []}
    fixes = (tmp_path / "fixed" / "fixes.csv").read_text()
    assert ",denoise," in fixes and ",deblur," in fixes
    tiny = save_rgb(tmp_path / "tiny.png", x[:30, :40])  # too small for the sharpness tiles
    code, _, err, seen = light(["score", str(tiny), "-o", str(tmp_path / "t.csv")], tmp_path)
    assert code == 0 and seen == {"tried": [], "loaded": []}, err


def test_report_runs_without_the_extra(image: Path, tmp_path: Path) -> None:
    assert light(["assess", str(image), "-o", str(tmp_path / "a.csv")], tmp_path)[0] == 0
    code, _, err, seen = light(
        ["report", str(tmp_path / "a.csv"), "--html", str(tmp_path / "r.html")], tmp_path
    )
    assert code == 0, err
    assert seen == {"tried": [], "loaded": []}
    assert (tmp_path / "r.html").is_file()


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["score", "{img}", "--tools", "niqe", "-o", "{tmp}/n.csv"], "niqe"),
        (["score", "{img}", "--tools", "sharpness,piqe", "-o", "{tmp}/n.csv"], "piqe"),
        (["assess", "{img}", "--tools", "musiq", "-o", "{tmp}/n.csv"], "musiq"),
        (["score", "{img}", "--device", "cuda", "-o", "{tmp}/n.csv"], "--device cuda"),
    ],
    ids=["niqe", "piqe-among-others", "assess-learned", "device-cuda"],
)
def test_a_tool_of_the_extra_exits_2_naming_it(
    args: list[str], named: str, image: Path, tmp_path: Path
) -> None:
    code, _, err, _ = light([a.format(img=image, tmp=tmp_path) for a in args], tmp_path)
    assert code == 2, err
    assert "agentiqa[pyiqa]" in err and named in err
    assert "Traceback" not in err
    assert not (tmp_path / "n.csv").exists()  # refused before any output


def test_tools_list_and_check_say_which_tools_need_the_extra(tmp_path: Path) -> None:
    code, out, err, _ = light(["tools", "list", "--json"], tmp_path)
    assert code == 0, err
    rows = {r["name"]: r for r in json.loads(out)}
    assert rows["niqe"]["extra"] == "pyiqa" and rows["niqe"]["installed"] is False
    assert rows["sharpness"]["extra"] is None and rows["sharpness"]["installed"] is True
    assert rows["psnr"]["extra"] is None  # numpy re-implementation: core
    code, out, err, seen = light(
        ["tools", "check", "niqe", "piqe", "sharpness", "--json"], tmp_path
    )
    assert code == 1  # a tool named is not ready
    checked = {r["tool"]: r for r in json.loads(out)}
    assert not checked["niqe"]["ready"] and "agentiqa[pyiqa]" in checked["niqe"]["detail"]
    assert not checked["piqe"]["ready"] and checked["sharpness"]["ready"]
    assert seen == {"tried": [], "loaded": []}
    code, out, err, seen = light(["tools", "check", "niqe", "sharpness"], tmp_path)
    assert code == 1 and seen == {"tried": [], "loaded": []}
    assert "niqe needs the pyiqa extra" in " ".join(out.split())
    assert "offered it by default" not in err  # it is not: its extra is missing


def test_every_shipped_card_outside_the_extra_is_builtin_or_native() -> None:
    """The core's tools are exactly the built-in ones and pyiqa's numpy re-implementations."""
    core = sorted(c.name for c in load_cards(default_cards_dir()) if card_extra(c) is None)
    builtin = [c for c in load_cards(default_cards_dir()) if c.backend == "builtin"]
    assert {c.name for c in builtin} <= set(core)
    assert {"psnr", "psnry", "ssim", "ssimc", "ms_ssim", "gmsd"} <= set(core)
    assert "niqe" not in core and "piqe" not in core


def test_eval_bench_mos_without_matplotlib_exits_2_naming_the_plot_extra(tmp_path: Path) -> None:
    code, _, err, _ = light(
        ["eval-bench", "mos", str(tmp_path / "none"), "--out-dir", str(tmp_path / "o")],
        tmp_path,
        blocked=(*EXTRAS, "matplotlib"),
    )
    assert code == 2 and "agentiqa[plot]" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()
