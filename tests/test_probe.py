"""Context-aware probing (agent/probe/__init__.py): crop geometry, the VLM loop against a scripted
asker, the zero-penalty and bokeh rules, the recomputed final score, the rules version on a
2048² photo canvas, and the two prompts."""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image, ImageDraw
from scipy import ndimage
from skimage import data

from agentiqa_cli.agent.probe import (
    ARTEFACT_TYPES,
    ProbeAsker,
    ProbeFinalInput,
    ProbeTurnInput,
    probe_rules,
    probe_vlm,
)
from agentiqa_cli.agent.probe.crops import CropBook, parse_box, should_zoom
from agentiqa_cli.agent.probe.records import (
    MAX_BOXES,
    MAX_TURNS,
    CropVerdict,
    ProbeFinalReply,
    ProbeOutcome,
    ProbeTurnReply,
    SubjectRecord,
)
from agentiqa_cli.agent.probe.scan import find_subject
from agentiqa_cli.asking.prompts import load_prompts
from agentiqa_cli.asking.registry import role as declared_role
from agentiqa_cli.asking.schemas import schema_problems
from agentiqa_cli.errors import VLMError
from agentiqa_cli.imaging.load import LoadedImage, load_image
from agentiqa_cli.records import SEVERITIES, Box
from agentiqa_cli.resources import default_prompts_dir
from agentiqa_cli.tools.builtin import detect
from tests.conftest import natural_like, save_rgb

# -- a scripted VLM --------------------------------------------------------------------------

TurnFn = Callable[[ProbeTurnInput], ProbeTurnReply]
FinalFn = Callable[[ProbeFinalInput], ProbeFinalReply]


def all_clean(view: ProbeFinalInput) -> ProbeFinalReply:
    verdicts = [
        CropVerdict(id=c["id"], status="Clean", type="none", reasoning="ok", penalty=0.0)
        for c in view.crops
    ]
    return ProbeFinalReply(base_score=4.6, crops=verdicts, summary="clean", final_score=4.6)


class Scripted:
    """Records every view it is shown; replies from the functions it was given."""

    def __init__(self, turn: TurnFn, final: FinalFn = all_clean, fail_final: bool = False):
        self._turn, self._final, self.fail_final = turn, final, fail_final
        self.turns: list[ProbeTurnInput] = []
        self.finals: list[ProbeFinalInput] = []

    @property
    def calls(self) -> int:
        return len(self.turns) + len(self.finals)

    async def turn(self, view: ProbeTurnInput) -> ProbeTurnReply:
        self.turns.append(view)
        return self._turn(view)

    async def final(self, view: ProbeFinalInput) -> ProbeFinalReply:
        self.finals.append(view)
        if self.fail_final:
            raise VLMError("server went away")
        return self._final(view)


def crop_reply(*boxes: list[float], score: float = 4.5) -> ProbeTurnReply:
    return ProbeTurnReply(
        thought="look closer",
        tentative_score=score,
        action="crop",
        boxes=[tuple(b) for b in boxes],  # type: ignore[misc]
    )


def walking_boxes(view: ProbeTurnInput) -> ProbeTurnReply:
    """A new, non-overlapping box every turn: probing never runs out of work."""
    k = view.turn - 1
    x = 0.1 * (k % 8)
    return crop_reply([x, 0.1, x + 0.1, 0.3], [x, 0.6, x + 0.1, 0.8])


def probe(asker: ProbeAsker, image: LoadedImage, **kw: Any) -> ProbeOutcome:
    kw.setdefault("subject", SubjectRecord(box=Box(x1=0, y1=0, x2=1, y2=1), sharp=True))
    return asyncio.run(probe_vlm(asker, image, pixel_budget=kw.pop("pixel_budget", None), **kw))


def loaded(pixels: np.ndarray, name: str = "x.png") -> LoadedImage:
    arr = np.ascontiguousarray(pixels, dtype=np.float32)
    return LoadedImage(path=Path(name), pixels=arr, sha256=hashlib.sha256(arr).hexdigest())


@pytest.fixture
def small() -> LoadedImage:
    return loaded(natural_like(301, 517, seed=3))


