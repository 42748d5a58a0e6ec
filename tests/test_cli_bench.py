"""`eval-bench` and `calibrate` from the command line, on small generated data."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import yaml

from agentiqa_cli.bench.synth import sample_photos
from tests.test_cli_score import invoke

ROOT = Path(__file__).resolve().parent.parent


def test_mcq_example_with_rules(tmp_path: Path) -> None:
    code, out = invoke(
        "eval-bench", "mcq", ROOT / "examples/mcq/questions.jsonl", "--out-dir", tmp_path, "-q"
    )
    assert code == 0, out
    df = pd.read_csv(tmp_path / "answers.csv")
    assert len(df) == 15
    dist = df[df["track"] == "executor-distortion"]
    assert dist["correct"].mean() >= 0.6  # the detectors see blur, noise, darkening, blocks
    # unanswerable questions are recorded as such, never guessed
    unanswered = df[df["predicted"].isna()]
    assert (unanswered["error"].str.contains("no evidence")).all()
    assert not unanswered["correct"].any()
    # each track answered from its component: the plan answers planner questions, the
    # tool cards executor-tool ones; the whole agent cannot tell them apart
    isolated = df.groupby("track")["correct"].mean()
    assert isolated["planner"] == 1.0 and isolated["executor-tool"] == 1.0
    code, out = invoke("eval-bench", "mcq", ROOT / "examples/mcq/questions.jsonl",
                       "--out-dir", tmp_path / "whole", "--whole-agent", "-q")  # fmt: skip
    assert code == 0, out
    whole = pd.read_csv(tmp_path / "whole" / "answers.csv").groupby("track")["correct"].mean()
    assert whole["planner"] < 1.0 and whole["executor-tool"] < 1.0


def test_synth_small(tmp_path: Path) -> None:
    sample_photos(tmp_path / "clean", 160, names=("astronaut", "chelsea"))
    code, out = invoke(
        "eval-bench", "synth", tmp_path / "clean", "--kinds", "blur,noise", "--size", "160",
        "--tools", "sharpness,noise", "--out-dir", tmp_path / "out", "-q",
    )  # fmt: skip
    assert code == 0, out
    df = pd.read_csv(tmp_path / "out" / "synth.csv")
    assess = df[(df["method"] == "assess") & (df["kind"] != "(all)")].set_index("kind")
    assert assess.loc["blur", "srcc_level"] > 0.8 and assess.loc["noise", "srcc_level"] > 0.8
    # `score`'s default set is always measured beside the asked-for methods
    assert set(df["method"]) == {"assess", "sharpness", "noise", "score (default set)"}


def test_calibrate_writes_an_overlay_that_score_applies(tmp_path: Path) -> None:
    import numpy as np
    from PIL import Image, ImageFilter

    (photo,) = sample_photos(tmp_path / "p", 160, names=("astronaut",))
    im = Image.open(photo)
    rows = []
    for i, radius in enumerate(np.linspace(0, 4, 12)):
        p = tmp_path / f"b{i}.png"
        im.filter(ImageFilter.GaussianBlur(float(radius))).save(p)
        rows.append({"image": p.name, "mos": 5 - radius})
    pd.DataFrame(rows).to_csv(tmp_path / "data.csv", index=False)
    overlay = tmp_path / "cal.yaml"
    code, out = invoke(
        "calibrate", tmp_path / "data.csv", "--tools", "sharpness", "-o", overlay, "-q"
    )
    assert code == 0, out
    params = yaml.safe_load(overlay.read_text())["tools"]["sharpness"]["params"]
    assert len(params) == 5
    code, out = invoke("score", tmp_path / "b0.png", "--tools", "sharpness", "--calibration", overlay,
                       "-o", tmp_path / "r.csv", "-q")  # fmt: skip
    assert code == 0, out
    assert "calibration" in (tmp_path / "r.trace.jsonl").read_text()
