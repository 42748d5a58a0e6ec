"""`make bench`: throughput and cost figures, each against the obvious alternative.

Not a test: it prints numbers. Sections (each says what it compares):
  1. score, full-reference psnr+ssim+gmsd on 200 generated 512×384 pairs, against pyiqa's own
     command line on the same folders in the same run, and the scores checked against pyiqa's
     (its means over all pairs, per image on a subset);
  2. score with the default no-reference set on the same 200 images;
  3. the built-in signal detectors on one 1024×768 image, per detector;
  4. the agent with an instant fake VLM on 100 images and one query: VLM calls and tokens
     per image, and the agent's overhead per image on top of the tools it ran (wall and CPU);
  5. `assess` against the tiny vLLM server (when .venv-vllm exists): images/s at concurrency
     1 vs 8 on the same images (1 runs the first and last half, 8 all of them in between, so
     a drift of the shared machine's load falls on both), calls and tokens per image;
  6. eval-bench synth on the photos bundled with scikit-image: the rules agent against
     every weight-free no-reference tool;
  7. evaluate (issue 12): the few-sample verdict against the whole folder's tier on 300-image
     collections of known quality, 10 seeds each: agreement, samples and time used;
  8. one process: `score` on one image with the default set (wall, CPU, peak RSS) against a
     bare `import torch, pyiqa`, and peak RSS on a 16 MP photo against its float pixels;
  9. `--engine ray` on a local Ray instance with 2 CPUs against the local engine, `score` with
     the default set on the same 200 images, each 5 times: throughput after start-up, Ray's
     start-up apart, and the rows compared.
 10. `report` on a 10,000-row results CSV (10,000 small generated images): building it
     (every image measured), writing the page, its size, and Chromium's time to load it
     (to the first frame after the load event), to sort the table of every image by score
     and to filter it by a finding.
 11. the experience pool (docs/experience.md): a pool built from the photos bundled with
     scikit-image, then `assess` (rules backend) on the realset's synthetic series (other
     photos; `make realset`) without and with it: tools per image, `select` calls and all
     VLM calls per image, and -SRCC(score, level) (scripts/experience_check.py).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / ".cache" / "bench"
BIN = Path(sys.executable).parent


def header(title: str) -> None:
    print(f"\n== {title}", flush=True)


# the steps whose command failed: `make bench` prints every section, then exits 1 if any did
FAILED: list[str] = []


def failed(what: str, r: subprocess.CompletedProcess[str]) -> None:
    """Report a failed command (the end of its stderr) and remember it for the exit code."""
    FAILED.append(what)
    print(f"{what} failed (exit {r.returncode}):\n{r.stderr[-2000:]}")


def timed(cmd: list[str], **kw: object) -> tuple[float, subprocess.CompletedProcess[str]]:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)  # type: ignore[call-overload]
    return time.perf_counter() - t0, r


def measure(cmd: list[str], stdout: Path | None = None) -> tuple[float, float, float, int]:
    """(wall s, CPU s, peak RSS MiB, exit code) of one child process, measured by a small
    parent of its own (RUSAGE_CHILDREN covers exactly that child); its stdout goes to
    ``stdout`` if given."""
    probe = (
        "import resource, subprocess, sys, time\n"
        "out = open(sys.argv[1], 'wb')\n"
        "t = time.perf_counter(); r = subprocess.run(sys.argv[2:], stdout=out, stderr=subprocess.DEVNULL)\n"
        "w = time.perf_counter() - t; u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "print(w, u.ru_utime + u.ru_stime, u.ru_maxrss, r.returncode)"
    )
    sink = str(stdout) if stdout is not None else os.devnull
    out = subprocess.run([sys.executable, "-c", probe, sink, *cmd], capture_output=True, text=True)
    wall, cpu, rss_kib, code = out.stdout.split()
    return float(wall), float(cpu), int(rss_kib) / 1024, int(code)


def median_runs(cmd: list[str], n: int) -> tuple[float, float, float, int]:
    """Median wall and CPU, largest peak RSS and the last exit code over ``n`` runs."""
    runs = [measure(cmd) for _ in range(n)]
    return (float(np.median([r[0] for r in runs])), float(np.median([r[1] for r in runs])),
            max(r[2] for r in runs), runs[-1][3])  # fmt: skip


def make_pairs(n: int, size: tuple[int, int]) -> tuple[Path, Path]:
    """n reference/distorted pairs (w×h) cut from the bundled photos, distorted at random."""
    from agentiqa_cli.bench.synth import bundled_photos
    from agentiqa_cli.imaging.distort import KINDS

    ref_dir, dist_dir = WORK / "ref", WORK / "dist"
    if ref_dir.exists() and len(list(ref_dir.glob("*.png"))) == n:
        return ref_dir, dist_dir
    shutil.rmtree(WORK, ignore_errors=True)
    ref_dir.mkdir(parents=True)
    dist_dir.mkdir(parents=True)
    from PIL import Image

    rng = np.random.default_rng(0)
    photos = bundled_photos()
    kinds = sorted(KINDS)
    w, h = size
    for i in range(n):
        photo = photos[i % len(photos)]
        ph, pw = photo.shape[:2]
        scale = max(w / pw, h / ph) * rng.uniform(1.0, 1.6)
        im = Image.fromarray((photo * 255).astype(np.uint8)).resize(
            (max(w, int(pw * scale)), max(h, int(ph * scale))), Image.Resampling.BICUBIC
        )
        x = int(rng.integers(0, im.width - w + 1))
        y = int(rng.integers(0, im.height - h + 1))
        ref = np.asarray(im.crop((x, y, x + w, y + h)), dtype=np.float32) / 255.0
        kind = kinds[i % len(kinds)]
        dist = KINDS[kind](ref, int(rng.integers(1, 6)), np.random.default_rng(i))
        Image.fromarray((ref * 255).round().astype(np.uint8)).save(ref_dir / f"{i:03d}.png")
        Image.fromarray((np.clip(dist, 0, 1) * 255).round().astype(np.uint8)).save(
            dist_dir / f"{i:03d}.png"
        )
    return ref_dir, dist_dir


def bench_score(n: int) -> None:
    ref, dist = make_pairs(n, (512, 384))
    agentiqa = str(BIN / "agentiqa")
    header(f"1. score, FR psnr+ssim+gmsd, {n} pairs of 512×384 (end to end, incl. start-up)")
    fr_csv = WORK / "fr.csv"
    fr_csv.unlink(missing_ok=True)
    ours = [agentiqa, "score", str(dist), "--ref", str(ref), "--tools", "psnr,ssim,gmsd",
            "-o", str(fr_csv), "-q", "-j", "2"]  # fmt: skip
    t_ours, c_ours, m_ours, code = measure(ours)
    printed = WORK / "pyiqa-fr.txt"
    t_pyiqa, c_pyiqa, m_pyiqa, code2 = measure(
        [str(BIN / "pyiqa"), "psnr", "ssim", "gmsd", "-t", str(dist), "-r", str(ref), "-v"],
        printed,
    )
    print(
        f"agentiqa score : {t_ours:7.2f} s wall {c_ours:7.2f} s CPU {m_ours:5.0f} MiB  "
        f"{n / t_ours:6.1f} images/s  (CSV + JSONL trace + 1-5 normalization)"
        + ("" if code == 0 else f"  exit {code}")
    )
    print(
        f"pyiqa CLI      : {t_pyiqa:7.2f} s wall {c_pyiqa:7.2f} s CPU {m_pyiqa:5.0f} MiB  "
        f"{n / t_pyiqa:6.1f} images/s  (prints raw scores)"
        + ("" if code2 == 0 else f"  FAILED (exit {code2})")
    )
    print(f"speed-up       : {t_pyiqa / t_ours:.2f}× wall, {c_pyiqa / c_ours:.2f}× CPU "
          "(agentiqa over pyiqa's CLI; goal ≥ 5×)")  # fmt: skip
    if code2 == 0:
        check_same_scores(fr_csv, printed.read_text())

    from agentiqa_cli.resources import default_cards_dir
    from agentiqa_cli.tools.cards import load_cards

    # the default FR set (`score --ref` without --tools): psnr, ssim, gmsd and our own detail
    shipped = load_cards(default_cards_dir())
    default_fr = [c.name for c in shipped.default_set(True)]
    fr_default = [agentiqa, "score", str(dist), "--ref", str(ref),
                  "-o", str(WORK / "fr-default.csv"), "-q", "-j", "2"]  # fmt: skip
    t_fr, c_fr, m_fr, code3 = measure(fr_default)
    print(
        f"default FR set : {t_fr:7.2f} s wall {c_fr:7.2f} s CPU {m_fr:5.0f} MiB  "
        f"{n / t_fr:6.1f} images/s  ({', '.join(default_fr)})"
        + ("" if code3 in (0, 1) else f"  exit {code3}")
    )

    default_nr = [c.name for c in shipped.default_set(False)]
    header(f"2. score, default no-reference set ({', '.join(default_nr)}), same {n} images")
    t_nr, r = timed([agentiqa, "score", str(dist), "-o", str(WORK / "nr.csv"), "-q", "-j", "2"])
    if r.returncode not in (0, 1):
        failed("section 2's score", r)
    print(f"agentiqa score : {t_nr:7.2f} s  {n / t_nr:6.1f} images/s")


def check_same_scores(fr_csv: Path, pyiqa_out: str) -> None:
    """Our raw scores against the per-image scores pyiqa's CLI printed (``-v``), every pair;
    the CSV holds 5 decimals."""
    import ast
    import re

    import pandas as pd

    text = pyiqa_out[pyiqa_out.find("{") :]  # after its log lines
    try:
        theirs = ast.literal_eval(re.sub(r"np\.float64\(([^)]*)\)", r"\1", text))
    except (ValueError, SyntaxError):
        print("scores         : could not read pyiqa's output")
        return
    ours = pd.read_csv(fr_csv)
    worst, compared = 0.0, 0
    for name in ("psnr", "ssim", "gmsd"):
        by_pair = {tuple(k.split(" | ")): v for k, v in theirs[name].items() if k != "mean"}
        for _, row in ours.iterrows():
            key = (
                str(Path(str(row["image"])).resolve()),
                str(Path(str(row["reference"])).resolve()),
            )
            if key in by_pair:
                worst = max(worst, abs(by_pair[key] - float(row[f"{name}_raw"])))
                compared += 1
    verdict = "same" if compared and worst < 1e-4 else "DIFFERENT"
    print(f"scores         : {verdict}: max |Δ| {worst:.1e} over {compared} scores "
          "(psnr, ssim, gmsd of every pair; CSV rounding 5e-6; goal < 1e-4)")  # fmt: skip


def bench_process() -> None:
    """Start-up and memory of one `score` process, each against the obvious floor."""
    from PIL import Image

    from agentiqa_cli.bench.synth import bundled_photos

    header("8. one process: default `score` on one image; peak memory on a 16 MP photo")
    one, big = WORK / "one" / "astronaut.png", WORK / "big" / "astronaut-16mp.jpg"
    photo = Image.fromarray((bundled_photos(["astronaut"])[0] * 255).round().astype(np.uint8))
    for path, size in ((one, (512, 512)), (big, (4896, 3264))):
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            photo.resize(size, Image.Resampling.BICUBIC).save(path, quality=92)
    agentiqa = str(BIN / "agentiqa")
    n = 5
    ours = median_runs([agentiqa, "score", str(one), "-o", str(WORK / "one.csv"), "-q"], n)
    floor = median_runs([sys.executable, "-c", "import torch, pyiqa"], n)
    bare = median_runs([sys.executable, "-c", "pass"], n)
    print(f"{'(medians of ' + str(n) + ' runs)':32s} {'wall':>8s} {'CPU':>8s} {'peak RSS':>12s}")
    for label, (w, c, m, _) in (("agentiqa score, one image", ours),
                                ("python -c 'import torch, pyiqa'", floor),
                                ("python -c pass", bare)):  # fmt: skip
        print(f"{label:32s} {w:7.2f}s {c:7.2f}s {m:8.0f} MiB")
    print(f"score on one image: {floor[0] / ours[0]:.1f}× less wall time and {floor[2] / ours[2]:.1f}× "
          "less memory than importing torch and pyiqa alone (goal < 1 s, < 250 MiB)")  # fmt: skip
    w, c, m, code = median_runs([agentiqa, "score", str(big), "-o", str(WORK / "big.csv"), "-q"], 3)
    floats = 4896 * 3264 * 3 * 4 / 2**20
    print(f"16 MP (4896×3264 JPEG), default set: peak {m:.0f} MiB, {w:.2f} s wall, exit {code} "
          f"(its float RGB pixels alone: {floats:.0f} MiB; goal < 600 MiB)")  # fmt: skip


def bench_detectors() -> None:
    from PIL import Image

    from agentiqa_cli.batch import keep_freed_memory
    from agentiqa_cli.bench.synth import bundled_photos
    from agentiqa_cli.imaging.load import LoadedImage, load_image
    from agentiqa_cli.tools.builtin import DETECTORS

    header("3. built-in signal detectors on one 1024×768 image (one core, median of 20 runs)")
    photo = bundled_photos()[0]
    im = Image.fromarray((photo * 255).astype(np.uint8)).resize((1024, 768))
    px = np.asarray(im, dtype=np.float32) / 255.0
    # as `score` and `assess` read an 8-bit file: its pixels kept as bytes, the detectors'
    # planes made from them (decoding the file is not counted)
    png = Path(tempfile.mkdtemp(prefix="agentiqa-bench-")) / "photo.png"
    im.save(png)

    def loaded() -> LoadedImage:
        return load_image(png)

    def floats() -> LoadedImage:
        return LoadedImage(path=Path("x.png"), pixels=px, sha256="x")

    def together(make: Callable[[], LoadedImage]) -> float:
        """All together on one image, sharing its cached planes (ms); fresh caches each run."""
        times = []
        for _ in range(20):
            img = make()
            t0 = time.perf_counter()
            for fn in DETECTORS.values():
                fn(img)
            times.append(time.perf_counter() - t0)
        return 1000 * float(np.median(times))

    default_heap = together(loaded)
    keep_freed_memory()  # as a batch runs them: freed image-sized blocks are reused
    total = 0.0
    for name, fn in DETECTORS.items():
        times = []
        for _ in range(20):
            img = loaded()
            t0 = time.perf_counter()
            fn(img)
            times.append(time.perf_counter() - t0)
        ms = 1000 * float(np.median(times))
        total += ms
        print(f"{name:16s} {ms:7.2f} ms")
    print(f"{'all together':16s} {together(loaded):7.2f} ms  (target < 50 ms; sum of separate runs "
          f"{total:.1f} ms; {default_heap:.1f} ms with glibc's default heap, as before a batch)")  # fmt: skip
    print(f"{'from float pixels':16s} {together(floats):7.2f} ms  (an image handed over as floats, "
          "the figure this section reported until 2026-11-28)")  # fmt: skip
    shutil.rmtree(png.parent, ignore_errors=True)


def fake_vlm() -> object:
    """Answers every role instantly with a valid reply shaped by the request."""
    from agentiqa_cli.vlm.base import VLMReply, VLMRequest
    from agentiqa_cli.vlm.fake import ScriptedVLM

    def reply(req: VLMRequest) -> object:
        if req.role == "planner":
            return {"query_type": "IQA", "query_scope": "Global", "distortion_source": "inferred",
                    "distortions": None, "reference_mode": "No-Reference", "required_tools": None,
                    "plan": {"distortion_detection": True, "distortion_analysis": True,
                             "tool_selection": True, "tool_execute": True}}  # fmt: skip
        if req.role == "examine":
            return {"distortion_analysis": {"Global": [
                {"type": "Noise", "severity": "slight", "explanation": "fine grain"}]}}  # fmt: skip
        if req.role == "select":
            cands = req.inputs.candidates  # type: ignore[union-attr]
            return {"selected_tools": {"Global": {"Noise": cands[0].name}}}
        text = '{"level":"good","answer":"good","reasoning":"ok","sufficient":true}'
        toks = ['{"', "level", '":"', "good", '","', "answer"]
        top = [{}, {}, {}, {"good": -0.1, "fair": -2.4, "excellent": -3.0}, {}, {}]
        return VLMReply(text=text, tokens=toks, top_logprobs=top, finish_reason="stop")

    return ScriptedVLM(default=reply)


def bench_agent(n: int) -> None:
    from agentiqa_cli.config import Settings
    from agentiqa_cli.imaging.discover import discover, pair
    from agentiqa_cli.io.trace import TraceWriter
    from agentiqa_cli.wiring import build_runtime

    _, dist = make_pairs(200, (512, 384))
    jobs = pair(discover([str(dist)]), None)[:n]
    header(f"4. agent with an instant fake VLM, {len(jobs)} images, one query")
    vlm = fake_vlm()
    trace = TraceWriter(None)

    async def go() -> tuple[object, list[tuple[float, float]], list[tuple[float, float]]]:
        async with build_runtime(Settings(concurrency=4), vlm=vlm) as rt:  # type: ignore[arg-type]
            # warm up metric objects so both runs pay the same
            await rt.run(jobs, await rt.agent(), command="bench", trace=trace)
            agent_t, tools_t = [], []
            for _ in range(3):  # alternating, medians: the machine is shared
                vlm.requests.clear()  # type: ignore[attr-defined]
                agent = await rt.agent()  # fresh caches: the plan and selection count again
                t0, c0 = time.perf_counter(), time.process_time()
                summary = await rt.run(jobs, agent, command="bench", trace=trace)
                agent_t.append((time.perf_counter() - t0, time.process_time() - c0))
                tools_run = sorted(
                    {t.tool for r in summary.results for t in r.tools}
                    | {c.name for c in agent.evidence_cards}
                )
                scorer = rt.scorer(rt.cards.resolve(tools_run))
                t0, c0 = time.perf_counter(), time.process_time()
                await rt.run(jobs, scorer, command="score", trace=trace)
                tools_t.append((time.perf_counter() - t0, time.process_time() - c0))
            return summary, agent_t, tools_t

    summary, agent_t, tools_t = asyncio.run(go())
    results = summary.results  # type: ignore[attr-defined]
    calls = sum(r.usage.calls for r in results)
    toks = sum(r.usage.prompt_tokens + r.usage.completion_tokens for r in results)
    by_role: dict[str, int] = {}
    for req in vlm.requests:  # type: ignore[attr-defined]
        by_role[req.role] = by_role.get(req.role, 0) + 1
    print(
        f"VLM calls per image : {calls / len(results):.2f}  ({', '.join(f'{k} {v}' for k, v in by_role.items())}; the paper's flow makes ≥ 5)"
    )
    print(f"tokens per image    : {toks / len(results):.0f} (fake VLM: ~4 characters per token)")
    med = [float(np.median([t[i] for t in ts])) for ts in (agent_t, tools_t) for i in (0, 1)]
    print(f"agent               : {med[0]:.2f} s wall, {med[1]:.2f} s CPU; the same tools alone: "
          f"{med[2]:.2f} s wall, {med[3]:.2f} s CPU (medians of 3)")  # fmt: skip
    print(
        f"overhead per image  : {1000 * (med[0] - med[2]) / len(results):.2f} ms wall, "
        f"{1000 * (med[1] - med[3]) / len(results):.2f} ms CPU (target < 5 ms)"
    )


def bench_vllm(n: int) -> None:
    sys.path.insert(0, str(ROOT))
    try:
        from tests.vllm_server import VLLMServer, missing
    except ImportError as e:
        header(f"5. vLLM server: skipped ({e})")
        return
    why = missing()
    if why:
        header(f"5. vLLM server: skipped ({why}; run `make vllm-env`)")
        return
    from agentiqa_cli.imaging.discover import discover, pair

    _, dist = make_pairs(200, (512, 384))
    jobs = pair(discover([str(dist)]), None)[:n]
    header(f"5. assess against the tiny vLLM server on 127.0.0.1, {len(jobs)} images at concurrency "
           "1 and 8 (1: first and last half, 8 in between, so a shared machine's load drifts on both)")  # fmt: skip
    half = len(jobs) // 2
    with VLLMServer() as server:
        summaries, times = asyncio.run(_assess_interleaved(server.base_url, jobs, half))
    rates = {c: len(jobs) / times[c] for c in (1, 8)}
    for conc in (1, 8):
        res = summaries[conc]
        ok = [r for r in res if r.status == "ok"]  # type: ignore[attr-defined]
        toks = sum(r.usage.prompt_tokens + r.usage.completion_tokens for r in res) / max(
            1, len(res)
        )  # type: ignore[attr-defined]
        calls = sum(r.usage.calls for r in res) / max(1, len(res))  # type: ignore[attr-defined]
        print(f"concurrency {conc}: {rates[conc]:6.3f} images/s ({times[conc]:.0f} s), {calls:.2f} VLM calls and "
              f"{toks:.0f} tokens per image, {len(ok)}/{len(res)} ok")  # fmt: skip
    print(f"concurrency 8 vs 1: {rates[8] / rates[1]:.2f}× images/s (goal ≥ 3×)")


async def _assess_interleaved(
    url: str, jobs: list[object], half: int
) -> tuple[dict[int, list[object]], dict[int, float]]:
    """The same images at concurrency 1 (one agent: one plan for all its images) and 8."""
    from agentiqa_cli.config import Settings
    from agentiqa_cli.io.trace import TraceWriter
    from agentiqa_cli.wiring import build_runtime

    def settings(conc: int) -> Settings:
        return Settings(vlm=url, model="tiny-qwen2vl", concurrency=conc, vlm_fallback="none",
                        timeout=600)  # fmt: skip

    results: dict[int, list[object]] = {1: [], 8: []}
    times = {1: 0.0, 8: 0.0}
    async with build_runtime(settings(1)) as one, build_runtime(settings(8)) as eight:
        agents = {1: await one.agent(), 8: await eight.agent()}
        for conc, part, rt in ((1, jobs[:half], one), (8, jobs, eight), (1, jobs[half:], one)):
            t0 = time.perf_counter()
            summary = await rt.run(part, agents[conc], command="assess", trace=TraceWriter(None))  # type: ignore[arg-type]
            times[conc] += time.perf_counter() - t0
            results[conc] += summary.results
    return results, times


def bench_synth() -> None:
    header(
        "6. eval-bench synth on the photos bundled with scikit-image (rules agent vs single NR tools)"
    )
    from agentiqa_cli.bench.synth import write_bundled_photos

    clean = WORK / "clean"
    write_bundled_photos(clean)
    from agentiqa_cli.resources import default_cards_dir
    from agentiqa_cli.tools.cards import load_cards

    weight_free = [c.name for c in load_cards(default_cards_dir()).weight_free("NR")]
    t, r = timed([str(BIN / "agentiqa"), "eval-bench", "synth", str(clean), "--tools", ",".join(weight_free),
                  "--out-dir", str(WORK / "synth")], env={**os.environ, "COLUMNS": "200"})  # fmt: skip
    print(r.stdout)
    if r.returncode != 0:
        failed("section 6's eval-bench", r)
    print(f"({t:.0f} s)")


def bench_evaluate(n: int = 300, seeds: int = 10) -> None:
    from agentiqa_cli.bench.evaluate_bench import COLLECTIONS, bench_collection
    from agentiqa_cli.config import Settings
    from agentiqa_cli.wiring import build_runtime

    header(f"7. evaluate: sampled verdict vs the whole folder's tier ({n} images, {seeds} seeds; "
           "rules agent, --fusion min)")  # fmt: skip

    async def go() -> list[object]:
        async with build_runtime(Settings(fusion="min", concurrency=2)) as rt:
            return [await bench_collection(rt, name, WORK / "evaluate", n, range(seeds))
                    for name in COLLECTIONS]  # fmt: skip

    print(f"{'collection':12s} {'full folder (wall/CPU)':>28s} {'same':>5s} {'±1':>5s} {'SRS':>4s} "
          f"{'assessed':>11s} {'screened':>8s} {'wall time':>14s} {'CPU time':>14s} {'settled':>7s}  lowest named")  # fmt: skip
    for r in asyncio.run(go()):
        rep = r  # type: ignore[assignment]
        named: dict[str, int] = {}
        for w in rep.lowest:
            named[str(w)] = named.get(str(w), 0) + 1
        k = len(rep.verdicts)
        share = np.mean(rep.samples) / rep.images
        t, c = np.mean(rep.seconds), np.mean(rep.cpu)
        lowest = ", ".join(f"{n} {c}/{k}" for n, c in sorted(named.items(), key=lambda x: -x[1]))
        print(
            f"{rep.name:12s} {rep.full_tier:>9s} {rep.full_mean:4.2f} {rep.full_seconds:5.1f}s/{rep.full_cpu:.1f}s "
            f"{rep.agree:>2d}/{k} {rep.within_one:>2d}/{k} {rep.srs_agree:4.0%} "
            f"{np.mean(rep.samples):4.1f} ({share:3.0%}) {np.mean(rep.screened):8.1f} "
            f"{t:5.2f}s ({t / rep.full_seconds:3.0%}) {c:5.2f}s ({c / rep.full_cpu:3.0%}) "
            f"{sum(rep.settled):>4d}/{k}  {lowest}"
        )
        spread = ", ".join(f"{v} {m:.2f}" for v, m in zip(rep.verdicts, rep.means, strict=True))
        print(f"{'':12s} sampled: {spread}")
        print(f"{'':12s} Low-or-worse share: folder {rep.full_low:.0%}, sampled "
              f"{np.mean(rep.low_shares):.0%} (within 10 points: {rep.mix_close}/{k}); "
              f"summary names a mix: {sum(rep.mixed_named)}/{k}")  # fmt: skip
    print("same/±1: sampled overall tier equal to / within one of the whole folder's; SRS: how often "
          "a plain random sample of the same size lands in the folder's tier; settled: runs whose "
          "95% interval lies inside one tier (the others say it spans two)")  # fmt: skip


def bench_ray(n: int) -> None:
    """Ray's start-up (ray.init, then its workers building their runtimes before the first
    row) is reported apart from its throughput after start-up, measured as the local
    engine's is: rows per second between the first and the last fifth of the rows (steady
    state), and from the first row to the last (with the drain)."""
    try:
        import ray
    except ImportError:
        header("9. Ray engine: skipped (pip install 'agentiqa[ray]')")
        return
    import functools

    from agentiqa_cli.cli.run import scorer_of
    from agentiqa_cli.config import Settings
    from agentiqa_cli.imaging.discover import discover, pair
    from agentiqa_cli.wiring import build_runtime

    _, dist = make_pairs(200, (512, 384))
    # each image 5 times: Ray's rows come back a batch (up to 32) at a time, so a steady rate
    # needs many batches per worker
    jobs = pair(discover([str(dist)]), None)[:n] * 5
    header(f"9. --engine ray (local instance, 2 CPUs) vs the local engine: score, default set, "
           f"{len(jobs)} images ({n} files, each 5 times)")  # fmt: skip
    t0 = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    t_init = time.perf_counter() - t0

    async def go(engine: str) -> tuple[list[object], float, list[float]]:
        stamps: list[float] = []
        async with build_runtime(Settings(engine=engine)) as rt:  # type: ignore[arg-type]
            cards = rt.score_cards(False)
            names = tuple(c.name for c in cards)
            remote = functools.partial(scorer_of, names)
            # the CSV and the trace, as `score` writes them
            with rt.outputs(WORK / f"ray-{engine}.csv", None, False, "score", list(names),
                            force=True) as (writer, tracer):  # fmt: skip
                t0 = time.perf_counter()
                summary = await rt.run(jobs, rt.scorer(cards), command="score", trace=tracer,
                                       writer=writer, remote=remote,
                                       on_result=lambda r: stamps.append(time.perf_counter()))  # fmt: skip
        return summary.results, t0, stamps

    try:
        figures, rows, counts = {}, {}, {}
        for engine in ("local", "ray"):
            results, start, stamps = asyncio.run(go(engine))
            # steady state: between the rows at 1/5 and 4/5 of the run, past the start-up
            # and before the drain (Ray's last batches end with one worker idle)
            a, b = len(stamps) // 5, 4 * len(stamps) // 5
            steady = (b - a) / (stamps[b] - stamps[a])
            after_first = (len(stamps) - 1) / (stamps[-1] - stamps[0])
            figures[engine] = (steady, after_first, stamps[0] - start, stamps[-1] - start)
            counts[engine] = len(results)
            rows[engine] = {r.image: (r.key, r.status, r.score, r.level,  # type: ignore[attr-defined]
                                      [(t.tool, t.raw, t.norm) for t in r.tools])  # type: ignore[attr-defined]
                            for r in results}  # fmt: skip
    finally:
        ray.shutdown()
    for engine, (steady, after_first, first, total) in figures.items():
        print(f"{engine:6s}: {steady:6.1f} images/s steady ({after_first:5.1f} from the first row to "
              f"the last); first row after {first:5.2f} s, all {len(jobs)} after {total:5.2f} s")  # fmt: skip
    same = rows["local"] == rows["ray"] and counts["local"] == counts["ray"] == len(jobs)
    print(f"Ray start-up: ray.init {t_init:.2f} s, then {figures['ray'][2]:.2f} s to the first row "
          "(its workers start and build their runtimes)")  # fmt: skip
    print(f"Ray / local throughput after start-up: {figures['ray'][0] / figures['local'][0]:.2f}× "
          f"steady, {figures['ray'][1] / figures['local'][1]:.2f}× from the first row to the last "
          f"(goal ≥ 0.8×); rows {'identical' if same else 'DIFFERENT'} (key, status, score, level, "
          "every tool's raw and 1-5 score)")  # fmt: skip


def make_report_set(n: int) -> Path:
    """``n`` small distinct JPEGs and a results CSV over them, as `assess --zoom on` writes
    it (scores of every level, scoped findings with boxes, some error rows)."""
    import csv

    from PIL import Image

    folder = WORK / f"report-{n}"
    csv_path = folder / "results.csv"
    if csv_path.is_file():
        return csv_path
    rng = np.random.default_rng(0)
    (folder / "img").mkdir(parents=True, exist_ok=True)
    cats = ["blurs", "noise", "compression", "contrast", "color_distortions"]
    with open(csv_path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["image", "status", "error", "score", "level", "answer", "distortions"])
        for i in range(n):
            name = f"img/{i:05d}.jpg"
            small = rng.integers(0, 256, (9, 12, 3), dtype=np.uint8)
            Image.fromarray(small).resize((128, 96), Image.Resampling.BICUBIC).save(
                folder / name, quality=85
            )
            if i % 97 == 0:
                w.writerow([name, "error", f"{name}: corrupt or truncated image", "", "", "", ""])
                continue
            score = float(rng.uniform(1, 5))
            found = ";".join(
                f"{c}:moderate" + (f"@crop1 [0.1, 0.2, 0.5, {0.6 + k / 10:.1f}]" if k else "")
                for k, c in enumerate(cats)
                if rng.random() < 0.2
            )
            w.writerow([name, "ok", "", f"{score:.3f}", "", f"answer {i}", found])
    return csv_path


def bench_report(n: int = 10_000) -> None:
    header(f"10. report on {n:,} rows: build, page size, Chromium load / sort / filter")
    from agentiqa_cli.report import build_report, render_html
    from agentiqa_cli.report.html import PAGE_ROWS

    csv_path = make_report_set(n)
    t0 = time.perf_counter()
    report = build_report(csv_path, workers=2)
    t_build = time.perf_counter() - t0
    page = csv_path.with_name("report.html")
    t0 = time.perf_counter()
    page.write_text(render_html(report, page=page), encoding="utf-8")
    t_html = time.perf_counter() - t0
    size = page.stat().st_size
    print(f"build (measure {n:,} images, 2 workers): {t_build:6.1f} s; page written in "
          f"{t_html:.2f} s: {size / 2**20:.1f} MiB ({size / n / 1024:.1f} KiB per row; the "
          f"script shows {PAGE_ROWS} rows a page)")  # fmt: skip
    chromium = os.environ.get("AGENTIQA_CHROMIUM") or shutil.which("chromium")
    if not chromium:
        print("Chromium: not installed (make browser); load time not measured")
        return
    from playwright.sync_api import sync_playwright

    loads, sorts, filters = [], [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            for _ in range(3):
                tab = browser.new_page(viewport={"width": 1280, "height": 900})
                t0 = time.perf_counter()
                tab.goto(page.as_uri(), wait_until="load")
                tab.evaluate("() => new Promise(r => requestAnimationFrame(() => r(0)))")
                loads.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                tab.click("#images [data-sort=score] button")
                tab.evaluate("() => new Promise(r => requestAnimationFrame(() => r(0)))")
                sorts.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                tab.select_option("#finding", "distortion:noise")
                tab.evaluate("() => new Promise(r => requestAnimationFrame(() => r(0)))")
                filters.append(time.perf_counter() - t0)
                tab.close()
        finally:
            browser.close()
    med = statistics.median
    print(f"Chromium (headless, median of 3): load to first frame {med(loads):.2f} s, "
          f"sort by score {med(sorts):.2f} s, filter by a finding {med(filters):.2f} s "
          "(goal: load < 3 s)")  # fmt: skip


def bench_experience(contents: int = 29, kinds: str = "blur,noise,jpeg,darken,contrast") -> None:
    header("11. the experience pool: assess without and with it on the same images")
    manifest = ROOT / ".cache" / "realset" / "synth" / "manifest.csv"
    if not manifest.is_file():
        print(f"(skipped: {manifest} missing; `make realset` makes it)")
        return
    from agentiqa_cli.bench.synth import write_bundled_photos
    from agentiqa_cli.resources import default_cards_dir
    from agentiqa_cli.tools.cards import load_cards

    clean = WORK / "clean"
    write_bundled_photos(clean)
    # a pool learnt with other tool cards is refused (experience/pool.check_cards compares
    # the cards' file hashes), so each set of cards (a retrained camera model's refitted
    # heads, a refitted curve) gets a pool of its own, named by those same hashes
    hashes = sorted(load_cards(default_cards_dir()).hashes.items())
    digest = hashlib.sha256(repr(hashes).encode()).hexdigest()
    pool = WORK / f"experience-{digest[:12]}.db"
    if not pool.is_file():  # minutes: every tool on five levels of every kind, per photo
        for old in WORK.glob("experience*.db"):
            old.unlink()
        t, r = timed([str(BIN / "agentiqa"), "experience", "build", str(clean), "-o", str(pool),
                      "--size", "256", "-q"])  # fmt: skip
        if r.returncode != 0:
            failed("section 11's experience build", r)
            return
        print(f"pool built from {clean} in {t:.0f} s")
    t, r = timed([sys.executable, str(ROOT / "scripts" / "experience_check.py"), str(pool),
                  "--manifest", str(manifest), "--contents", str(contents), "--kinds", kinds,
                  "--work", str(WORK / "experience")])  # fmt: skip
    if r.returncode == 0:
        print(r.stdout)
    else:
        failed("section 11's experience check", r)
    print(f"({t:.0f} s)")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--images", type=int, default=200)
    ap.add_argument("--only", nargs="*", type=int, help="section numbers to run")
    args = ap.parse_args()
    sections = {1: lambda: bench_score(args.images), 3: bench_detectors, 4: lambda: bench_agent(100),
                5: lambda: bench_vllm(8), 6: bench_synth, 7: bench_evaluate, 8: bench_process,
                9: lambda: bench_ray(args.images), 10: bench_report,
                11: bench_experience}  # fmt: skip
    for k, fn in sections.items():
        if args.only and k not in args.only and not (k == 1 and 2 in args.only):
            continue
        fn()
    if FAILED:
        sys.exit(f"\nmake bench: {len(FAILED)} step(s) failed: {', '.join(FAILED)}")


if __name__ == "__main__":
    main()