# -- geometry --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        [0.1, 0.2, 0.55, 0.9],
        [0.0, 0.0, 1.0, 1.0],
        [0.333, 0.123, 0.777, 0.5],
        [0.85, 0.85, 1.0, 1.0],
    ],
)
def test_crop_is_exactly_the_original_slice(small: LoadedImage, raw: list[float]) -> None:
    h, w = small.pixels.shape[:2]
    book = CropBook(small.pixels)
    (crop,), notes = book.accept([raw], turn=1)
    x1, y1, x2, y2 = raw
    want = small.pixels[
        math.floor(y1 * h) : math.ceil(y2 * h), math.floor(x1 * w) : math.ceil(x2 * w)
    ]
    assert notes == []
    assert crop.native.shape == want.shape
    assert np.array_equal(crop.native, want)
    assert np.shares_memory(crop.native, small.pixels)  # cut from the original, not a resize
    assert crop.sha256 == hashlib.sha256(np.ascontiguousarray(want).tobytes()).hexdigest()
    assert crop.sent is crop.native  # under no budget, sent at native resolution


def test_crops_are_downscaled_only_above_the_budget(small: LoadedImage) -> None:
    book = CropBook(small.pixels, pixel_budget=100 * 100)
    big, tiny = book.accept([[0.0, 0.0, 1.0, 1.0], [0.1, 0.1, 0.25, 0.3]], turn=1)[0]
    assert big.sent.shape[0] * big.sent.shape[1] <= 100 * 100
    assert big.native.shape[:2] == (301, 517)
    assert tiny.sent is tiny.native  # 78 × 61 px fits the budget
    rec = big.record()
    assert rec.size == (517, 301) and rec.sent_size == (big.sent.shape[1], big.sent.shape[0])


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ([0.6, 0.2, 0.4, 0.5], "x1 ≥ x2"),
        ([0.2, 0.5, 0.6, 0.5], "y1 ≥ y2"),
        ([0.2, 0.2, 1.5, 0.9], "outside [0, 1]"),
        ([-0.3, 0.2, 0.5, 0.9], "outside [0, 1]"),
        ([10, 20, 300, 200], "pixel coordinates"),
        ([float("nan"), 0.0, 1.0, 1.0], "not a finite number"),
        ([0.1, 0.1, float("inf"), 0.5], "not a finite number"),
        ([0.1, 0.2, 0.3], "four numbers"),
    ],
)
def test_bad_box_is_rejected_with_a_reason(raw: list[float], why: str) -> None:
    box, note = parse_box(raw)
    assert box is None
    assert note is not None and why in note


def test_a_rounding_slip_is_clamped_and_noted() -> None:
    box, note = parse_box([-0.01, 0.2, 1.02, 0.6])
    assert box is not None and box.as_list() == [0.0, 0.2, 1.0, 0.6]
    assert note is not None and "clamped" in note


def test_tiny_boxes_and_extra_boxes_are_rejected(small: LoadedImage) -> None:
    book = CropBook(small.pixels)
    raws = [[0.1, 0.1, 0.12, 0.5], [0.1, 0.1, 0.5, 0.5], [0.5, 0.5, 0.9, 0.9], [0, 0, 1, 1]]
    crops, notes = book.accept(raws, turn=1)
    assert [c.id for c in crops] == ["crop1", "crop2"]
    assert any("box 1" in n and "each side needs ≥ 32 px" in n for n in notes)
    assert any("box 4 ignored: at most 3" in n for n in notes)


def test_iou_dedup_against_earlier_turns(small: LoadedImage) -> None:
    book = CropBook(small.pixels)
    first, _ = book.accept([[0.1, 0.1, 0.5, 0.5]], turn=1)
    again, notes = book.accept([[0.11, 0.1, 0.5, 0.51], [0.3, 0.1, 0.7, 0.5]], turn=2)
    assert Box(x1=0.11, y1=0.1, x2=0.5, y2=0.51).iou(first[0].box) > 0.7
    assert [c.id for c in again] == ["crop2"]  # IoU 0.33 with crop1: kept
    assert any("repeats crop1 (IoU" in n for n in notes)


def test_a_crop_of_a_pixel_region_cuts_exactly_that_region() -> None:
    """The rules version asks for crops of pixel regions: the crop is that region, not one
    pixel wider where x/W·W lands just below an integer (29/100·100 = 28.999…)."""
    for w, h in ((100, 100), (333, 241), (1920, 1080)):
        book = CropBook(np.zeros((h, w, 3), np.float32))
        for left in range(0, w - 40, 13):
            rect = (left, left % 7, left + 33, left % 7 + 40)
            box = Box.of_pixels(*rect, w, h)
            assert box.pixels(w, h) == rect, (w, left)
        crop, _ = book.add_box(Box.of_pixels(29, 13, 62, 53, w, h), turn=1)
        assert (
            crop is not None
            and crop.pixels == (29, 13, 62, 53)
            and crop.native.shape == (40, 33, 3)
        )


