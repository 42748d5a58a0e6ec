"""Does a few-sample verdict agree with the whole folder's? (issue 12's goals, `make bench`)

Collections of known quality are cut from the photos bundled with scikit-image (random
crops at random scales) and distorted at chosen levels: "high" (level 1 of the eight check
kinds), "moderate" (levels 2–3), "low" (level 4), and "mixed" (70% clean, 30% extreme
noise; its mean lands near the Moderate/High cut, so "mixed 60/40" shows a mix whose mean
does not). The whole folder is assessed once (its tier is the tier of its mean score); then
``evaluate`` runs with each seed, and its overall tier is compared with the folder's. Both go
through the same Runtime, agent, CSV and trace writing as the commands. For scale, the
report also gives how often a plain random sample of the same size, drawn from the folder's
own scores, lands in the folder's tier: the most any sampler of that size can be expected
to agree when the mean sits near a cut point.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean

import numpy as np
from PIL import Image

from agentiqa_cli.bench.synth import bundled_photos
from agentiqa_cli.categories import category_of_kind
from agentiqa_cli.evaluate.draws import Folder
from agentiqa_cli.evaluate.loop import EVAL_COLUMNS, EvalConfig, Evaluation
from agentiqa_cli.evaluate.records import Verdict
from agentiqa_cli.evaluate.tiers import Tiers
from agentiqa_cli.imaging.discover import Job
from agentiqa_cli.imaging.distort import CHECK_KINDS, distort
from agentiqa_cli.io.trace import TraceWriter
from agentiqa_cli.runtime import Runtime

SIZE = (384, 288)
COLLECTIONS: dict[str, str] = {
    "high": "level 1 of the 8 check kinds",
    "moderate": "levels 2-3 of the 8 check kinds",
    "low": "level 4 of the 8 check kinds",
    "mixed": "70% clean, 30% noise level 5",
    "mixed-60/40": "60% clean, 40% noise level 5",
}
LOW_TIERS = ("Very Low", "Low")
# the mixed collections hold noise level 5: its category should read lowest
EXPECTED_LOWEST = {"mixed": category_of_kind("noise"), "mixed-60/40": category_of_kind("noise")}


@dataclass
class CollectionReport:
    name: str
    description: str
    images: int
    full_mean: float
    full_tier: str
    full_seconds: float
    full_cpu: float  # CPU seconds of this process (less sensitive to other load than wall time)
    verdicts: list[str] = field(default_factory=list)  # the sampled overall tier per seed
    means: list[float] = field(default_factory=list)
    samples: list[int] = field(default_factory=list)
    screened: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    lowest: list[str | None] = field(default_factory=list)
    settled: list[bool] = field(default_factory=list)  # the interval lies inside one tier
    srs_agree: float = 0.0  # share of plain random samples of the same size in the tier
    full_low: float = 0.0  # share of the folder's images in Low or Very Low
    low_shares: list[float] = field(default_factory=list)  # the verdicts' estimates of it
    mixed_named: list[bool] = field(default_factory=list)  # the summary calls it a mix

    @property
    def agree(self) -> int:
        return sum(v == self.full_tier for v in self.verdicts)

    @property
    def within_one(self) -> int:
        t = Tiers()
        full = t.rank(self.full_tier)  # type: ignore[arg-type]
        return sum(abs(t.rank(v) - full) <= 1 for v in self.verdicts)  # type: ignore[arg-type]

    @property
    def mix_close(self) -> int:
        """Runs whose estimated Low-or-worse share is within 10 points of the folder's."""
        return sum(abs(x - self.full_low) <= 0.10 for x in self.low_shares)

    @property
    def expected_lowest(self) -> str | None:
        return EXPECTED_LOWEST.get(self.name)


