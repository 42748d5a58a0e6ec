"""AgenticIQA-Eval-style multiple-choice questions (AgenticIQA §4, Appendix C).

One question per JSONL line::

    {"id": "q1", "track": "executor-distortion", "question": "Which distortion ...?",
     "options": ["Noise", "Blur"], "answer": "B", "image": "blur.png", "reference": null}

``track`` is planner / executor-distortion / executor-tool / summarizer; ``options`` is a
list (letters A, B, ... in order) or an object letter → text; ``answer`` is a letter (the
exact text of an option is accepted too); ``image`` and ``reference`` are relative to the
JSONL file. Accuracy is reported per track and overall; like AgenticIQA Table 1, the headline
``overall`` is the mean of the track accuracies (the paper's tracks are equal-sized, so its
numbers do not say whether it averaged tracks or questions; ``overall_micro`` is the other).
"""

from __future__ import annotations

import csv
import difflib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentiqa_cli.bench.mcq_examples import make_example_mcq
from agentiqa_cli.bench.methods import Item
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.io.guard import whole_file
from agentiqa_cli.io.results import safe_row
from agentiqa_cli.records import OPTION_LETTERS, Record, Result, Track

__all__ = [
    "TRACKS",
    "MCQAnswer",
    "MCQReport",
    "MCQuestion",
    "format_question",
    "load_mcq",
    "make_example_mcq",
    "normalize_letter",
    "score_mcq",
    "write_mcq_csv",
]

TRACKS: tuple[Track, ...] = get_args(Track)
MAX_ERRORS_SHOWN = 20


class MCQuestion(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    track: Track
    question: str
    options: dict[str, str]  # letter → text, in display order
    answer: str  # a key of options
    image: Path
    reference: Path | None = None
    line: int = 0

    def item(self) -> Item:
        return Item(
            image=self.image,
            reference=self.reference,
            question=self.question,
            options=dict(self.options),
            key=self.id,
        )


class _RawQuestion(Record):
    """One JSONL line as written; validated before paths and letters are resolved."""

    id: str | int | None = None
    track: str
    question: str = Field(min_length=1)
    options: list[str] | dict[str, str]
    answer: str
    image: str = Field(min_length=1)
    reference: str | None = None


def _track(name: str) -> str:
    key = re.sub(r"[\s_]+", "-", name.strip().lower())
    if key in TRACKS:
        return key
    close = difflib.get_close_matches(key, TRACKS, n=1, cutoff=0.5)
    hint = f"; did you mean {close[0]}?" if close else ""
    raise ValueError(f"unknown track {name!r} (one of {', '.join(TRACKS)}){hint}")


def _options(raw: list[str] | dict[str, str]) -> dict[str, str]:
    if isinstance(raw, list):
        if len(raw) > len(OPTION_LETTERS):
            raise ValueError(f"at most {len(OPTION_LETTERS)} options")
        opts = dict(zip(OPTION_LETTERS, (t.strip() for t in raw), strict=False))
    else:
        opts = {}
        for k, v in raw.items():
            letter = k.strip().rstrip(".)").upper()
            if len(letter) != 1 or letter not in OPTION_LETTERS:
                raise ValueError(f"option key {k!r} is not a letter")
            if letter in opts:
                raise ValueError(f"option {letter} given twice")
            opts[letter] = v.strip()
    if len(opts) < 2:
        raise ValueError("need at least 2 options")
    if any(not t for t in opts.values()):
        raise ValueError("empty option text")
    return opts


def normalize_letter(reply: str | None, options: dict[str, str]) -> str | None:
    """The option letter a reply means: "B", "b", "(B)", "B. Boat", "Answer: B", or an
    option's exact text; None if it names no option."""
    if reply is None:
        return None
    s = reply.strip()
    if s.upper() in options:
        return s.upper()
    for text_letter, text in options.items():
        if s.lower().rstrip(".") == text.lower().rstrip("."):
            return text_letter
    m = re.match(r"^\W*([A-Za-z])(?:[.):\]]|\s|$)", s) or re.search(
        r"\banswer\s*(?:is)?\s*[:\-]?\s*\(?([A-Za-z])\b", s, re.IGNORECASE
    )
    if m and m.group(1).upper() in options:
        return m.group(1).upper()
    return None


def _resolve(base: Path, rel: str) -> Path:
    p = Path(rel).expanduser()
    return p if p.is_absolute() else base / p


def _parse_line(text: str, line: int, base: Path) -> MCQuestion:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"invalid JSON: {e.msg} (column {e.colno})") from None
    if not isinstance(data, dict):
        raise ValueError("each line must be a JSON object")
    try:
        raw = _RawQuestion.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(line)"
        raise ValueError(f"field {where}: {err['msg']}") from None
    options = _options(raw.options)
    answer = normalize_letter(raw.answer, options)
    if answer is None:
        raise ValueError(f"answer {raw.answer!r} is not one of the options {', '.join(options)}")
    image = _resolve(base, raw.image)
    if not image.is_file():
        raise ValueError(f"image {raw.image!r} not found (looked at {image})")
    reference = _resolve(base, raw.reference) if raw.reference else None
    if reference is not None and not reference.is_file():
        raise ValueError(f"reference {raw.reference!r} not found (looked at {reference})")
    return MCQuestion(
        id=str(raw.id) if raw.id is not None else f"line{line}",
        track=_track(raw.track),  # type: ignore[arg-type]
        question=raw.question.strip(),
        options=options,
        answer=answer,
        image=image,
        reference=reference,
        line=line,
    )


