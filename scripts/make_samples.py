"""Sample images for `make demo`: photos bundled with scikit-image, clean and distorted.

    python scripts/make_samples.py samples/

Writes four clean photos and, from them, one image per common problem (blur, noise, JPEG,
under/over-exposure, low contrast, pixelation, colour cast, posterization) at a clearly
visible level, plus a shallow-depth-of-field photo that must not be called blurry.
Deterministic.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from PIL import Image

from agentiqa_cli.bench.synth import sample_photos
from agentiqa_cli.imaging.distort import distort

# (source photo, distortion kind, level 1-5)
DISTORTED = [
    ("astronaut", "blur", 4),
    ("chelsea", "noise", 3),
    ("camera", "jpeg", 5),
    ("astronaut", "darken", 4),
    ("chelsea", "brighten", 4),
    ("coffee", "contrast", 4),
    ("camera", "pixelate", 4),
    ("chelsea", "color_cast", 4),
    ("coffee", "posterize", 3),
]


def main(out: Path) -> None:
    clean_dir = out / "clean"
    clean = {
        p.stem: p
        for p in sample_photos(clean_dir, 512, names=("astronaut", "chelsea", "camera", "coffee"))
    }
    for i, (name, kind, level) in enumerate(DISTORTED):
        px = np.asarray(Image.open(clean[name]).convert("RGB"), dtype=np.float32) / 255.0
        d = distort(px, kind, level, np.random.default_rng(i))
        Image.fromarray((np.clip(d, 0, 1) * 255).round().astype(np.uint8)).save(
            out / f"{name}_{kind}_{level}.png"
        )
    print(f"{len(clean)} clean photos in {clean_dir}, {len(DISTORTED)} distorted in {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "samples"))
