"""A small, deterministic example question set whose answers are true by construction.

The images are made here (a clean pattern and copies of it blurred, noised, darkened and
JPEG-compressed), so every executor-distortion answer names the distortion that was
actually applied; tool answers follow from the tools' FR/NR mode; planner and summarizer
answers follow from the query and evidence written into the question. Re-exported by
``bench.mcq`` as ``make_example_mcq``.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

SIZE = 96
_WHICH = ["Noise", "Blur", "Darkening (brightness change)", "No visible distortion"]


def _clean() -> Image.Image:
    y, x = np.mgrid[0:SIZE, 0:SIZE].astype(np.float32) / (SIZE - 1)
    base = np.stack([0.55 + 0.3 * x, 0.6 + 0.25 * y, 0.85 - 0.2 * x], axis=2)  # sky-like ramp
    im = Image.fromarray(np.round(np.clip(base, 0, 1) * 255).astype(np.uint8))
    d = ImageDraw.Draw(im)
    d.rectangle((14, 40, 44, 70), fill=(200, 30, 30))  # the red square
    d.ellipse((56, 18, 84, 46), fill=(250, 210, 40))
    d.rectangle((0, 78, SIZE - 1, SIZE - 1), fill=(60, 120, 50))
    for k in range(52, 92, 6):  # thin dark bars: fine detail that blur visibly removes
        d.line((k, 56, k, 74), fill=(20, 20, 20), width=2)
    return im


def _images() -> dict[str, Image.Image]:
    clean = _clean()
    a = np.asarray(clean, dtype=np.float32) / 255.0
    rng = np.random.default_rng(2024)
    noise = np.clip(a + rng.normal(0.0, 0.09, a.shape[:2])[..., None], 0, 1)
    dark = np.clip(a * 0.18, 0, 1)
    buf = io.BytesIO()
    clean.save(buf, format="JPEG", quality=6)
    jpeg = Image.open(io.BytesIO(buf.getvalue())).convert("RGB")
    return {
        "clean.png": clean,
        "blur.png": clean.filter(ImageFilter.GaussianBlur(radius=3)),
        "noise.png": Image.fromarray(np.round(noise * 255).astype(np.uint8)),
        "dark.png": Image.fromarray(np.round(dark * 255).astype(np.uint8)),
        "jpeg.png": jpeg,
    }


def _q(qid: str, track: str, image: str, question: str, options: Any, answer: str,
       reference: str | None = None) -> dict[str, Any]:  # fmt: skip
    row: dict[str, Any] = {"id": qid, "track": track, "question": question, "options": options}
    row.update({"answer": answer, "image": image})
    if reference:
        row["reference"] = reference
    return row


QUESTIONS: list[dict[str, Any]] = [
    _q("plan-ref-mode", "planner", "noise.png",
       "The user gives this image and its pristine original and asks: 'How much has noise "
       "degraded the photo compared with the original?' Which reference mode should the plan use?",
       ["Full-Reference", "No-Reference"], "A", reference="clean.png"),
    _q("plan-scope", "planner", "blur.png",
       "The user asks: 'Is the red square in focus?' Which object is the query about?",
       ["Global (the whole image)", "The red square", "The yellow circle", "No object"], "B"),
    _q("plan-explicit", "planner", "dark.png",
       "The user asks: 'Is this photo too dark?' Is the distortion to check named in the query, "
       "or must it be inferred from the image?",
       {"A": "Named explicitly: brightness change", "B": "Not named: it must be inferred"}, "A"),
    _q("plan-need-ref", "planner", "clean.png",
       "The user asks: 'Rate the overall quality of this image.' and gives no other image. "
       "Is a reference image needed to answer?", ["Yes", "No"], "B"),
    _q("dist-blur", "executor-distortion", "blur.png",
       "Which distortion is most visible in this image?", _WHICH, "B"),
    _q("dist-noise", "executor-distortion", "noise.png",
       "Which distortion is most visible in this image?", _WHICH, "A"),
    _q("dist-dark", "executor-distortion", "dark.png",
       "Which distortion is most visible in this image?", _WHICH, "C"),
    _q("dist-jpeg", "executor-distortion", "jpeg.png",
       "Which distortion category best describes the 8x8 block pattern in this image?",
       ["Noise", "Blurs", "Compression", "Contrast"], "C"),
    _q("dist-clean", "executor-distortion", "clean.png",
       "How severe is the distortion in this image?",
       ["None", "Slight", "Moderate", "Severe"], "A"),
    _q("tool-nr-jpeg", "executor-tool", "jpeg.png",
       "No reference image is available. Which tool can measure the JPEG compression damage "
       "in this image?", ["PSNR", "SSIM", "NIQE", "LPIPS"], "C"),
    _q("tool-psnr-noref", "executor-tool", "noise.png",
       "No reference image is given. Can PSNR be used to assess this image?", ["Yes", "No"], "B"),
    _q("tool-fr", "executor-tool", "blur.png",
       "A reference image is available. Which of these tools compares the image with its "
       "reference?", ["NIQE", "BRISQUE", "SSIM", "MUSIQ"], "C", reference="clean.png"),
    _q("sum-blur", "summarizer", "blur.png",
       "Evidence: distortion analysis found Blurs, severe: the edges of the shapes are smeared. "
       "SSIM against the reference gives 1.8 on the 1-5 scale (higher is better). "
       "Why do the edges of the red square look soft?",
       ["The image is out of focus (blurred), so detail is lost", "Strong noise covers the edges",
        "The image is overexposed", "The colour saturation was increased"], "A",
       reference="clean.png"),
    _q("sum-dark", "summarizer", "dark.png",
       "Evidence: Brightness change, severe: the mean luminance is very low and the shadows are "
       "crushed. What would most improve this image?",
       ["Sharpening it", "Raising its brightness (exposure)", "Removing noise",
        "Compressing it less"], "B"),
    _q("sum-noise", "summarizer", "noise.png",
       "Evidence: Noise, moderate: fine grain over the flat areas. NIQE (no reference) gives 2.4 "
       "on the 1-5 scale. Which statement does the evidence support?",
       ["Grainy noise lowers the quality of the flat areas", "The image is pristine",
        "The image is mainly blurred", "The image is too dark"], "A"),
]  # fmt: skip


def make_example_mcq(out_dir: Path) -> Path:
    """Write the example images and ``questions.jsonl`` into ``out_dir``; return the JSONL.

    Byte-for-byte deterministic (fixed noise seed, no timestamps in the PNGs).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, im in _images().items():
        im.save(out_dir / name, format="PNG", optimize=True)
    path = out_dir / "questions.jsonl"
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for q in QUESTIONS:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")
    return path