def load_mcq(path: Path) -> list[MCQuestion]:
    """All questions of a JSONL file; every bad line is reported (``file:line: reason``)."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    questions: list[MCQuestion] = []
    errors: list[str] = []
    seen: dict[str, int] = {}
    for n, text in enumerate(lines, 1):
        if not text.strip():
            continue
        try:
            q = _parse_line(text, n, path.parent)
        except ValueError as e:
            errors.append(f"{path}:{n}: {e}")
            continue
        if q.id in seen:
            errors.append(f"{path}:{n}: id {q.id!r} already used on line {seen[q.id]}")
            continue
        seen[q.id] = n
        questions.append(q)
    if errors:
        shown = errors[:MAX_ERRORS_SHOWN]
        more = len(errors) - len(shown)
        tail = f"\n... and {more} more" if more else ""
        raise ConfigError(f"{len(errors)} bad question line(s):\n" + "\n".join(shown) + tail)
    if not questions:
        raise ConfigError(f"{path}: no questions")
    return questions


def format_question(q: MCQuestion) -> str:
    """The question and its lettered options as one prompt text."""
    opts = "\n".join(f"{k}. {v}" for k, v in q.options.items())
    return f"{q.question}\n\n{opts}\n\nAnswer with the letter of the correct option."


class MCQAnswer(Record):
    id: str
    track: str
    answer: str
    predicted: str | None = None
    reply: str | None = None  # the agent's choice, before normalizing
    correct: bool = False
    error: str | None = None
    info: dict[str, str | int] | None = None  # what the answer rests on


class TrackScore(Record):
    track: str
    n: int
    correct: int
    accuracy: float | None = None


class MCQReport(Record):
    tracks: list[TrackScore]
    overall: float | None = None  # mean of the track accuracies (AgenticIQA Table 1)
    overall_micro: float | None = None  # correct / all questions
    n: int = 0
    correct: int = 0
    failed: int = 0  # questions left unanswered (an error row)
    answers: list[MCQAnswer] = Field(default_factory=list)


def score_mcq(questions: Sequence[MCQuestion], results: Mapping[str, Result]) -> MCQReport:
    """Each question's row (by id) against its answer. An error row is an unanswered
    question, counted wrong with its reason; a choice outside the options is wrong too."""
    answers = []
    for q in questions:
        r = results[q.id]
        if r.status == "error":
            answers.append(MCQAnswer(id=q.id, track=q.track, answer=q.answer, error=r.error))
            continue
        letter = normalize_letter(r.choice, q.options)
        error = None if letter else f"reply {r.choice!r} names no option"
        info: dict[str, str | int] = {
            "answer": r.answer,
            "distortions": r.distortions_cell(),
            "vlm_calls": r.usage.calls,
        }
        answers.append(
            MCQAnswer(id=q.id, track=q.track, answer=q.answer, predicted=letter,
                      reply=r.choice, correct=letter == q.answer, error=error, info=info)
        )  # fmt: skip
    tracks = []
    for t in TRACKS:
        mine = [a for a in answers if a.track == t]
        if mine:
            right = sum(a.correct for a in mine)
            tracks.append(
                TrackScore(track=t, n=len(mine), correct=right, accuracy=right / len(mine))
            )
    correct = sum(a.correct for a in answers)
    accs = [t.accuracy for t in tracks if t.accuracy is not None]
    return MCQReport(
        tracks=tracks,
        overall=sum(accs) / len(accs) if accs else None,
        overall_micro=correct / len(answers) if answers else None,
        n=len(answers),
        correct=correct,
        failed=sum(
            a.predicted is None and a.error is not None and a.reply is None for a in answers
        ),
        answers=answers,
    )


def write_mcq_csv(report: MCQReport, path: Path) -> None:
    """One row per question: id, track, answer, predicted, correct, error."""
    with whole_file(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["id", "track", "answer", "predicted", "correct", "error"])
        for a in report.answers:
            w.writerow(
                safe_row(
                    [a.id, a.track, a.answer, a.predicted or "", int(a.correct), a.error or ""]
                )
            )
