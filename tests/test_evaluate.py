"""`agentiqa evaluate` end to end: rounds, refusals, limits, resume, gates, generators."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from agentiqa_cli.bench.evaluate_bench import make_collection
from agentiqa_cli.config import Settings
from agentiqa_cli.errors import VLMError
from agentiqa_cli.evaluate.draws import Folder, GeneratorSource
from agentiqa_cli.evaluate.generator import Generator
from agentiqa_cli.evaluate.loop import EVAL_COLUMNS, EvalConfig, Evaluation
from agentiqa_cli.evaluate.records import RoundEvent, Verdict
from agentiqa_cli.evaluate.tiers import TIER_NAMES, Tiers
from agentiqa_cli.vlm.base import VLMRequest
from agentiqa_cli.vlm.fake import ScriptedVLM
from agentiqa_cli.wiring import build_runtime
from tests.conftest import natural_like, save_rgb
from tests.test_cli_score import invoke

RULES = ["--fusion", "min", "-q", "-j", "2"]


def make_folder(folder: Path, n: int, noisy: float = 0.3, sigma: float = 0.15) -> Path:
    """n small photos; a ``noisy`` share of them with heavy Gaussian noise."""
    rng = np.random.default_rng(0)
    for i in range(n):
        img = natural_like(72, 96, seed=i)
        if i < round(n * noisy):
            img = img + rng.normal(0, sigma, img.shape)
        save_rgb(folder / f"{i:03d}.png", img)
    return folder


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_folder(tmp_path_factory.mktemp("coll") / "imgs", 40)


def rows(csv: Path) -> pd.DataFrame:
    return pd.read_csv(csv, keep_default_na=False)


def events(trace: Path, step: str | None = None) -> list[dict[str, Any]]:
    lines = [json.loads(x) for x in trace.read_text().splitlines()]
    return [e for e in lines if step is None or e["step"] == step]


def run_json(*args: str | Path) -> tuple[int, dict[str, Any]]:
    code, out = invoke("evaluate", *args, *RULES, "--json")
    return code, json.loads(out)


# -- the rules version through the CLI ------------------------------------------------------------
def test_verdict_rows_and_trace(tmp_path: Path, folder: Path) -> None:
    out = tmp_path / "r.csv"
    code, payload = run_json(folder, "-o", out, "--max-samples", "18")
    v = Verdict.model_validate(payload["verdict"])
    assert code == 0 and payload["exit_code"] == 0
    df = rows(out)
    assert list(df.columns[-len(EVAL_COLUMNS) :]) == EVAL_COLUMNS
    assert len(df) == v.assessed <= 18 and df["image"].is_unique  # no image sampled twice
    assert set(df["sample"]) == {"hard", "random"}
    tiers = Tiers()
    assert all(tiers.tier(s) == t for s, t in zip(df["score"], df["tier"], strict=True))
    assert v.overall.tier == tiers.tier(v.overall.mean or 0) and v.overall.samples == len(df)
    assert v.population == 40 and v.rounds == df["round"].max()
    by_round = df.groupby("round")["sub_aspect"].nunique()
    assert (by_round == 1).all() and df.groupby("round")["sub_aspect"].first().is_unique
    assert df[df["round"] == 1]["sub_aspect"].iloc[0] == "Overall quality"
    trace = out.with_name("r.trace.jsonl")
    plans = events(trace, "eval_plan")
    assert len(plans) >= v.rounds and all(p["request"]["constrained"] for p in plans)
    sampled = [RoundEvent.model_validate(e["parsed"]) for e in events(trace, "eval_round")
               if e["parsed"]["phase"] == "sampled"]  # fmt: skip
    drawn = [s.image for ev in sampled if ev.draw for s in ev.draw.samples]
    assert sorted(drawn) == sorted(df["image"])
    probed = [e for e in v.sub_aspects if e.probed and e.mean is not None]
    assert probed and v.worst == min(probed, key=lambda e: e.mean or 0).sub_aspect


def test_the_verdict_reports_how_the_images_spread_over_the_tiers(tmp_path: Path) -> None:
    """70% clean photos, 30% with extreme noise: the mean's tier describes few of them, so
    the verdict estimates each tier's share (hard sampling reweighted) and says so."""
    folder = make_collection(tmp_path / "mixed", "mixed", n=30)
    code, payload = run_json(folder, "-o", tmp_path / "r.csv", "--max-samples", "18")
    v = Verdict.model_validate(payload["verdict"])
    assert code == 0 and [t.tier for t in v.mix] == list(TIER_NAMES)
    assert abs(sum(t.share for t in v.mix) - 1) < 1e-3
    assert all(0 <= t.lo <= t.share <= t.hi <= 1 for t in v.mix)
    full = tmp_path / "full.csv"
    assert invoke("assess", folder, "-o", full, *RULES)[0] == 0
    tiers = Tiers()
    truth = pd.Series([tiers.tier(s) for s in rows(full)["score"]]).value_counts(normalize=True)
    low = {"Very Low", "Low"}
    est_low = sum(t.share for t in v.mix if t.tier in low)
    true_low = float(sum(truth.get(t, 0.0) for t in low))
    assert 0.2 < true_low < 0.4  # the folder is a mix
    assert abs(est_low - true_low) < 0.2
    assert "A mixed collection:" in v.summary


