"""Large images take turns: the images in flight share a memory budget, so a folder of
100 MP images is processed one at a time whatever the concurrency, small ones together."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from PIL import Image

from agentiqa_cli import batch
from agentiqa_cli.batch import Decoder, Pair, RunSink, job_bytes, run_batch
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
    assert both == (400 * 300 + 30 * 20) * batch.BYTES_PER_PIXEL_IN_FLIGHT
    (tmp_path / "bad.png").write_bytes(b"nope")
    assert job_bytes(Job(image=tmp_path / "bad.png", root=tmp_path), 10**8) == 0