def test_box_pixels_follow_eq9() -> None:
    b = Box(x1=0.1, y1=0.25, x2=0.3001, y2=0.5)
    assert b.pixels(1000, 200) == (100, 50, 301, 100)


@pytest.mark.parametrize(
    ("mode", "w", "h", "want"),
    [
        ("off", 8000, 8000, False),
        ("on", 64, 64, True),
        ("auto", 896, 896, False),  # exactly 4 × 448²
        ("auto", 897, 896, True),
        ("auto", 2048, 2048, True),
    ],
)
def test_should_zoom(mode: str, w: int, h: int, want: bool) -> None:
    assert should_zoom(mode, w, h, 448 * 448) is want


def test_auto_does_not_probe_a_judge_that_reads_every_pixel() -> None:
    assert should_zoom("auto", 4000, 3000, 448 * 448) is True
    assert should_zoom("auto", 4000, 3000, 448 * 448, full_resolution=True) is False
    assert should_zoom("on", 400, 300, 448 * 448, full_resolution=True) is True


def test_should_zoom_rejects_unknown_modes() -> None:
    with pytest.raises(ValueError, match="off, on, auto"):
        should_zoom("always", 10, 10, 100)


# -- the VLM loop ------------------------------------------------------------------------------


@pytest.mark.parametrize("turns", [1, 2, 3, 6])
def test_at_most_turns_calls_when_the_model_always_crops(small: LoadedImage, turns: int) -> None:
    asker = Scripted(walking_boxes)
    out = probe(asker, small, turns=turns)
    assert asker.calls <= turns
    assert out.turns == asker.calls == len(out.records)
    if turns >= 2:
        assert asker.calls == turns  # it did use its budget
        assert len(asker.finals) == 1 and asker.finals[0].forced
        assert asker.finals[0].turn == turns
        assert out.stop == "limit"
        assert len(out.crops) == 2 * (turns - 1)


def test_six_turns_by_default(small: LoadedImage) -> None:
    asker = Scripted(walking_boxes)
    probe(asker, small)
    assert asker.calls == 6 and [v.turn for v in asker.turns] == [1, 2, 3, 4, 5]


def test_each_turn_sees_the_global_view_then_its_new_crops(small: LoadedImage) -> None:
    asker = Scripted(walking_boxes)
    out = probe(asker, small, turns=3)
    first, second = asker.turns
    assert [p.sha256 for p in first.images] == [small.sha256]
    assert [c["id"] for c in second.crops] == ["crop1", "crop2"]
    assert [p.sha256 for p in second.images[1:]] == [c.sha256 for c in out.crops[:2]]
    assert second.history[0]["crops"] == ["crop1", "crop2"]
    final = asker.finals[0]
    assert len(final.images) == 1 + len(out.crops)
    assert final.dynamic() == {"crop_ids": [c.id for c in out.crops]}


def test_bad_boxes_never_crash_and_are_noted(small: LoadedImage) -> None:
    bad = crop_reply([0.6, 0.2, 0.4, 0.5], [0.2, 0.2, 1.5, 0.9], [float("nan"), 0, 1, 1])
    asker = Scripted(lambda v: bad)
    out = probe(asker, small)
    assert out.stop == "no_box" and out.crops == [] and asker.calls == 1
    assert out.final_score == pytest.approx(4.5)  # the tentative score stands
    notes = " | ".join(out.records[0].notes)
    for why in ("x1 ≥ x2", "outside [0, 1]", "not a finite number", "no valid box"):
        assert why in notes


def test_a_valid_box_among_bad_ones_is_still_cut(small: LoadedImage) -> None:
    reply = crop_reply([0.6, 0.2, 0.4, 0.5], [0.1, 0.1, 0.6, 0.6], [0.1, 0.1, 0.11, 0.2])
    asker = Scripted(lambda v: reply if v.turn == 1 else ProbeTurnReply(
        thought="done", tentative_score=4.0, action="final", boxes=[]))  # fmt: skip
    out = probe(asker, small)
    assert [c.id for c in out.crops] == ["crop1"]
    assert out.crops[0].box.as_list() == [0.1, 0.1, 0.6, 0.6]
    assert out.stop == "final" and asker.calls == 3  # crop turn, final action, judgement
    assert any("each side needs" in n for n in out.records[0].notes)