def test_same_seed_same_samples_another_seed_others(tmp_path: Path, folder: Path) -> None:
    def sampled(seed: int, name: str) -> list[str]:
        out = tmp_path / f"{name}.csv"
        code, _ = run_json(folder, "-o", out, "--max-rounds", "2", "--seed", str(seed))
        assert code == 0
        return list(rows(out)["image"])

    a = sampled(1, "a")
    assert sorted(a) == sorted(sampled(1, "b"))
    assert sorted(a) != sorted(sampled(2, "c"))


def test_a_folder_smaller_than_n_is_assessed_whole_and_exactly(tmp_path: Path) -> None:
    small = make_folder(tmp_path / "small", 2, noisy=0.5)
    code, payload = run_json(small, "-o", tmp_path / "s.csv")
    v = Verdict.model_validate(payload["verdict"])
    assert code == 0 and v.rounds == 1 and v.assessed == 2
    assert v.overall.exact and v.overall.lo == v.overall.hi == v.overall.mean
    assert v.stop_reason == "every image of the folder was assessed"
    assert rows(tmp_path / "s.csv")["score"].mean() == pytest.approx(v.overall.mean, abs=1e-3)


def test_gates_on_the_verdict(tmp_path: Path) -> None:
    noisy = make_folder(tmp_path / "noisy", 12, noisy=1.0, sigma=0.2)
    out = ["-o", tmp_path / "g.csv", "--max-rounds", "2"]
    code, payload = run_json(noisy, *out, "--fail-under-tier", "High")
    assert payload["verdict"]["overall"]["tier"] in ("Very Low", "Low")
    assert code == 1 and payload["gate_failed"]
    assert run_json(noisy, *out, "--fail-under-tier", "very low")[0] == 0
    assert run_json(noisy, *out, "--fail-mean-under", "4.5")[0] == 1
    assert invoke("evaluate", noisy, *out, *RULES, "--fail-under-tier", "best")[0] == 2


def test_an_unreadable_image_is_an_error_row_and_exit_3(tmp_path: Path) -> None:
    bad = make_folder(tmp_path / "bad", 3, noisy=0.0)
    (bad / "broken.png").write_bytes(b"not a png")
    code, payload = run_json(bad, "-o", tmp_path / "b.csv")
    df = rows(tmp_path / "b.csv")
    assert code == 3 and payload["verdict"]["errors"] == 1
    assert df.set_index("image").loc[str(bad / "broken.png"), "status"] == "error"
    assert payload["verdict"]["overall"]["samples"] == 3  # the others still count


def test_reference_tiers_move_the_cut_points(tmp_path: Path, folder: Path) -> None:
    ref = tmp_path / "ref.csv"
    ref.write_text("image,status,score\n" + "".join(f"{i},ok,{4 + i / 100}\n" for i in range(50)))
    code, payload = run_json(folder, "-o", tmp_path / "t.csv", "--tiers", ref, "--max-rounds", "1")
    assert code == 0 and payload["verdict"]["tiers"][0] == pytest.approx(4.098, abs=1e-3)
    assert "quintiles of ref.csv" in payload["verdict"]["tiers_source"]


