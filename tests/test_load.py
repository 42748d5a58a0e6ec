"""Every bad-input class of docs/commands.md (Bad input) gets a clear error or correct handling."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from agentiqa_cli.errors import ImageError
from agentiqa_cli.imaging.load import LoadedImage, block_mean, display_path, load_image
from tests.conftest import natural_like, save_rgb


def test_rgb_png_roundtrip(photo: Path) -> None:
    im = load_image(photo)
    assert im.pixels.shape == (96, 128, 3)
    assert im.pixels.dtype == np.float32
    assert im.pixels.min() >= 0.0 and im.pixels.max() <= 1.0
    assert len(im.sha256) == 64


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty file"),
        (b"this is not an image at all", "not a recognised image"),
    ],
)
def test_unreadable_bytes(tmp_path: Path, content: bytes, message: str) -> None:
    p = tmp_path / "bad.jpg"
    p.write_bytes(content)
    with pytest.raises(ImageError, match=message):
        load_image(p)


def test_truncated_jpeg(tmp_path: Path) -> None:
    good = save_rgb(tmp_path / "good.jpg", natural_like(256, 256))
    data = good.read_bytes()
    bad = tmp_path / "truncated.jpg"
    bad.write_bytes(data[: len(data) // 3])
    with pytest.raises(ImageError, match="corrupt or truncated"):
        load_image(bad)


def test_too_small(tmp_path: Path) -> None:
    p = tmp_path / "one.png"
    Image.new("RGB", (1, 1), (10, 20, 30)).save(p)
    with pytest.raises(ImageError, match="1×1"):
        load_image(p)


def test_sixteen_bit_grayscale(tmp_path: Path) -> None:
    p = tmp_path / "g16.png"
    arr = (np.linspace(0, 65535, 64 * 64).reshape(64, 64)).astype(np.uint16)
    Image.fromarray(arr).save(p)
    im = load_image(p)
    assert im.pixels.shape == (64, 64, 3)
    assert im.pixels.max() == pytest.approx(1.0, abs=1e-3)
    assert im.pixels[..., 0].mean() == pytest.approx(0.5, abs=0.02)


@pytest.mark.parametrize("mode", ["CMYK", "P", "L", "LA", "RGBA", "I;16"])
def test_modes(tmp_path: Path, mode: str) -> None:
    rgb = Image.fromarray((natural_like(48, 64) * 255).astype(np.uint8))
    if mode == "I;16":
        img = Image.fromarray(np.asarray(rgb.convert("L"), dtype=np.uint16) * 257)
        p = tmp_path / "x.png"
    else:
        img = rgb.convert(mode)
        p = tmp_path / ("x.jpg" if mode == "CMYK" else "x.png")
    img.save(p)
    im = load_image(p)
    assert im.pixels.shape == (48, 64, 3)
    assert np.isfinite(im.pixels).all()


def test_alpha_composited_over_white(tmp_path: Path) -> None:
    p = tmp_path / "clear.png"
    Image.new("RGBA", (32, 32), (0, 0, 0, 0)).save(p)
    assert load_image(p).pixels.min() == pytest.approx(1.0)


def test_animated_gif_first_frame(tmp_path: Path) -> None:
    frames = [Image.new("RGB", (32, 32), c) for c in ((255, 0, 0), (0, 0, 255))]
    p = tmp_path / "anim.gif"
    frames[0].save(p, save_all=True, append_images=frames[1:], duration=100, loop=0)
    px = load_image(p).pixels
    assert px[..., 0].mean() > 0.9 and px[..., 2].mean() < 0.1


def test_exif_orientation_applied(tmp_path: Path) -> None:
    img = Image.fromarray((natural_like(40, 80) * 255).astype(np.uint8))
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90° clockwise on display
    p = tmp_path / "rot.jpg"
    img.save(p, exif=exif.tobytes())
    assert load_image(p).pixels.shape[:2] == (80, 40)


def test_decompression_bomb_refused(tmp_path: Path) -> None:
    p = save_rgb(tmp_path / "big.png", natural_like(200, 200))
    with pytest.raises(ImageError, match="exceeds the limit"):
        load_image(p, max_pixels=10_000)


def test_permission_denied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, photo: Path) -> None:
    def deny(path: object, flags: int, *args: object) -> int:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "open", deny)
    with pytest.raises(ImageError, match="permission denied"):
        load_image(photo)


def test_symlink_loop(tmp_path: Path) -> None:
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    os.symlink(b, a)
    os.symlink(a, b)
    with pytest.raises(ImageError, match="cannot read"):
        load_image(a)


def test_non_utf8_name(tmp_path: Path) -> None:
    raw = os.fsencode(tmp_path) + b"/caf\xe9.png"
    save_rgb(Path(os.fsdecode(raw)), natural_like())
    p = Path(os.fsdecode(raw))
    im = load_image(p)
    assert im.pixels.shape == (96, 128, 3)
    assert display_path(p).endswith("caf\\xe9.png")
    display_path(p).encode("utf-8")  # printable in a UTF-8 CSV


def test_directory_is_not_an_image(tmp_path: Path) -> None:
    d = tmp_path / "folder.png"
    d.mkdir()
    with pytest.raises(ImageError, match="directory"):
        load_image(d)


@pytest.mark.parametrize("f", [2, 3, 4, 16, 17])
def test_block_mean_is_the_mean_of_whole_blocks(f: int) -> None:
    """8-bit blocks are summed exactly (integers up to f = 16, floats beyond), float ones as
    floats; both equal the plain mean over a 4-D reshape, trailing partial blocks dropped."""
    rng = np.random.default_rng(f)
    rgb8 = rng.integers(0, 256, (5 * f + f - 1, 7 * f + 1, 3), dtype=np.uint8)
    want = rgb8[: 5 * f, : 7 * f].reshape(5, f, 7, f, 3).mean(axis=(1, 3)) / 255.0
    assert block_mean(rgb8, f).shape == (5, 7, 3)
    np.testing.assert_allclose(block_mean(rgb8, f), want, atol=2e-7)
    np.testing.assert_allclose(block_mean(rgb8.astype(np.float32) / 255, f), want, atol=2e-6)
    # a plane (2-D) and the brightest channel of a kept 8-bit image
    img = LoadedImage(Path("x.png"), rgb8=rgb8)
    top = rgb8.max(axis=2)[: 5 * f, : 7 * f].reshape(5, f, 7, f).mean(axis=(1, 3)) / 255.0
    np.testing.assert_allclose(img.area_mean(f, 0, 5 * f, brightest=True), top, atol=2e-7)
    assert img._pixels is None  # no float copy of the whole image was made