def test_the_same_box_again_stops_probing(small: LoadedImage) -> None:
    asker = Scripted(lambda v: crop_reply([0.2, 0.2, 0.6, 0.6]))
    out = probe(asker, small)
    assert len(out.crops) == 1 and out.stop == "no_box" and asker.calls == 3
    assert any("repeats crop1" in n for n in out.records[1].notes)


def test_final_at_turn_one_makes_no_judgement_call(small: LoadedImage) -> None:
    done = ProbeTurnReply(thought="clean", tentative_score=4.7, action="final", boxes=[])
    asker = Scripted(lambda v: done)
    out = probe(asker, small)
    assert asker.calls == 1 and out.final_score == pytest.approx(4.7) and out.stop == "final"


def verdicts(*items: tuple[str, str, float]) -> FinalFn:
    def final(view: ProbeFinalInput) -> ProbeFinalReply:
        got = [
            CropVerdict(id=c["id"], status=s, type=t, reasoning="seen", penalty=p)  # type: ignore[arg-type]
            for c, (s, t, p) in zip(view.crops, items, strict=False)
        ]
        return ProbeFinalReply(base_score=4.8, crops=got, summary="as seen", final_score=4.9)

    return final


def test_final_score_is_recomputed_in_code(small: LoadedImage) -> None:
    asker = Scripted(
        lambda v: crop_reply([0.0, 0.0, 0.4, 0.4], [0.5, 0.5, 0.9, 0.9]),
        verdicts(("Degraded", "mosaic", 0.5), ("Clean", "none", 0.3)),
    )
    out = probe(asker, small, turns=2)
    assert out.base_score == 4.8
    assert out.penalty == pytest.approx(0.5)  # the clean crop's 0.3 does not count
    assert out.final_score == pytest.approx(4.3)  # the paper's 4.8 - 0.5
    assert out.reply_final_score == 4.9
    assert any("4.90 replaced" in n for n in out.notes)
    clean = out.crops[1]
    assert clean.penalty_asked == 0.3 and clean.penalty == 0.0 and "zero-penalty" in str(clean.note)
    assert [f.category for f in out.findings()] == ["Compression"]


def test_final_score_is_clipped_to_one(small: LoadedImage) -> None:
    asker = Scripted(
        lambda v: crop_reply([0.0, 0.0, 0.4, 0.4], [0.5, 0.5, 0.9, 0.9]),
        verdicts(("Degraded", "jpeg", 2.0), ("Degraded", "grid", 2.0)),
    )
    out = probe(asker, small, turns=2)
    assert out.penalty == pytest.approx(4.0) and out.final_score == 1.0


def test_verdicts_for_unknown_or_missing_crops_are_noted(small: LoadedImage) -> None:
    def final(view: ProbeFinalInput) -> ProbeFinalReply:
        stray = CropVerdict(id="crop9", status="Degraded", type="jpeg", reasoning="?", penalty=1)
        return ProbeFinalReply(base_score=4.0, crops=[stray], summary="", final_score=3.0)

    out = probe(Scripted(lambda v: crop_reply([0.0, 0.0, 0.5, 0.5]), final), small, turns=2)
    assert out.final_score == 4.0 and out.crops[0].status == "Unjudged"
    assert any("unknown crop 'crop9'" in n for n in out.notes)


def test_a_failed_judgement_falls_back_to_the_tentative_score(small: LoadedImage) -> None:
    asker = Scripted(lambda v: crop_reply([0.0, 0.0, 0.5, 0.5], score=3.5), fail_final=True)
    out = probe(asker, small, turns=2)
    assert out.stop == "error" and out.final_score == 3.5
    assert [c.status for c in out.crops] == ["Unjudged"] and out.penalty == 0.0
    assert any("server went away" in n for n in out.notes)


def test_a_failed_first_turn_propagates(small: LoadedImage) -> None:
    def boom(view: ProbeTurnInput) -> ProbeTurnReply:
        raise VLMError("refused")

    with pytest.raises(VLMError, match="refused"):
        probe(Scripted(boom), small)