# -- resume --------------------------------------------------------------------------------------
def test_resume_continues_a_cut_run(tmp_path: Path, folder: Path) -> None:
    """A run cut in round 2 (rows lost) and resumed ends where an uninterrupted run ends:
    the same images, each once, and the same verdict."""
    whole = tmp_path / "whole.csv"
    code, full = run_json(folder, "-o", whole, "--max-rounds", "4")
    assert code == 0
    cut = tmp_path / "cut.csv"
    assert run_json(folder, "-o", cut, "--max-rounds", "2")[0] == 0
    lines = cut.read_text().splitlines(keepends=True)
    cut.write_text("".join(lines[:-3]) + lines[-3][:20])  # killed: 2 rows gone, one cut short
    code, resumed = run_json(folder, "-o", cut, "--max-rounds", "4", "--resume")
    assert code == 0
    a, b = rows(whole), rows(cut)
    assert b["image"].is_unique and sorted(a["image"]) == sorted(b["image"])
    got, want = resumed["verdict"]["overall"], full["verdict"]["overall"]
    assert got["tier"] == want["tier"] and got["samples"] == want["samples"]
    for k in ("mean", "lo", "hi"):  # rows read back from the CSV carry 3 decimals
        assert got[k] == pytest.approx(want[k], abs=2e-3)


def test_resume_refuses_another_evaluation(tmp_path: Path, folder: Path) -> None:
    out = tmp_path / "x.csv"
    assert run_json(folder, "-o", out, "--max-rounds", "1")[0] == 0
    code, _ = invoke("evaluate", folder, "-o", out, "--resume", "--seed", "5", *RULES)
    assert code == 2


# -- a scripted planner ----------------------------------------------------------------------------
def plan(
    sub: str, tool: str = "noise", n: int = 3, done: bool = False, summary: str = "",
    aspects: list[str] | None = None,
) -> dict[str, Any]:  # fmt: skip
    return {"thought": f"look at {sub}", "sub_aspects": aspects or [sub], "done": done,
            "summary": summary, "sub_aspect": sub, "tool": tool, "n": n, "prompts": []}  # fmt: skip


def evaluate_with(
    vlm: ScriptedVLM, source: Path | GeneratorSource, out: Path, **config: Any
) -> tuple[Verdict, Evaluation]:
    async def go() -> tuple[Verdict, Evaluation]:
        async with build_runtime(Settings(concurrency=2, fusion="min"), vlm=vlm) as rt:
            src = (
                source
                if isinstance(source, GeneratorSource)
                else Folder(rt.jobs([str(source)], None))
            )
            ev = Evaluation(rt, EvalConfig(query="How good are they?", **config), src)
            with rt.outputs(out, None, False, "evaluate", extra_columns=EVAL_COLUMNS,
                            extra=ev.cells_of) as (writer, tracer):  # fmt: skip
                return await ev.run(writer, tracer), ev

    return asyncio.run(go())


def test_max_rounds_holds_against_a_planner_that_never_stops(tmp_path: Path, folder: Path) -> None:
    def never_done(req: VLMRequest) -> dict[str, Any]:
        k = req.inputs.round  # type: ignore[union-attr]
        return plan(f"facet {k}", aspects=[f"facet {j}" for j in range(1, 6)])

    vlm = ScriptedVLM(default=never_done)
    v, ev = evaluate_with(vlm, folder, tmp_path / "m.csv", max_rounds=3, max_samples=45)
    assert v.rounds == 3 and v.stop_reason == "reached --max-rounds 3"
    assert len(vlm.calls("eval_plan")) == 3
    assert [r.sub_aspect.name for r in ev.state.rounds] == ["facet 1", "facet 2", "facet 3"]


def test_max_samples_holds(tmp_path: Path, folder: Path) -> None:
    vlm = ScriptedVLM(default=lambda req: plan(f"facet {req.inputs.round}", n=9))  # type: ignore[union-attr]
    v, _ = evaluate_with(vlm, folder, tmp_path / "s.csv", max_rounds=10, max_samples=21)
    assert v.assessed == 21 and v.rounds == 3  # 9 + 9 + the 3 left
    assert v.stop_reason == "reached --max-samples 21"
    v, _ = evaluate_with(vlm, folder, tmp_path / "t.csv", max_rounds=10, max_samples=20)
    assert v.assessed == 18 and v.rounds == 2  # 2 left: fewer than a round's minimum of 3


