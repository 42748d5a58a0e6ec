"""`--engine ray` on a local Ray instance (2 CPUs): the same rows, keys and trace as the local
engine (modulo order), resume, exit codes, and no row lost when a worker dies."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tests.conftest import natural_like, save_rgb
from tests.test_cli_score import invoke

if os.environ.get("AGENTIQA_REQUIRE_RAY"):  # make test installs agentiqa[ray]: never skip
    import ray
else:
    ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow  # each Ray run starts its workers: tens of seconds here


@pytest.fixture(scope="module", autouse=True)
def local_ray() -> object:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield
    ray.shutdown()


@pytest.fixture
def images(tmp_path: Path) -> Path:
    d = tmp_path / "in"
    for i in range(6):
        a = natural_like(96, 128, seed=i)
        noisy = a + (0.02 * i) * np.random.default_rng(i).normal(size=a.shape)
        save_rgb(d / f"{i}.png", np.clip(noisy, 0, 1))
    (d / "broken.jpg").write_text("not an image")
    return d


def _rows(csv: Path) -> pd.DataFrame:
    return pd.read_csv(csv).drop(columns=["seconds"]).sort_values("image").reset_index(drop=True)


def _events(trace: Path) -> list[tuple[str, str, str]]:
    lines = [json.loads(x) for x in trace.read_text().splitlines()]
    return sorted((e.get("image", ""), e.get("key", ""), e["step"]) for e in lines[1:])


def test_ray_rows_equal_local_rows(tmp_path: Path, images: Path) -> None:
    local, remote = tmp_path / "local.csv", tmp_path / "ray.csv"
    assert invoke("score", images, "-o", local, "-q")[0] == 3  # the broken file's row
    assert invoke("score", images, "-o", remote, "-q", "--engine", "ray")[0] == 3
    pd.testing.assert_frame_equal(_rows(local), _rows(remote))
    assert _events(tmp_path / "local.trace.jsonl") == _events(tmp_path / "ray.trace.jsonl")
    # the gate decides the same way (on the readable images: errors alone mean exit 3)
    good = sorted(images.glob("*.png"))
    assert invoke("score", *good, "-o", tmp_path / "g.csv", "-q", "--engine", "ray",
                  "--fail-under", "4.99")[0] == 1  # fmt: skip


def test_ray_resume_skips_done_rows(tmp_path: Path, images: Path) -> None:
    out = tmp_path / "r.csv"
    first = sorted(images.glob("*.png"))[:3]
    assert invoke("score", *first, "-o", out, "-q")[0] == 0
    code, stdout = invoke("score", images, "-o", out, "-q", "--engine", "ray", "--resume",
                          "--json")  # fmt: skip
    assert code == 3
    summary = json.loads(stdout)["summary"]
    assert summary["skipped"] == 3 and summary["processed"] == 4
    df = pd.read_csv(out)
    assert len(df) == 7 and df["key"].is_unique


def test_assess_on_ray_equals_local(tmp_path: Path, images: Path) -> None:
    local, remote = tmp_path / "a.csv", tmp_path / "b.csv"
    assert invoke("assess", images, "-o", local, "-q")[0] == 3
    assert invoke("assess", images, "-o", remote, "-q", "--engine", "ray")[0] == 3
    pd.testing.assert_frame_equal(_rows(local), _rows(remote))


def test_a_dead_worker_loses_no_row(tmp_path: Path, images: Path) -> None:
    """A worker killed mid-run is restarted and its batch retried: every image has its row."""
    import threading
    import time

    psutil = pytest.importorskip("psutil")
    n_ok = 60
    for i in range(6, n_ok):  # enough work that the kill lands while workers run
        save_rgb(images / f"{i}.png", natural_like(384, 512, seed=i))
    killed: list[int] = []

    def kill_one() -> None:
        deadline = time.time() + 120
        while time.time() < deadline and not killed:
            for p in psutil.process_iter(["pid", "cmdline"]):
                cmd = " ".join(p.info["cmdline"] or [])
                if "MapWorker" in cmd and "RayWorker" in cmd:
                    time.sleep(0.5)  # let it take a batch
                    try:
                        p.kill()
                    except psutil.NoSuchProcess:  # it finished first: look for another
                        continue
                    killed.append(p.info["pid"])
                    return
            time.sleep(0.1)

    killer = threading.Thread(target=kill_one)
    killer.start()
    out = tmp_path / "r.csv"
    code, _ = invoke("score", images, "-o", out, "-q", "--engine", "ray")
    killer.join()
    assert killed, "no Ray worker process was found to kill"
    df = pd.read_csv(out)
    assert code == 3 and len(df) == n_ok + 1 and df["image"].is_unique
    assert (df["status"] == "ok").sum() == n_ok
    print(f"killed worker {killed}", file=sys.stderr)


async def _poisoned(rt: Any) -> Any:
    """`score`'s process, except that a worker given ``poison.png`` dies (as on a crash in
    a decoder)."""
    scorer = rt.scorer(rt.score_cards(False))

    async def process(pair: Any) -> Any:
        if pair.job.name.endswith("poison.png"):
            os._exit(1)
        return await scorer(pair)

    return process


def test_an_image_that_kills_its_workers_gets_an_error_row(tmp_path: Path, images: Path) -> None:
    """Ray retries a dead worker's batch without limit; the driver counts the attempts per
    image, so an image that kills every worker it is given ends as one error row and the
    run finishes, with every other image's row."""
    import asyncio

    from ray import cloudpickle

    from agentiqa_cli.config import Settings
    from agentiqa_cli.io.trace import TraceWriter
    from agentiqa_cli.ray_engine import MAX_DEATHS
    from agentiqa_cli.wiring import build_runtime

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers need _poisoned
    save_rgb(images / "poison.png", natural_like(96, 128, seed=99))

    async def go() -> Any:
        async with build_runtime(Settings(engine="ray")) as rt:
            jobs = rt.jobs([str(images)], None)
            local = await _poisoned(rt)  # the local engine's process: unused on Ray
            return await rt.run(jobs, local, command="score", trace=TraceWriter(None),
                                remote=_poisoned)  # fmt: skip

    summary = asyncio.run(go())
    rows = {Path(r.image).name: r for r in summary.results}
    assert len(summary.results) == len(rows) == 8  # 6 photos, broken.jpg, poison.png
    poison = rows["poison.png"]
    assert poison.status == "error" and f"died {MAX_DEATHS} times" in poison.error
    assert not poison.transient and poison.key
    assert rows["broken.jpg"].status == "error"
    assert all(rows[f"{i}.png"].status == "ok" for i in range(6))
