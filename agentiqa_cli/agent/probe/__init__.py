"""Context-aware probing (Q-Probe §3, App. A.3, B; the rules version is ours: docs/fidelity.md).

The VLM looks at the global view, asks for up to three crops per turn, sees each crop cut
from the original pixels, and finally judges every crop. The code, not the model, decides
what counts: boxes are validated (``crops``), a clean crop costs nothing, blur away from
the in-focus subject is natural depth of field (``probe_scan.count``), and the final score
is ``clip(base - Σ degraded penalties, 1, 5)`` whatever the model wrote.

Public API::

    should_zoom(mode, width, height, pixel_budget) -> bool
    await probe_vlm(asker, image, *, pixel_budget, turns=6, emit=None, view=None,
                    subject=None, cards=None) -> ProbeOutcome
    probe_rules(image, cards=None, emit=None, *, turns=6, base_score=None,
                pixel_budget=None, subject=None, readings=None) -> ProbeOutcome

``asker`` is anything with the two coroutines of ``ProbeAsker``; each receives a view that
carries the images to attach, the variables of ``prompts/probe.yaml`` /
``prompts/probe_final.yaml`` (``view.variables()``) and, for the final one, the values its
schema needs (``view.dynamic()``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, ClassVar, Protocol, TypeVar

from pydantic import Field

from agentiqa_cli.agent.probe.crops import ZOOM_MODES, Crop, CropBook, should_zoom
from agentiqa_cli.agent.probe.records import (
    ARTEFACT_TYPES,
    MAX_TURNS,
    CropRecord,
    CropVerdict,
    ProbeFinalReply,
    ProbeOutcome,
    ProbeTurnReply,
    Stop,
    SubjectRecord,
    TurnRecord,
)
from agentiqa_cli.agent.probe.rules import probe_rules
from agentiqa_cli.agent.probe.scan import count, find_subject, finish
from agentiqa_cli.errors import VLMError
from agentiqa_cli.imaging.load import LoadedImage
from agentiqa_cli.tools.cards import CardSet
from agentiqa_cli.vlm.base import ImagePart, RoleInput

__all__ = [
    "ARTEFACT_TYPES",
    "ZOOM_MODES",
    "Emit",
    "ProbeAsker",
    "ProbeFinalInput",
    "ProbeOutcome",
    "ProbeTurnInput",
    "probe_rules",
    "probe_vlm",
    "should_zoom",
]

Emit = Callable[[str, dict[str, Any]], None]
V = TypeVar("V", bound="_View")
SCORE_TOLERANCE = 0.05  # a model's own final score this close to ours is not "overridden"


class _View(RoleInput):
    """What one probing call is asked (a role input the Asker renders); ``query`` and
    ``evidence`` are the agent's, added by whoever asks."""

    turn: int = Field(description="this call's number; every call counts toward max_turns")
    max_turns: int
    width: int
    height: int
    images: list[ImagePart] = Field(description="the global view first, then the crops")
    crops: list[dict[str, Any]] = Field(
        default_factory=list, description="id, turn, box, width, height of each attached crop"
    )
    history: list[dict[str, Any]] = Field(
        default_factory=list, description="earlier turns: turn, thought, score, boxes, crops"
    )
    notes: list[str] = Field(default_factory=list, description="why boxes were rejected")
    query: str = ""
    evidence: list[dict[str, object]] = Field(default_factory=list)

    def variables(self) -> dict[str, object]:
        """The prompt's template variables."""
        return self.model_dump(exclude={"images"})


class ProbeTurnInput(_View):
    """One probing turn: the global view plus the crops cut after the previous turn."""

    role: ClassVar[str] = "probe"


class ProbeFinalInput(_View):
    """The final judgement: the global view plus every crop, in ``crops`` order."""

    role: ClassVar[str] = "probe_final"
    forced: bool = Field(False, description="the turn limit was reached")

    def dynamic(self) -> dict[str, object]:
        """``schema_for`` values: one verdict per crop, in order."""
        return {"crop_ids": [c["id"] for c in self.crops]}