def test_trace_steps_probe_and_crop(small: LoadedImage) -> None:
    steps: list[tuple[str, dict[str, Any]]] = []
    out = probe(Scripted(walking_boxes), small, turns=3, emit=lambda s, p: steps.append((s, p)))
    assert [s for s, _ in steps] == ["probe", "crop", "crop", "probe", "crop", "crop", "probe"]
    crops = [p for s, p in steps if s == "crop"]
    assert [c["sha256"] for c in crops] == [c.sha256 for c in out.crops]
    assert crops[0]["box"] == out.crops[0].box.model_dump()
    assert steps[-1][1]["action"] == "final" and steps[-1][1]["forced"] is True


# -- the bokeh rule ----------------------------------------------------------------------------


def test_blur_away_from_the_subject_is_not_penalized(small: LoadedImage) -> None:
    left = SubjectRecord(box=Box(x1=0.0, y1=0.0, x2=0.5, y2=1.0), sharp=True)
    boxes = ([0.05, 0.2, 0.45, 0.8], [0.6, 0.2, 0.95, 0.8], [0.55, 0.0, 0.95, 0.2])
    final = verdicts(
        ("Degraded", "blur", 1.0), ("Degraded", "blur", 1.0), ("Degraded", "noise", 0.5)
    )
    out = probe(Scripted(lambda v: crop_reply(*boxes), final), small, turns=2, subject=left)
    on, off, noisy = out.crops
    assert on.on_subject and on.penalty == 1.0
    assert not off.on_subject and off.penalty == 0.0 and "bokeh rule" in str(off.note)
    assert noisy.penalty == 0.5  # only blur is exempt away from the subject
    assert out.final_score == pytest.approx(4.8 - 1.5)
    # nothing in focus at all: then blur counts anywhere
    soft = SubjectRecord(box=left.box, sharp=False)
    out2 = probe(Scripted(lambda v: crop_reply(*boxes), final), small, turns=2, subject=soft)
    assert out2.penalty == pytest.approx(2.5)


# -- real detectors on photo-like images -------------------------------------------------------

PATCH = (1100, 700, 256)  # top, left, side


def _photo_canvas(side: int = 2048) -> np.ndarray:
    """Sixteen scikit-image photos at about native size, plus a little sensor noise."""
    photos = [data.astronaut(), data.coffee(), data.chelsea(), data.rocket(),
              data.retina(), np.stack([data.camera()] * 3, axis=-1)]  # fmt: skip
    t = side // 4
    canvas = np.zeros((side, side, 3), np.float32)
    for k in range(16):
        i, j = divmod(k, 4)
        im = Image.fromarray(photos[k % len(photos)][..., :3]).resize((t, t), Image.LANCZOS)
        canvas[i * t : (i + 1) * t, j * t : (j + 1) * t] = np.asarray(im, np.float32) / 255
    canvas += np.random.default_rng(0).normal(0, 0.004, canvas.shape).astype(np.float32)
    return np.clip(canvas, 0, 1)


def _mosaic(px: np.ndarray, block: int = 16) -> np.ndarray:
    y, x, s = PATCH
    out = px.copy()
    blocks = out[y : y + s, x : x + s].reshape(s // block, block, s // block, block, 3)
    out[y : y + s, x : x + s] = np.repeat(np.repeat(blocks.mean(axis=(1, 3)), block, 0), block, 1)
    return out


def _jpeg(px: np.ndarray, quality: int = 5) -> np.ndarray:
    y, x, s = PATCH
    out = px.copy()
    buf = io.BytesIO()
    u8 = (out[y : y + s, x : x + s] * 255 + 0.5).astype(np.uint8)
    Image.fromarray(u8).save(buf, "JPEG", quality=quality)
    out[y : y + s, x : x + s] = np.asarray(Image.open(buf).convert("RGB"), np.float32) / 255
    return out


@pytest.fixture(scope="module")
def canvases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, LoadedImage]:
    folder = tmp_path_factory.mktemp("probe")
    clean = _photo_canvas()
    arrays = {"clean": clean, "mosaic": _mosaic(clean), "jpeg": _jpeg(clean)}
    return {k: load_image(save_rgb(folder / f"{k}.png", v)) for k, v in arrays.items()}


def _covers(px: tuple[int, int, int, int]) -> bool:
    y, x, s = PATCH
    return px[0] <= x and px[1] <= y and px[2] >= x + s and px[3] >= y + s


