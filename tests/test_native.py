"""Native psnr/psnry/ssim/ssimc/gmsd reproduce pyiqa's values, and the runner uses them."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from agentiqa_cli.bench.synth import bundled_photos
from agentiqa_cli.imaging.distort import KINDS
from agentiqa_cli.imaging.load import LoadedImage
from agentiqa_cli.resources import default_cards_dir
from agentiqa_cli.tools.cards import load_cards
from agentiqa_cli.tools.native import NATIVE
from agentiqa_cli.tools.runner import ToolRunner


def _img(px: np.ndarray, name: str = "x.png") -> LoadedImage:
    return LoadedImage(path=Path(name), pixels=np.ascontiguousarray(px, np.float32), sha256=name)


def _pair(photo: str, w: int, h: int, kind: str, level: int, grey: bool) -> tuple[LoadedImage, ...]:
    (px,) = bundled_photos([photo])
    im = Image.fromarray((px * 255 + 0.5).astype(np.uint8)).resize((w, h))
    if grey:
        im = im.convert("L").convert("RGB")  # as the decoder hands a grey file on
    ref = np.asarray(im, dtype=np.float32) / 255.0
    dist = np.clip(KINDS[kind](ref, level, np.random.default_rng(level)), 0, 1)
    dist = (np.round(dist * 255) / 255).astype(np.float32)  # 8-bit, as decoded from a file
    return _img(dist, "d.png"), _img(ref, "r.png")


CASES = [  # (photo, width, height, distortion, level, grey): sizes odd and even, colour and grey
    ("astronaut", 256, 192, "noise", 3, False),
    ("coffee", 131, 97, "blur", 2, False),
    ("camera", 96, 64, "jpeg", 4, True),
    ("chelsea", 17, 33, "contrast", 1, False),
    ("rocket", 200, 123, "noise", 5, True),
    ("astronaut", 177, 163, "blur", 3, False),  # odd sides at every ms_ssim scale
]


@pytest.fixture(scope="module")
def pyiqa_metrics() -> dict[str, object]:
    pyiqa = pytest.importorskip("pyiqa")
    return {name: pyiqa.create_metric(name, device="cpu") for name in NATIVE}


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}x{c[2]}-{c[3]}")
def test_native_equals_pyiqa(case: tuple, pyiqa_metrics: dict[str, object]) -> None:
    import torch

    dist, ref = _pair(*case)
    for name, native in NATIVE.items():
        with torch.inference_mode():
            try:
                theirs = float(pyiqa_metrics[name](dist.tensor(), ref.tensor()))  # type: ignore[operator]
            except RuntimeError:  # ms_ssim's coarsest scale is smaller than its window
                with pytest.raises(ValueError, match="smaller than the 11-pixel window"):
                    native.fn(dist, ref)
                continue
        ours = native.fn(dist, ref)
        assert ours == pytest.approx(theirs, abs=1e-4), name
        assert native.lower_better == bool(pyiqa_metrics[name].lower_better)  # type: ignore[attr-defined]


def test_identical_images_and_shape_mismatch() -> None:
    dist, ref = _pair("astronaut", 64, 48, "noise", 2, False)
    assert NATIVE["psnr"].fn(ref, ref) == pytest.approx(80.0)  # pyiqa's eps 1e-8
    assert NATIVE["ssim"].fn(ref, ref) == pytest.approx(1.0)
    assert NATIVE["gmsd"].fn(ref, ref) == pytest.approx(0.0, abs=1e-12)
    small = _img(ref.pixels[:40, :40])
    with pytest.raises(ValueError, match="reference is 40×40"):
        NATIVE["ssim"].fn(dist, small)


def test_runner_uses_native_without_torch(tmp_path: Path) -> None:
    """Cards backed by pyiqa ids with a native version run without building pyiqa metrics."""
    cards = load_cards(default_cards_dir())
    runner = ToolRunner(cards, "auto")
    dist, ref = _pair("coffee", 80, 60, "blur", 3, False)
    for name in ("psnr", "ssim", "gmsd"):
        score = runner.run(cards.get(name), dist, ref)
        assert score.error is None
        assert score.raw == pytest.approx(NATIVE[name].fn(dist, ref))
    # still the usual error without a reference
    assert "needs --ref" in (runner.run(cards.get("ssim"), dist, None).error or "")


def test_score_process_never_imports_torch(tmp_path: Path) -> None:
    import subprocess

    dist, ref = _pair("coffee", 80, 60, "blur", 3, False)
    for im, name in ((dist, "d"), (ref, "r")):
        (tmp_path / name).mkdir()
        Image.fromarray((im.pixels * 255).round().astype(np.uint8)).save(tmp_path / name / "a.png")
    code = (
        "import sys; from agentiqa_cli.cli import main\n"
        "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
        "print('TORCH' if 'torch' in sys.modules else 'NO-TORCH', code)"
    )
    for args in (
        [str(tmp_path / "d"), "--ref", str(tmp_path / "r"), "--tools", "psnr,ssim,gmsd"],
        [str(tmp_path / "d")],  # the default no-reference set: the built-in detectors
    ):
        r = subprocess.run(
            [sys.executable, "-c", code, "score", *args, "-o", str(tmp_path / "o.csv"), "-q"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parent.parent,
        )
        assert r.stdout.strip().splitlines()[-1].startswith("NO-TORCH"), r.stdout + r.stderr
