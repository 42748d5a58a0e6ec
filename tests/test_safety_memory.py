"""Large images take turns: the images in flight share a memory budget, so a folder of
100 MP images is processed one at a time whatever the concurrency, small ones together."""

from __future__ import annotations

import asyncio
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from agentiqa_cli import batch
from agentiqa_cli.batch import Decoder, Pair, RunSink, job_bytes, run_batch
from agentiqa_cli.imaging import load
from agentiqa_cli.imaging.discover import Job
from agentiqa_cli.io.trace import NO_TRACE
from agentiqa_cli.records import Result
from tests.conftest import natural_like, save_rgb


def _run(jobs: list[Job], budget: int) -> dict[str, int]:
    """The most images of each kind ("big", "small") in process at once."""
    now = {"big": 0, "small": 0}
    most = dict(now)

    async def process(pair: Pair) -> Result:
        kind = "big" if "big" in pair.job.image.name else "small"
        now[kind] += 1
        most[kind] = max(most[kind], now[kind])
        await asyncio.sleep(0.05)
        now[kind] -= 1
        return pair.result()

    run = run_batch(jobs, process, fingerprint="f", decoder=Decoder(10**8),
                    sink=RunSink(NO_TRACE.writer), concurrency=4, memory_budget=budget)  # fmt: skip
    asyncio.run(run)
    return most


def test_images_over_the_budget_run_one_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jobs = []
    for i in range(8):
        name = f"big{i}.png" if i % 2 else f"small{i}.png"
        jobs.append(Job(image=save_rgb(tmp_path / name, natural_like(32, 32, seed=i)),
                        root=tmp_path))  # fmt: skip
    # as if the big ones were 100 MP: 4.8 GB each in flight, over a 2 GiB budget
    monkeypatch.setattr(
        batch, "job_bytes", lambda j, m: 4_800_000_000 if "big" in j.image.name else 10**6
    )
    most = _run(jobs, budget=2 * 1024**3)
    assert most["big"] == 1
    small_only = [j for j in jobs if "small" in j.image.name]
    assert _run(small_only, budget=2 * 1024**3)["small"] == 4  # concurrency still applies


def test_the_cost_comes_from_the_headers(tmp_path: Path) -> None:
    img = tmp_path / "a.png"
    Image.new("RGB", (400, 300)).save(img)
    ref = save_rgb(tmp_path / "r.png", natural_like(30, 20))
    assert (
        job_bytes(Job(image=img, root=tmp_path), 10**8)
        == 400 * 300 * batch.BYTES_PER_PIXEL_IN_FLIGHT
    )
    both = job_bytes(Job(image=img, root=tmp_path, reference=ref), 10**8)
    # a pair costs more a pixel: the full-reference tools hold float64 planes of both
    assert both == (400 * 300 + 30 * 20) * batch.BYTES_PER_PIXEL_WITH_REFERENCE
    assert batch.BYTES_PER_PIXEL_WITH_REFERENCE > batch.BYTES_PER_PIXEL_IN_FLIGHT
    (tmp_path / "bad.png").write_bytes(b"nope")
    assert job_bytes(Job(image=tmp_path / "bad.png", root=tmp_path), 10**8) == 0


def _to_rgb_whole(im: Image.Image) -> np.ndarray:
    """The decoder's conversion as it was before it worked in strips (whole-image copies)."""
    mode = im.mode
    if mode in ("I;16", "I;16B", "I;16L", "I;16N", "I"):
        a = np.asarray(im, dtype=np.float64)
        peak = 65535.0 if mode != "I" or a.max() > 255 else 255.0
        g = np.clip(a / peak, 0.0, 1.0).astype(np.float32)
        return np.repeat(g[..., None], 3, axis=2)
    if mode == "F":
        f = np.asarray(im, dtype=np.float64)
        lo, hi = float(np.nanmin(f)), float(np.nanmax(f))
        gf = (f - lo) / (hi - lo) if hi > lo else np.zeros_like(f)
        return np.repeat(gf[..., None], 3, axis=2).astype(np.float32)
    if mode == "P":
        im = im.convert("RGBA")
        mode = "RGBA"
    if mode in ("RGBA", "LA", "PA", "RGBa", "La"):
        rgba = im.convert("RGBA")
        bg = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        im = Image.alpha_composite(bg, rgba)
    rgb = im if im.mode == "RGB" else im.convert("RGB")
    return np.ascontiguousarray(np.asarray(rgb, dtype=np.uint8))


def _images_of_every_mode() -> dict[str, Image.Image]:
    rgb = natural_like(203, 157, seed=4)
    u8 = (rgb * 255).astype(np.uint8) if rgb.dtype != np.uint8 else rgb
    rgba = np.dstack([u8, (np.arange(157)[None, :] * 7 % 256).repeat(203, 0).astype(np.uint8)])
    gray16 = (u8[..., 0].astype(np.uint32) * 257 + 13).astype(np.uint16)
    return {
        "RGB": Image.fromarray(u8),
        "L": Image.fromarray(u8[..., 1]),
        "RGBA": Image.fromarray(rgba, "RGBA"),
        "LA": Image.fromarray(rgba, "RGBA").convert("LA"),
        "P": Image.fromarray(u8).convert("P"),
        "PA": Image.fromarray(rgba, "RGBA").convert("PA"),
        "I;16": Image.fromarray(gray16),
        "I": Image.fromarray(u8[..., 2].astype(np.int32)),
        "I-wide": Image.fromarray(gray16.astype(np.int32) * 3),
        "F": Image.fromarray(u8[..., 0].astype(np.float32) * 0.37 - 5),
        "F-flat": Image.fromarray(np.full((203, 157), 2.5, np.float32)),
    }