def _crop(photo: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    w, h = SIZE
    ph, pw = photo.shape[:2]
    scale = max(w / pw, h / ph) * rng.uniform(1.0, 1.6)
    size = (max(w, int(pw * scale)), max(h, int(ph * scale)))
    im = Image.fromarray((photo * 255).astype(np.uint8)).resize(size, Image.Resampling.LANCZOS)
    x = int(rng.integers(0, im.width - w + 1))
    y = int(rng.integers(0, im.height - h + 1))
    return np.asarray(im.crop((x, y, x + w, y + h)), dtype=np.float32) / 255.0


def make_collection(out: Path, name: str, n: int = 300, seed: int = 0) -> Path:
    """``n`` images of the named collection in ``out`` (kept when already complete)."""
    if out.is_dir() and len(list(out.glob("*.png"))) == n:
        return out
    out.mkdir(parents=True, exist_ok=True)
    photos = bundled_photos()
    rng = np.random.default_rng(seed)
    for i in range(n):
        clean = _crop(photos[i % len(photos)], rng)
        kind = CHECK_KINDS[i % len(CHECK_KINDS)]
        local = np.random.default_rng([seed, i])
        if name == "high":
            img = distort(clean, kind, 1, local)
        elif name == "moderate":
            img = distort(clean, kind, 2 + i % 2, local)
        elif name == "low":
            img = distort(clean, kind, 4, local)
        elif name.startswith("mixed"):
            heavy = 4 if name == "mixed-60/40" else 3
            img = distort(clean, "noise", 5, local) if i % 10 < heavy else clean
        else:
            raise ValueError(f"unknown collection {name!r}")
        u8 = (np.clip(img, 0, 1) * 255).round().astype(np.uint8)
        Image.fromarray(u8).save(out / f"{i:03d}.png", compress_level=1)
    return out


async def full_folder(rt: Runtime, jobs: list[Job], work: Path) -> tuple[list[float], float]:
    """(scores, seconds) of `assess` on every image, CSV and trace written."""
    t0 = time.perf_counter()
    agent = await rt.agent()
    with rt.outputs(work / "full.csv", None, False, "assess") as (writer, tracer):
        summary = await rt.run(jobs, agent, command="assess", trace=tracer, writer=writer)
    scores = [r.score for r in summary.results if r.status == "ok" and r.score is not None]
    return scores, time.perf_counter() - t0


def srs_agreement(scores: list[float], size: int, draws: int = 4000) -> float:
    """How often the mean of ``size`` scores drawn without replacement has the tier of
    the mean of all."""
    t = Tiers()
    want = t.tier(fmean(scores))
    rng = np.random.default_rng(0)
    arr = np.asarray(scores)
    means = [arr[rng.choice(len(arr), size=size, replace=False)].mean() for _ in range(draws)]
    return float(np.mean([t.tier(float(m)) == want for m in means]))


async def sampled(rt: Runtime, jobs: list[Job], seed: int, work: Path) -> Verdict:
    ev = Evaluation(rt, EvalConfig(query=rt.settings.query, seed=seed), Folder(jobs))
    out = work / f"evaluate-{seed}.csv"
    with rt.outputs(out, None, False, "evaluate", extra_columns=EVAL_COLUMNS,
                    extra=ev.cells_of) as (writer, tracer):  # fmt: skip
        return await ev.run(writer, tracer)


async def bench_collection(
    rt: Runtime, name: str, work: Path, n: int = 300, seeds: Sequence[int] = range(10)
) -> CollectionReport:
    folder = make_collection(work / name / "images", name, n)
    jobs = rt.jobs([str(folder)], None)
    await rt.run(jobs[:4], await rt.agent(), command="assess", trace=TraceWriter(None))  # warm-up
    cpu0 = time.process_time()
    scores, secs = await full_folder(rt, jobs, work / name)
    mean = fmean(scores)
    report = CollectionReport(
        name, COLLECTIONS[name], len(jobs), mean, Tiers().tier(mean), secs,
        time.process_time() - cpu0,
    )  # fmt: skip
    for seed in seeds:
        cpu0 = time.process_time()
        v = await sampled(rt, jobs, seed, work / name)
        report.cpu.append(time.process_time() - cpu0)
        report.verdicts.append(v.overall.tier or "-")
        report.means.append(v.overall.mean or float("nan"))
        report.samples.append(v.assessed)
        report.screened.append(v.screened)
        report.seconds.append(v.seconds)
        report.lowest.append(v.worst)
        report.settled.append(v.overall.fits)
        report.low_shares.append(sum(t.share for t in v.mix if t.tier in LOW_TIERS))
        report.mixed_named.append("A mixed collection" in v.summary)
    report.srs_agree = srs_agreement(scores, round(fmean(report.samples)))
    report.full_low = float(np.mean([Tiers().tier(x) in LOW_TIERS for x in scores]))
    return report