def test_a_repeated_sub_aspect_is_refused(tmp_path: Path, folder: Path) -> None:
    vlm = ScriptedVLM({"eval_plan": [plan("Noise"), plan("noise in the shadows"), plan("Blurs", tool="sharpness")]})  # fmt: skip
    _, ev = evaluate_with(vlm, folder, tmp_path / "r.csv", max_rounds=2)
    assert [r.sub_aspect.name for r in ev.state.rounds] == ["Noise", "Blurs"]
    refused = [e["parsed"] for e in events(tmp_path / "r.trace.jsonl", "eval_round")
               if e["parsed"]["phase"] == "refused"]  # fmt: skip
    assert len(refused) == 1 and "already had round 1" in refused[0]["reason"]
    assert "already had round 1" in vlm.calls("eval_plan")[2].messages[1].text  # told why


def test_persistent_repeats_fall_back_to_the_rules_version(tmp_path: Path, folder: Path) -> None:
    vlm = ScriptedVLM({"eval_plan": [plan("Noise")] * 10})
    _, ev = evaluate_with(vlm, folder, tmp_path / "p.csv", max_rounds=2, reasks=1)
    names = [r.sub_aspect.name for r in ev.state.rounds]
    assert names[0] == "Noise" and names[1] != "Noise" and len(vlm.calls("eval_plan")) == 3


def test_a_stop_needs_every_sub_aspect_probed_and_a_justification(
    tmp_path: Path, folder: Path
) -> None:
    both = ["Noise", "Blurs"]
    script = [plan("Noise", aspects=both),
              plan("Noise", done=True, summary="noise is fine", aspects=both),  # Blurs not yet
              plan("Blurs", tool="sharpness", aspects=both),
              plan("Blurs", done=True, summary="", aspects=both),  # no justification
              plan("Blurs", done=True, summary="both are measured and settled", aspects=both)]  # fmt: skip
    vlm = ScriptedVLM({"eval_plan": script})
    v, _ = evaluate_with(vlm, folder, tmp_path / "d.csv", max_rounds=5)
    assert v.rounds == 2 and v.stop_reason == "the planner judged the evidence sufficient"
    assert "both are measured and settled" in v.summary
    reasons = [e["parsed"]["reason"] for e in events(tmp_path / "d.trace.jsonl", "eval_round")
               if e["parsed"]["phase"] == "refused"]  # fmt: skip
    assert reasons == ["sub-aspects without a round yet: Blurs",
                       "a stop needs a summary that justifies the verdict"]  # fmt: skip


def test_a_planner_that_breaks_keeps_the_rounds_done(tmp_path: Path, folder: Path) -> None:
    vlm = ScriptedVLM({"eval_plan": [plan("Noise"), VLMError("server gone")]})
    v, ev = evaluate_with(vlm, folder, tmp_path / "f.csv", max_rounds=4)
    assert ev.stop is not None and ev.stop.failed and "server gone" in v.stop_reason
    assert v.rounds == 1 and v.overall.samples == 3


# -- generators -------------------------------------------------------------------------------------
GEN = """
import sys
import numpy as np
from PIL import Image
prompt, out, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(sys.argv[4], "a") as log:
    log.write(prompt + "\\n")
if seed % 3 == 0:
    sys.exit("boom: out of memory")
if seed % 3 == 1:
    sys.exit(0)  # "succeeds" without writing anything
rng = np.random.default_rng(seed)
yy, xx = np.mgrid[0:72, 0:96]
img = 0.5 + 0.3 * np.sin(xx / 6.0)[..., None] * np.cos(yy / 8.0)[..., None] + rng.normal(0, 0.05, (72, 96, 3))
Image.fromarray((np.clip(img, 0, 1) * 255).astype(np.uint8)).save(out)
"""


def test_generator_failures_are_error_rows_and_the_loop_goes_on(tmp_path: Path) -> None:
    script = tmp_path / "gen.py"
    script.write_text(GEN)
    log = tmp_path / "prompts.log"
    cmd = f"{sys.executable} {script} {{prompt}} {{out}} {{seed}} {log}"
    out = tmp_path / "g.csv"
    code, payload = run_json("--generator", cmd, "--query", "How sharp are the cats?",
                             "-o", out, "--max-rounds", "2")  # fmt: skip
    df = rows(out)
    v = payload["verdict"]
    assert code == 3 and v["rounds"] == 2 and v["population"] is None
    errors = df[df["status"] == "error"]
    assert errors["error"].str.contains("exited with 1: boom: out of memory").any()
    assert errors["error"].str.contains("wrote no image").any()
    assert (df["status"] == "ok").sum() == v["overall"]["samples"] > 0
    assert set(df["round"]) == {1, 2} and (df["prompt"].str.contains("cats")).all()
    assert sorted(log.read_text().splitlines()) == sorted(df["prompt"])  # one call per sample
    assert (tmp_path / "g-images").is_dir()