@pytest.mark.parametrize("strip", [1 << 20, 157 * 5 + 3])
def test_decoding_in_strips_gives_the_same_pixels(
    monkeypatch: pytest.MonkeyPatch, strip: int
) -> None:
    """Every mode decodes to exactly the values the whole-image conversion gave (the
    detectors' readings on normal-size images depend on them), with one strip or many."""
    monkeypatch.setattr(load, "STRIP_PIXELS", strip)
    for name, im in _images_of_every_mode().items():
        got, want = load._to_rgb(im), _to_rgb_whole(im)
        assert got.dtype == want.dtype and got.shape == want.shape, name
        assert np.array_equal(got, want), name


def test_a_large_sixteen_bit_image_costs_its_result_and_a_strip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The 16-bit conversion made three whole-image float64 copies (8 bytes a pixel each)
    and a float32 one before its result: a 100 MP scan took several GB to decode. Now: the
    result, the samples as decoded (twice: Pillow hands them over as bytes) and a strip."""
    monkeypatch.setattr(load, "STRIP_PIXELS", 1 << 16)
    side = 2000
    gray16 = np.arange(side * side, dtype=np.uint32).reshape(side, side) % 65536
    path = tmp_path / "g16.png"
    Image.fromarray(gray16.astype(np.uint16)).save(path)
    tracemalloc.start()
    try:
        image = load.load_image(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    result = side * side * 3 * 4
    assert image.pixels.nbytes == result
    assert peak < result + side * side * 4 + 4 * 8 * load.STRIP_PIXELS  # was 2x result


def test_exif_orientation_costs_no_copy(tmp_path: Path) -> None:
    """The decoded image is turned upright in place (a copy was made even when upright)."""
    rgb = (natural_like(300, 200, seed=2) * 255).astype(np.uint8)
    path = tmp_path / "o.jpg"
    exif = Image.Exif()
    exif[0x0112] = 6  # rotated: shown 300 wide, 200 high
    Image.fromarray(rgb).save(path, exif=exif, quality=95)
    image = load.load_image(path)
    assert image.size == (300, 200)


def test_a_batch_runs_numpys_blas_on_one_thread_and_gives_it_back(tmp_path: Path) -> None:
    # the workers are the batch's parallelism: OpenBLAS threads in each would oversubscribe
    threadpoolctl = pytest.importorskip("threadpoolctl")

    def numpy_blas() -> list[int]:
        return [
            i["num_threads"]
            for i in threadpoolctl.threadpool_info()
            if i["prefix"] == "libscipy_openblas"
        ]

    if not numpy_blas():
        pytest.skip("numpy here is not built on its own OpenBLAS")
    seen: list[list[int]] = []

    async def process(pair: Pair) -> Result:
        seen.append(await asyncio.to_thread(numpy_blas))  # as a detector's thread sees it
        return pair.result()

    jobs = [Job(image=save_rgb(tmp_path / f"{i}.png", natural_like(16, 16, seed=i)),
                root=tmp_path) for i in range(3)]  # fmt: skip
    with threadpoolctl.threadpool_limits(limits=2):  # as on a machine with cores to spare
        before = numpy_blas()
        asyncio.run(run_batch(jobs, process, fingerprint="f", decoder=Decoder(10**8),
                              sink=RunSink(NO_TRACE.writer), concurrency=2))  # fmt: skip
        after = numpy_blas()
    assert before and all(n == 2 for n in before)
    assert len(seen) == 3 and all(n == 1 for s in seen for n in s)
    assert after == before


_HEAP_PROBE = """
import sys
import numpy as np
from agentiqa_cli import batch
if sys.argv[1] == "batch":  # an empty batch: it sets the heap up before its workers start
    import asyncio
    from agentiqa_cli.io.trace import NO_TRACE
    async def process(pair): return pair.result()
    asyncio.run(batch.run_batch([], process, fingerprint="f", decoder=batch.Decoder(10**8),
                                sink=batch.RunSink(NO_TRACE.writer)))
def resident():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096
a = np.ones(12 << 20, np.uint8)  # an image-sized temporary, every page touched
held = resident()
del a
print(held - resident())
"""


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads /proc (Linux)")
def test_a_batch_keeps_freed_image_sized_blocks_for_the_next_image() -> None:
    # glibc's default hands a freed 12 MiB block back to the kernel, and the next image's
    # array of that size faults every page in again; a batch's heap keeps it for reuse
    import subprocess
    import sys

    if not batch.keep_freed_memory():
        pytest.skip("the C library here is not glibc")

    def returned(mode: str) -> int:
        out = subprocess.run([sys.executable, "-c", _HEAP_PROBE, mode], capture_output=True,
                             text=True, check=True)  # fmt: skip
        return int(out.stdout)

    assert returned("plain") >= 10 << 20  # glibc's default: given back at once
    assert returned("batch") < 1 << 20  # kept by the batch's heap
