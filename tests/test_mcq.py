"""Multiple-choice questions: loading with per-line errors, per-track scoring, examples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from agentiqa_cli.bench.mcq import (
    MCQuestion,
    format_question,
    load_mcq,
    make_example_mcq,
    normalize_letter,
    score_mcq,
    write_mcq_csv,
)
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.records import Result

REPO = Path(__file__).resolve().parents[1]


def _write(path: Path, rows: list[object]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    Image.new("RGB", (16, 16)).save(tmp_path / "x.png")
    return tmp_path


def q(track: str, answer: str = "A", **extra: object) -> dict[str, object]:
    return {"track": track, "question": "Which?", "options": ["yes", "no"], "answer": answer,
            "image": "x.png", **extra}  # fmt: skip


def test_scorer_accuracy_per_track(folder: Path) -> None:
    rows = [
        q("planner", id="p1"), q("planner", "B", id="p2"),
        q("executor-distortion", id="d1"), q("executor-distortion", id="d2"),
        q("executor-distortion", id="d3"), q("executor-distortion", id="d4"),
        q("executor-tool", id="t1"),
        q("summarizer", id="s1"), q("summarizer", id="s2"),
    ]  # fmt: skip
    questions = load_mcq(_write(folder / "q.jsonl", rows))
    script = {"p1": "A", "p2": "a", "d1": "B. no", "d2": "Answer: A", "d3": "yes", "d4": "maybe",
              "t1": "A", "s1": None, "s2": "A"}  # fmt: skip

    def row(question: MCQuestion) -> Result:
        if question.id == "s1":
            return Result(image="x.png", status="error", error="server unreachable")
        return Result(image="x.png", choice=script[question.id], answer=f"asked {question.id}")

    report = score_mcq(questions, {x.id: row(x) for x in questions})
    acc = {t.track: (t.correct, t.n) for t in report.tracks}
    assert acc == {"planner": (1, 2), "executor-distortion": (2, 4), "executor-tool": (1, 1),
                   "summarizer": (1, 2)}  # fmt: skip
    assert report.overall == pytest.approx((0.5 + 0.5 + 1.0 + 0.5) / 4)  # mean of tracks
    assert report.overall_micro == pytest.approx(5 / 9)
    assert report.failed == 1
    by_id = {a.id: a for a in report.answers}
    assert len(by_id) == 9  # every answer recorded
    assert by_id["d3"].predicted == "A" and by_id["d3"].correct  # option text accepted
    assert by_id["d4"].predicted is None and "names no option" in (by_id["d4"].error or "")
    assert by_id["s1"].error == "server unreachable" and not by_id["s1"].correct
    assert by_id["p1"].info == {"answer": "asked p1", "distortions": "", "vlm_calls": 0}
    out = folder / "answers.csv"
    write_mcq_csv(report, out)
    assert out.read_text().splitlines()[0] == "id,track,answer,predicted,correct,error"


def test_loader_reports_every_bad_line(folder: Path) -> None:
    rows: list[object] = [
        q("planner", id="ok"),
        "{not json",
        q("executer-tool"),
        q("planner", "C"),
        {**q("planner"), "image": "missing.png"},
        q("planner", id="ok"),
        {**q("planner"), "anwser": "A"},
        {**q("planner"), "options": ["only one"]},
    ]
    path = _write(folder / "bad.jsonl", rows)
    with pytest.raises(ConfigError) as e:
        load_mcq(path)
    msg = str(e.value)
    assert "7 bad question line(s)" in msg
    assert f"{path}:2: invalid JSON" in msg
    assert f"{path}:3: unknown track 'executer-tool'" in msg and "did you mean executor-tool" in msg
    assert f"{path}:4: answer 'C' is not one of the options A, B" in msg
    assert f"{path}:5: image 'missing.png' not found" in msg
    assert f"{path}:6: id 'ok' already used on line 1" in msg
    assert f"{path}:7: field anwser" in msg
    assert f"{path}:8: need at least 2 options" in msg


def test_options_as_mapping_and_prompt_text(folder: Path) -> None:
    row = {**q("Executor_Tool"), "options": {"a": "PSNR", "B.": "NIQE"}, "answer": "NIQE"}
    (question,) = load_mcq(_write(folder / "m.jsonl", [row]))
    assert question.track == "executor-tool"
    assert question.options == {"A": "PSNR", "B": "NIQE"} and question.answer == "B"
    assert question.image == folder / "x.png" and question.id == "line1"
    assert "A. PSNR\nB. NIQE" in format_question(question)
    assert question.item().options == {"A": "PSNR", "B": "NIQE"}


def test_normalize_letter() -> None:
    opts = {"A": "Noise", "B": "Blur", "C": "None"}
    assert [normalize_letter(r, opts) for r in ("b", "(C)", "B) Blur", "blur.", "The answer is A")] == [
        "B", "C", "B", "B", "A",
    ]  # fmt: skip
    assert normalize_letter("D", opts) is None and normalize_letter("", opts) is None


def test_example_generator_is_deterministic_and_loads(tmp_path: Path) -> None:
    a = make_example_mcq(tmp_path / "a")
    b = make_example_mcq(tmp_path / "b")
    files = sorted(p.name for p in a.parent.iterdir())
    assert files == sorted(p.name for p in b.parent.iterdir())
    for name in files:
        assert (a.parent / name).read_bytes() == (b.parent / name).read_bytes(), name
    questions = load_mcq(a)
    assert {x.track for x in questions} == {
        "planner", "executor-distortion", "executor-tool", "summarizer",
    }  # fmt: skip
    assert len(questions) >= 12
    assert sum((a.parent / n).stat().st_size for n in files) < 50_000
    perfect = score_mcq(questions, {x.id: Result(image="x", choice=x.answer) for x in questions})
    assert perfect.overall == 1.0


def test_shipped_examples_match_the_generator(tmp_path: Path) -> None:
    shipped = REPO / "examples" / "mcq"
    fresh = make_example_mcq(tmp_path).parent
    for p in fresh.iterdir():
        assert (shipped / p.name).read_bytes() == p.read_bytes(), (
            f"regenerate examples/mcq: {p.name}"
        )