@pytest.mark.parametrize("kind", ["mosaic", "jpeg"])
def test_rules_probe_finds_a_local_patch_the_global_view_misses(
    canvases: dict[str, LoadedImage], kind: str
) -> None:
    clean, bad = canvases["clean"], canvases[kind]
    # the global detectors read the patched image as they read the clean one
    before = {f.category: f.severity for f in detect(clean)}
    after = {f.category: f.severity for f in detect(bad)}
    for category in ("Blurs", "Compression"):  # pixelation is a Compression finding
        assert after[category] == before[category]
        assert SEVERITIES.index(after[category]) < SEVERITIES.index("moderate")
    ok = probe_rules(clean)
    assert ok.crops == [] and ok.final_score == ok.base_score
    out = probe_rules(bad)
    hits = [c for c in out.crops if c.status == "Degraded" and _covers(c.pixels)]
    assert hits, [(c.pixels, c.status) for c in out.crops]
    # heavy JPEG flattens its 8×8 blocks, so it may read as mosaic too
    assert hits[0].type == "mosaic" if kind == "mosaic" else hits[0].type in ("mosaic", "jpeg")
    assert out.final_score < ok.final_score
    assert out.final_score == pytest.approx(out.base_score - out.penalty)
    assert probe_rules(bad).model_dump() == out.model_dump()  # deterministic


def test_what_the_global_view_already_saw_is_not_charged_twice(
    canvases: dict[str, LoadedImage],
) -> None:
    # the caller's whole-image readings are used: here they say the whole image is pixelated
    seen = probe_rules(canvases["mosaic"], readings={"pixelation": 0.9}, base_score=2.0)
    assert not [c for c in seen.degraded if c.type == "mosaic"]
    assert seen.base_score == 2.0 and seen.final_score == 2.0


def test_rules_probe_traces_and_keeps_the_turn_budget(canvases: dict[str, LoadedImage]) -> None:
    steps: list[str] = []
    out = probe_rules(canvases["mosaic"], emit=lambda s, p: steps.append(s), turns=1)
    assert out.crops == [] and out.stop == "limit" and steps == ["probe"]
    out = probe_rules(canvases["mosaic"], emit=lambda s, p: steps.append(s), turns=6)
    assert steps[1:] == ["crop"] * len(out.crops) + ["probe", "probe"]
    assert out.turns == len(out.records) <= 6


@pytest.mark.parametrize(("rows", "quality"), [(768, 85), (512, 80)])
def test_an_ordinary_jpeg_with_a_smooth_sky_is_left_alone(
    tmp_path: Path, rows: int, quality: int
) -> None:
    """Mild JPEG blocking is everywhere in camera files and stands out most in flat sky,
    relative to nothing: the probe must not call that a local defect."""
    c = _photo_canvas()
    sky = np.linspace(0.4, 0.8, rows, dtype=np.float32)[:, None, None] * np.array(
        [0.8, 0.9, 1.0], np.float32
    )
    c[:rows] = sky
    image = load_image(save_rgb(tmp_path / "sky.jpg", c, quality=quality))
    out = probe_rules(image)
    assert out.degraded == [], [(x.type, x.severity, x.pixels) for x in out.degraded]


def _flat_graphic(side: int = 2048, shapes: int = 60) -> np.ndarray:
    """Flat-colour discs and triangles with hard edges, as in vector wallpapers."""
    rng = np.random.default_rng(0)
    im = Image.new("RGB", (side, side), (40, 44, 52))
    draw = ImageDraw.Draw(im)
    for _ in range(shapes):
        x, y = (int(v) for v in rng.integers(0, side, 2))
        r = int(rng.integers(40, 300))
        colour = tuple(int(v) for v in rng.integers(0, 255, 3))
        if rng.random() < 0.5:
            draw.ellipse([x - r, y - r, x + r, y + r], fill=colour)
        else:
            corners = [tuple(int(v) for v in rng.integers(0, side, 2)) for _ in range(3)]
            draw.polygon(corners, fill=colour)
    return np.asarray(im, np.float32) / 255


@pytest.mark.parametrize("kind", ["graphic", "seams"])
def test_flat_graphics_and_straight_edges_are_not_artefacts(kind: str) -> None:
    """Flat runs beside hard edges are not a mosaic unless the edges form a lattice, and
    one strong straight edge inside a cell (here the seams between the canvas's photos,
    shifted off the cell grid) is not a JPEG grid."""
    px = _flat_graphic() if kind == "graphic" else _photo_canvas()[37:, 61:]
    out = probe_rules(loaded(px))
    assert out.degraded == [], [(x.type, x.severity, x.pixels) for x in out.degraded]