class ProbeAsker(Protocol):
    """What the loop needs from the agent's Asker: one call per turn, one final call."""

    async def turn(self, view: ProbeTurnInput) -> ProbeTurnReply: ...

    async def final(self, view: ProbeFinalInput) -> ProbeFinalReply: ...


def _no_emit(step: str, payload: dict[str, Any]) -> None:
    return None


def _history(records: list[TurnRecord]) -> list[dict[str, Any]]:
    return [
        {
            "turn": r.turn,
            "thought": r.thought,
            "tentative_score": r.tentative_score,
            "boxes": r.requested,
            "crops": r.crops,
        }
        for r in records
    ]


def _judge(reply: ProbeFinalReply, crops: list[Crop], notes: list[str]) -> list[CropRecord]:
    """Match the model's verdicts to the crops by id; anything unmatched is noted."""
    verdicts: dict[str, CropVerdict] = {}
    for v in reply.crops:
        if v.id in verdicts:
            notes.append(f"verdict for {v.id} repeated; the first one counts")
        elif v.id not in {c.id for c in crops}:
            notes.append(f"verdict for unknown crop {v.id!r} ignored")
        else:
            verdicts[v.id] = v
    out: list[CropRecord] = []
    for crop in crops:
        rec = crop.record()
        got = verdicts.get(crop.id)
        if got is None:
            rec.note = "no verdict from the model: counted as clean"
            notes.append(f"{crop.id}: no verdict")
        else:
            rec.status, rec.type, rec.reasoning = got.status, got.type, got.reasoning
            rec.penalty_asked = got.penalty
        out.append(rec)
    return out


async def probe_vlm(
    asker: ProbeAsker,
    image: LoadedImage,
    *,
    pixel_budget: int | None,
    turns: int = MAX_TURNS,
    emit: Emit | None = None,
    view: ImagePart | None = None,
    subject: SubjectRecord | None = None,
    cards: CardSet | None = None,
) -> ProbeOutcome:
    """Probe ``image`` with a VLM: at most ``turns`` calls in all (the final one included),
    at most three crops per turn. Stops when the model says ``final``, when a turn yields
    no valid box, or at the limit (then the final schema is forced). With no crop at all
    there is nothing to judge: the last tentative score is the outcome, with no final call.

    ``view`` is the global image part (default: the image itself; the client downscales it
    to its budget). ``pixel_budget`` downscales crops above it (None: never). ``subject``
    defaults to ``find_subject(image, cards)``. A VLMError after at least one turn ends the
    probe with the last tentative score (stop "error"); on the first turn it propagates,
    since there is no judgement to fall back on.
    """
    if turns < 1:
        raise ValueError(f"turns must be at least 1, got {turns}")
    if subject is None:
        subject = await asyncio.to_thread(find_subject, image, cards)
    return await _Probe(asker, image, pixel_budget, turns, emit or _no_emit, view, subject).run()


