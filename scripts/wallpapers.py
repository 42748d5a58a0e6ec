"""Clean images for `eval-bench vqpp` from Debian's wallpaper packages (no root needed).

    cd /tmp/imp && apt-get download plasma-workspace-wallpapers gnome-backgrounds
    for d in *.deb; do dpkg-deb -x "$d" x/; done
    python scripts/wallpapers.py /tmp/imp/x /tmp/imp/clean      # + the bundled photos
    agentiqa eval-bench vqpp /tmp/imp/clean --out-dir eval-vqpp

One image per KDE wallpaper folder (the last file of contents/images, by name) and every
GNOME background, resized to 384 px on the long side (Lanczos), plus the scikit-image
photos bundled with agentiqa.
"""

from __future__ import annotations

import sys
from pathlib import Path

from PIL import Image

from agentiqa_cli.bench.synth import sample_photos

SUFFIXES = (".jpg", ".jpeg", ".png", ".webp")


def main(root: Path, out: Path, size: int = 384) -> int:
    out.mkdir(parents=True, exist_ok=True)
    sources: list[tuple[str, Path]] = []
    for d in sorted((root / "usr/share/wallpapers").iterdir()):
        images = sorted(
            p for p in (d / "contents/images").glob("*") if p.suffix.lower() in SUFFIXES
        )
        if images:
            sources.append((d.name, images[-1]))
    for p in sorted((root / "usr/share/backgrounds/gnome").glob("*")):
        if p.suffix.lower() in SUFFIXES:
            sources.append((f"gnome-{p.stem}", p))
    for name, p in sources:
        with Image.open(p) as im:
            rgb = im.convert("RGB")
        s = size / max(rgb.size)
        rgb = rgb.resize((round(rgb.width * s), round(rgb.height * s)), Image.Resampling.LANCZOS)
        rgb.save(out / f"{name}.png")
    sample_photos(out, size)
    print(f"{len(sources)} wallpapers + bundled photos → {out}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python scripts/wallpapers.py EXTRACTED_DEB_ROOT OUT_DIR")
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