def _sky_canvas(rows: int = 768) -> np.ndarray:
    """The photo canvas under a smooth 8-bit sky gradient (every level present)."""
    c = _photo_canvas()
    c[:rows] = np.linspace(0.4, 0.8, rows, dtype=np.float32)[:, None, None] * np.array(
        [0.8, 0.9, 1.0], np.float32
    )
    return np.round(c * 255) / 255


BAND = (300, 900, 256)  # top, left, side: in the sky


def _limits(out: ProbeOutcome) -> None:
    assert out.turns <= MAX_TURNS
    for rec in out.records:
        assert len(rec.crops) <= MAX_BOXES


@pytest.mark.parametrize("kind", ["noise", "banding"])
def test_rules_probe_finds_a_noisy_or_banded_patch(kind: str) -> None:
    if kind == "noise":
        y, x, s = PATCH
        px = _photo_canvas()
        noise = np.random.default_rng(1).normal(0, 0.06, (s, s, 3)).astype(np.float32)
        px[y : y + s, x : x + s] = np.clip(px[y : y + s, x : x + s] + noise, 0, 1)
        clean = _photo_canvas()
    else:
        y, x, s = BAND
        clean = _sky_canvas()
        px = clean.copy()
        px[y : y + s, x : x + s] = np.round(px[y : y + s, x : x + s] * 15) / 15  # 4-bit bands
    assert probe_rules(loaded(clean)).degraded == []
    out = probe_rules(loaded(px))
    _limits(out)
    want = "noise" if kind == "noise" else "posterize"
    hits = [
        c for c in out.degraded
        if c.type == want and c.pixels[0] <= x and c.pixels[1] <= y
        and c.pixels[2] >= x + s and c.pixels[3] >= y + s
    ]  # fmt: skip
    assert hits, [(c.type, c.severity, c.pixels) for c in out.crops]
    assert out.final_score < out.base_score


def test_rules_probe_charges_a_blurred_patch_on_the_subject() -> None:
    y, x, s = 140, 1200, 256  # textured content (a sharp part of the canvas)
    px = _photo_canvas()
    px[y : y + s, x : x + s] = ndimage.gaussian_filter(px[y : y + s, x : x + s], (4, 4, 0))
    out = probe_rules(loaded(px))
    _limits(out)
    (hit,) = [c for c in out.degraded if c.type == "blur"]
    assert hit.penalty > 0 and hit.on_subject
    assert hit.box.intersection(Box.of_pixels(x, y, x + s, y + s, 2048, 2048)) > 0


@pytest.fixture(scope="module")
def bokeh() -> LoadedImage:
    """A sharp subject (the astronaut, native 512²) on a strongly blurred photo background."""
    bg = _photo_canvas(1536)
    bg = ndimage.gaussian_filter(bg, sigma=(8, 8, 0))
    bg[512:1024, 512:1024] = data.astronaut().astype(np.float32) / 255
    return loaded(bg, "bokeh.png")


def test_subject_is_the_sharp_region(bokeh: LoadedImage) -> None:
    s = find_subject(bokeh)
    assert s.sharp and s.box is not None
    centre = Box(x1=1 / 3, y1=1 / 3, x2=2 / 3, y2=2 / 3)
    assert s.box.intersection(centre) >= 0.8 * centre.area  # it holds the astronaut
    assert s.box.area <= 0.5  # and not the blurred background around it


def test_sharp_subject_on_blurred_background_gets_no_blur_penalty(bokeh: LoadedImage) -> None:
    out = probe_rules(bokeh)
    assert out.penalty == 0.0 and out.final_score == out.base_score
    # the blurred background reads blurred cell by cell, but it runs on around the subject:
    # depth of field, not a local defect (a soft patch inside sharp content is one, below)
    _limits(out)
    assert not [c for c in out.crops if c.type == "blur" and c.status == "Degraded"]
    # the VLM version: a model that calls the background blurred is overruled by the code
    final = verdicts(("Degraded", "blur", 1.0), ("Degraded", "blur", 0.5))
    asker = Scripted(lambda v: crop_reply([0.0, 0.0, 0.3, 0.3], [0.4, 0.4, 0.6, 0.6]), final)
    vlm = asyncio.run(probe_vlm(asker, bokeh, pixel_budget=448 * 448, turns=2))
    background, subject = vlm.crops
    assert background.penalty == 0.0 and "bokeh" in str(background.note)
    assert subject.penalty == 0.5
    assert max(vlm.crops[0].sent_size) <= 448  # 461² px crop shown within the budget