class _Probe:
    """The state of one image's probe."""

    def __init__(
        self,
        asker: ProbeAsker,
        image: LoadedImage,
        pixel_budget: int | None,
        turns: int,
        emit: Emit,
        view: ImagePart | None,
        subject: SubjectRecord,
    ) -> None:
        self.asker, self.turns, self.emit, self.subject = asker, turns, emit, subject
        self.width, self.height = image.size
        self.name = image.path.name or str(image.path)
        self.view = view or ImagePart(sha256=image.sha256, path=self.name, pixels=image.pixels)
        self.book = CropBook(image.pixels, pixel_budget)
        self.records: list[TurnRecord] = []
        self.notes: list[str] = []
        self.last_score: float | None = None

    def _input(self, cls: type[V], t: int, crops: list[Crop], **extra: Any) -> V:
        return cls(
            turn=t,
            max_turns=self.turns,
            width=self.width,
            height=self.height,
            images=[self.view, *(c.part(self.name) for c in crops)],
            crops=[c.view() for c in crops],
            history=_history(self.records),
            notes=self.records[-1].notes if self.records else [],
            **extra,
        )

    def _outcome(self, base: float, stop: Stop, crops: list[CropRecord]) -> ProbeOutcome:
        return finish(
            ProbeOutcome(
                method="vlm",
                turns=len(self.records),
                stop=stop,
                records=self.records,
                crops=crops,
                subject=self.subject,
                base_score=base,
                penalty=0.0,
                final_score=base,
                notes=self.notes,
            )
        )

    def _failed(self, t: int, note: str) -> ProbeOutcome:
        """A later call failed: the last tentative score stands, the crops stay unjudged."""
        assert self.last_score is not None
        self.notes.append(note)
        self.emit("probe", {"method": "vlm", "turn": t, "action": "final", "note": note})
        return self._outcome(self.last_score, "error", [c.record() for c in self.book.crops])

    async def run(self) -> ProbeOutcome:
        shown: list[Crop] = []  # crops cut in the previous turn, attached to the next one
        stop: Stop | None = None
        for t in range(1, self.turns + 1):
            if self.book.crops and (stop is not None or t == self.turns):
                return await self._final(t, stop or "limit")
            if stop is not None:
                break
            try:
                reply = await self.asker.turn(self._input(ProbeTurnInput, t, shown))
            except VLMError as e:
                if self.last_score is None:
                    raise
                return self._failed(t, f"turn {t} failed: {e}")
            shown, stop = self._take(t, reply)
        # no crop was ever cut: the tentative score is the judgement
        assert self.last_score is not None
        return self._outcome(self.last_score, stop or "limit", [])

    def _take(self, t: int, reply: ProbeTurnReply) -> tuple[list[Crop], Stop | None]:
        """Record one turn's reply and cut its crops; the stop reason if it ends probing."""
        self.last_score = reply.tentative_score
        rec = TurnRecord(
            turn=t,
            action=reply.action,
            thought=reply.thought,
            tentative_score=reply.tentative_score,
            requested=[[float(v) for v in b] for b in reply.boxes],
        )
        shown: list[Crop] = []
        stop: Stop | None = None
        if reply.action == "final":
            stop = "final"
            if reply.boxes:
                rec.notes.append(f"{len(reply.boxes)} box(es) ignored: the action is final")
        elif t == self.turns:  # only when turns == 1: no call is left to judge crops
            rec.notes.append("turn limit reached: boxes not inspected")
            stop = "limit"
        else:
            shown, box_notes = self.book.accept(reply.boxes, t)
            rec.notes.extend(box_notes)
            rec.crops = [c.id for c in shown]
            if not shown:
                stop = "no_box"
                rec.notes.append("no valid box: probing stops")
        self.records.append(rec)
        self.emit("probe", {"method": "vlm", **rec.model_dump(mode="json")})
        for c in shown:
            self.emit("crop", c.record().model_dump(mode="json"))
        return shown, stop

    async def _final(self, t: int, stop: Stop) -> ProbeOutcome:
        crops = self.book.crops
        try:
            reply = await self.asker.final(
                self._input(ProbeFinalInput, t, crops, forced=stop == "limit")
            )
        except VLMError as e:
            return self._failed(t, f"final judgement failed: {e}")
        judged = [count(r, self.subject) for r in _judge(reply, crops, self.notes)]
        self.records.append(
            TurnRecord(
                turn=t, action="final", thought=reply.summary, tentative_score=reply.base_score
            )
        )
        result = self._outcome(reply.base_score, stop, judged)
        result.summary = reply.summary
        if abs(reply.final_score - result.final_score) > SCORE_TOLERANCE:
            result.reply_final_score = reply.final_score
            result.notes.append(
                f"model's final_score {reply.final_score:.2f} replaced by base "
                f"{reply.base_score:.2f} - penalties {result.penalty:.2f} = {result.final_score:.2f}"
            )
        self.emit(
            "probe",
            {
                "method": "vlm",
                "turn": t,
                "action": "final",
                "forced": stop == "limit",
                "base_score": result.base_score,
                "penalty": result.penalty,
                "final_score": result.final_score,
                "reply_final_score": result.reply_final_score,
                "crops": [c.model_dump(mode="json", include=_VERDICT_FIELDS) for c in judged],
                "notes": list(result.notes),
            },
        )
        return result


_VERDICT_FIELDS = {"id", "status", "type", "penalty_asked", "penalty", "on_subject", "note"}