def test_a_generator_gets_the_prompt_as_one_argument_and_no_shell(tmp_path: Path) -> None:
    gen = Generator.parse("python3 make.py --prompt {prompt} -o {out}")
    evil = "a cat; touch PWNED $(id) `id` 'q'"
    assert gen.command(evil, tmp_path / "x.png", 1) == [
        "python3", "make.py", "--prompt", evil, "-o", str(tmp_path / "x.png")]  # fmt: skip
    echo = tmp_path / "echo.py"
    echo.write_text("import sys, pathlib; pathlib.Path(sys.argv[2]).write_text(sys.argv[1])")
    ok = Generator.parse(f"{sys.executable} {echo} {{prompt}} {{out}}")
    assert asyncio.run(ok.run(evil, tmp_path / "o.txt", 0)) is None
    assert (tmp_path / "o.txt").read_text() == evil and not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize(
    ("template", "why"),
    [("", "empty"), ("gen --prompt {prompt}", "must name the image"), ("gen 'unclosed {out}", "cannot split")],
)  # fmt: skip
def test_bad_generator_templates_are_usage_errors(template: str, why: str) -> None:
    from agentiqa_cli.errors import ConfigError

    with pytest.raises(ConfigError, match=why):
        Generator.parse(template)


def test_a_generator_that_hangs_is_stopped(tmp_path: Path) -> None:
    slow = Generator.parse(
        f"{sys.executable} -c 'import time; time.sleep(30)' {{out}}", timeout=0.5
    )
    why = asyncio.run(slow.run("p", tmp_path / "x.png", 0))
    assert why == "generator timed out after 0.5 s"
    missing = Generator.parse("/no/such/generator {out}")
    assert "could not start" in (asyncio.run(missing.run("p", tmp_path / "y.png", 0)) or "")


def test_generator_prompts_come_from_the_plan(tmp_path: Path) -> None:
    script = tmp_path / "g.py"
    script.write_text(
        "import sys, numpy as np\nfrom PIL import Image\n"
        "Image.fromarray(np.full((64, 64, 3), 128, np.uint8)).save(sys.argv[2])\n"
    )
    gen = GeneratorSource(
        Generator.parse(f"{sys.executable} {script} {{prompt}} {{out}}"), tmp_path / "imgs"
    )
    reply = plan("Noise", n=3) | {"prompts": ["a dark alley", "a night market"]}  # one short
    vlm = ScriptedVLM({"eval_plan": [reply]})
    v, ev = evaluate_with(vlm, gen, tmp_path / "p.csv", max_rounds=1)
    prompts = [s.prompt for s in ev.state.rounds[0].samples]
    assert prompts[:2] == ["a dark alley", "a night market"] and len(prompts) == 3
    assert "low light" in prompts[2]  # topped up from the templates, stressing noise
    assert v.assessed == 3 and v.errors == 0


def test_a_generator_that_leaves_a_child_holding_stderr_ends_when_it_exits(
    tmp_path: Path,
) -> None:
    """Its exit ends the call: a background child that keeps stderr open (a server it
    started) must not make every call time out though the image was written."""
    import contextlib
    import os
    import signal
    import time

    script = tmp_path / "gen.py"
    script.write_text(
        "import subprocess, sys, pathlib\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
        "with open(sys.argv[3], 'a') as f: print(child.pid, file=f)\n"
        "pathlib.Path(sys.argv[1]).write_bytes(b'png')\n"
        "print('last words', file=sys.stderr)\n"
        "sys.exit(int(sys.argv[2]))\n"
    )
    pids = tmp_path / "children"
    try:
        for code, want in ((0, None), (3, "generator exited with 3: last words")):
            gen = Generator.parse(f"{sys.executable} {script} {{out}} {code} {pids}", timeout=10)
            t0 = time.monotonic()
            assert asyncio.run(gen.run("p", tmp_path / "x.png", 0)) == want
            assert time.monotonic() - t0 < 6
    finally:
        for pid in pids.read_text().split() if pids.exists() else []:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)  # the children this test started