# -- the prompts -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def prompts() -> dict[str, Any]:
    return load_prompts(default_prompts_dir())


@pytest.mark.parametrize("role", ["probe", "probe_final"])
def test_probe_prompts_are_bounded_and_examples_validate(
    prompts: dict[str, Any], role: str
) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    spec = prompts[role]
    assert (
        declared_role(role).reply is {"probe": ProbeTurnReply, "probe_final": ProbeFinalReply}[role]
    )
    schema = spec.schema_for(**spec.example_vars)
    assert schema_problems(schema) == []
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(spec.example)
    declared_role(role).reply.model_validate(spec.example)
    assert list(schema["properties"]) == list(declared_role(role).reply.model_fields)


def _numbers(schema: Any, path: str = "$") -> list[tuple[str, list[float]]]:
    """Every numeric enum in a schema, with where it is."""
    found: list[tuple[str, list[float]]] = []
    if isinstance(schema, dict):
        enum = schema.get("enum")
        if enum and all(isinstance(v, int | float) for v in enum):
            found.append((path, enum))
        for k, v in schema.items():
            found += _numbers(v, f"{path}.{k}")
    elif isinstance(schema, list):
        for i, v in enumerate(schema):
            found += _numbers(v, f"{path}[{i}]")
    return found


@pytest.mark.parametrize("role", ["probe", "probe_final"])
def test_numbers_are_bounded_grids_within_the_reply_models(
    prompts: dict[str, Any], role: str
) -> None:
    """A bare JSON number lets constrained decoding run on through its digits: every number
    in the probe schemas is an enum, on a grid inside the reply model's bounds."""
    schema = (
        prompts[role].schema_for(crop_ids=["crop1"])
        if role == "probe_final"
        else (prompts[role].schema_for())
    )
    assert '"number"' not in json.dumps(schema)
    grids = dict(_numbers(schema))
    for path, values in grids.items():
        bounds = {"score": (1.0, 5.0), "penalty": (0.0, 2.0), "boxes": (0.0, 1.0)}
        lo, hi = next(b for key, b in bounds.items() if key in path)
        assert min(values) == lo and max(values) == hi, path
        assert len(values) >= 41, path
    assert len(grids) == (2 if role == "probe" else 3)


def test_final_schema_wants_one_verdict_per_crop_in_order(prompts: dict[str, Any]) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = prompts["probe_final"].schema_for(crop_ids=["crop1", "crop2"])
    item = schema["properties"]["crops"]["prefixItems"][0]
    assert tuple(item["properties"]["type"]["enum"]) == ARTEFACT_TYPES
    check = jsonschema.Draft202012Validator(schema)
    v = {"status": "Clean", "type": "none", "reasoning": "", "penalty": 0}
    reply = {"base_score": 4.5, "summary": "", "final_score": 4.5}
    assert check.is_valid({**reply, "crops": [{"id": "crop1", **v}, {"id": "crop2", **v}]})
    assert not check.is_valid({**reply, "crops": [{"id": "crop2", **v}, {"id": "crop1", **v}]})
    assert not check.is_valid({**reply, "crops": [{"id": "crop1", **v}]})
    assert not check.is_valid({**reply, "crops": [{"id": "crop1", **v, "penalty": 2.5}] * 2})


def test_probe_prompts_render_from_the_loop_views(
    prompts: dict[str, Any], small: LoadedImage
) -> None:
    asker = Scripted(walking_boxes)
    probe(asker, small, turns=3)
    turn = asker.turns[1]
    system, user = prompts["probe"].render(turn.images, **turn.variables())
    assert user.images == turn.images and len(user.images) == 3
    assert "crop1: box" in system.text and "turn 2 of at most 3" in system.text
    assert "natural" in system.text and "4.5" in system.text
    final = asker.finals[0]
    system, user = prompts["probe_final"].render(final.images, **final.variables())
    assert "crop4: box" in system.text and "used all your turns" in system.text
    assert "never penalized" in system.text
    prompts["probe_final"].schema_for(**final.dynamic())
