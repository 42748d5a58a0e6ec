"""The default `rules` agent on real photos: distortions named, severities rising, no false blur."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from scipy.ndimage import gaussian_filter

from agentiqa_cli.batch import Decoder, Pair
from agentiqa_cli.bench.synth import sample_photos
from agentiqa_cli.categories import category_of_kind
from agentiqa_cli.config import Settings
from agentiqa_cli.imaging.discover import Job
from agentiqa_cli.imaging.distort import distort
from agentiqa_cli.records import SEVERITIES
from agentiqa_cli.wiring import build_runtime

# synthetic kinds the rules agent must name, each under its category (agentiqa_cli/categories.py)
CHECKED_KINDS = ("blur", "brighten", "contrast", "darken", "jpeg", "noise")


@pytest.fixture(scope="module")
def photo(tmp_path_factory: pytest.TempPathFactory) -> np.ndarray:
    d = tmp_path_factory.mktemp("photos")
    (p,) = sample_photos(d, 384, names=("astronaut",))
    return np.asarray(Image.open(p).convert("RGB"), dtype=np.float32) / 255.0


def assess(
    tmp: Path, arrays: dict[str, np.ndarray], query: str | None = None, fusion: str | None = None
) -> dict[str, object]:
    extra = ({"query": query} if query else {}) | ({"fusion": fusion} if fusion else {})
    settings = Settings(concurrency=2, **extra)  # type: ignore[arg-type]
    dec = Decoder(10**8)
    pairs = []
    for name, arr in arrays.items():
        path = tmp / f"{name}.png"
        Image.fromarray((np.clip(arr, 0, 1) * 255).round().astype(np.uint8)).save(path)
        job = Job(image=path, root=tmp)
        img, ref = dec.decode(job)
        pairs.append(Pair(job, img, ref, key=name))

    async def go() -> list[object]:
        async with build_runtime(settings) as rt:
            agent = await rt.agent()
            return await asyncio.gather(*(agent(p) for p in pairs))

    return dict(zip(arrays, asyncio.run(go()), strict=True))


def worst(result: object, category: str) -> int:
    sev = [f.severity for f in result.distortions if f.category == category]  # type: ignore[attr-defined]
    return max((SEVERITIES.index(s) for s in sev), default=0)


@pytest.mark.parametrize("kind", CHECKED_KINDS)
def test_distortion_named_with_rising_severity(
    tmp_path: Path, photo: np.ndarray, kind: str
) -> None:
    arrays = {"clean": photo}
    arrays |= {
        f"{kind}{lv}": distort(photo, kind, lv, np.random.default_rng(lv)) for lv in (2, 3, 5)
    }
    res = assess(tmp_path, arrays)
    cat = category_of_kind(kind)
    sev = [worst(res[f"{kind}{lv}"], cat) for lv in (2, 3, 5)]
    assert sev[-1] >= SEVERITIES.index("severe"), (kind, sev)
    assert sev == sorted(sev) and sev[1] >= SEVERITIES.index("moderate"), (kind, sev)
    scores = [res[n].score for n in ("clean", f"{kind}2", f"{kind}3", f"{kind}5")]  # type: ignore[attr-defined]
    assert scores == sorted(scores, reverse=True), (kind, scores)
    assert worst(res["clean"], cat) <= SEVERITIES.index("slight")
    answer = res[f"{kind}5"].answer.lower()  # type: ignore[attr-defined]
    assert cat.lower() in answer


def test_soft_background_is_not_blur(tmp_path: Path, photo: np.ndarray) -> None:
    """A sharp subject before an out-of-focus background (shallow depth of field)."""
    h, w = photo.shape[:2]
    soft = np.stack([gaussian_filter(photo[..., c], 6) for c in range(3)], axis=2)
    yy, xx = np.mgrid[0:h, 0:w]
    subject = ((yy - h * 0.45) / (h * 0.3)) ** 2 + ((xx - w * 0.5) / (w * 0.22)) ** 2 < 1
    bokeh = np.where(subject[..., None], photo, soft)
    res = assess(tmp_path, {"bokeh": bokeh, "blurred": soft})
    assert worst(res["bokeh"], "Blurs") <= SEVERITIES.index("slight")
    assert worst(res["blurred"], "Blurs") >= SEVERITIES.index("severe")


def test_region_query_replans_to_get_evidence(tmp_path: Path, photo: np.ndarray) -> None:
    """A region query plans no tools (App. A.2); the summarizer finds that insufficient and
    the replan runs them, so the answer still rests on measurements."""
    blurred = np.stack([gaussian_filter(photo[..., c], 4) for c in range(3)], axis=2)
    res = assess(tmp_path, {"b": blurred}, query="Is the face in focus?")
    r = res["b"]
    assert r.tools and r.score is not None  # type: ignore[attr-defined]
    assert worst(r, "Blurs") >= SEVERITIES.index("moderate")


@pytest.mark.parametrize(
    ("query", "noisy", "clean"),
    [("Is the sky noisy?", "Yes", "No"), ("Is the image free of noise?", "No", "Yes")],
)
def test_yes_no_question_gets_a_yes_no_answer_with_the_measurement(
    tmp_path: Path, photo: np.ndarray, query: str, noisy: str, clean: str
) -> None:
    grainy = distort(photo, "noise", 4, np.random.default_rng(4))
    res = assess(tmp_path, {"noisy": grainy, "clean": photo}, query=query)
    for name, want in (("noisy", noisy), ("clean", clean)):
        answer = res[name].answer  # type: ignore[attr-defined]
        assert answer.startswith(f"{want}. noise "), (name, answer)
        # the measurement it rests on: the noise detector's sigma or the camera model's head,
        # whichever read the image's noise worse
        assert "sigma" in answer or "reads sensor noise at" in answer, answer


def test_a_cast_question_is_answered_from_the_cast_reading_not_another_colour_detector(
    tmp_path: Path, photo: np.ndarray
) -> None:
    # a white-balance error of +50% red, -35% blue; no finding can tell it from scene colour
    # (tools/severity.py), so the answer gives the reading and says what it cannot tell, and
    # never cites posterization or clipping for a question about a cast
    cast = np.clip(photo * np.array([1.5, 1.0, 0.65], np.float32), 0, 1)
    res = assess(tmp_path, {"cast": cast, "clean": photo}, query="Does it have a colour cast?")
    answer = res["cast"].answer  # type: ignore[attr-defined]
    assert answer.startswith("Cannot tell without a reference. colour cast reading 0."), answer
    assert float(answer.split("reading ")[1][:4]) > 0.3, answer
    assert res["clean"].answer.startswith("No. colour cast reading 0.0"), res["clean"].answer  # type: ignore[attr-defined]
    good = assess(tmp_path, {"clean": photo}, query="Is the white balance correct?")["clean"]
    assert good.answer.startswith("Yes. colour cast reading 0.0"), good.answer  # type: ignore[attr-defined]


def test_agent_rests_on_its_tools_and_caps_only_by_visible_findings(
    tmp_path: Path, photo: np.ndarray
) -> None:
    """Without a VLM (no level probabilities) the agent's score is what `score` reports for
    the image (its default set, fused the same way) when nothing moderate or worse was
    found, and that score capped by the detector of each visible finding otherwise (so a
    "severe blur" is never scored "good"); within each distortion series it follows the
    level at least as well as `score` does."""
    from scipy.stats import spearmanr

    from agentiqa_cli.agent.fusion import capped
    from agentiqa_cli.resources import default_cards_dir
    from agentiqa_cli.scoring import fuse_tools
    from agentiqa_cli.tools.cards import load_cards

    default_nr = [c.name for c in load_cards(default_cards_dir()).default_set(False)]

    rng = np.random.default_rng(0)
    arrays = {"clean": photo}
    kinds = ("blur", "noise", "jpeg", "darken", "contrast")
    for kind in kinds:
        for lv in (1, 3, 5):
            arrays[f"{kind}{lv}"] = distort(photo, kind, lv, rng)
    res = assess(tmp_path, arrays)
    plain: dict[str, float] = {}
    for name, r in res.items():
        by_tool = {t.tool: t.norm for t in r.tools if t.ok}  # type: ignore[attr-defined]
        plain[name] = fuse_tools([by_tool[n] for n in default_nr], Settings().fusion)
        visible = [f for f in r.distortions if f.severity in ("moderate", "severe", "extreme")]  # type: ignore[attr-defined]
        if not visible:
            assert r.score == pytest.approx(plain[name])  # type: ignore[attr-defined]
        # the cap reads every detector's evidence, the row lists the tools it fused: a
        # detector of the category far above the lowest moves the soft minimum a little
        assert r.score == pytest.approx(capped(plain[name], visible, r.tools), abs=0.01)  # type: ignore[attr-defined]
    for kind in kinds:
        names = ["clean", f"{kind}1", f"{kind}3", f"{kind}5"]
        agent = spearmanr([0, 1, 3, 5], [res[n].score for n in names])[0]  # type: ignore[attr-defined]
        tools = spearmanr([0, 1, 3, 5], [plain[n] for n in names])[0]
        assert -agent >= -tools - 1e-9, (kind, agent, tools)


@pytest.mark.parametrize("fusion", ["mean", "min"])
def test_the_answer_says_the_level_the_score_says(
    tmp_path: Path, photo: np.ndarray, fusion: str
) -> None:
    arrays = {f"noise{lv}": distort(photo, "noise", lv, np.random.default_rng(lv)) for lv in (1, 5)}
    res = assess(tmp_path, arrays, fusion=fusion)
    for r in res.values():
        assert r.answer.lower().startswith(r.level), (fusion, r.score, r.answer)  # type: ignore[attr-defined]


def test_cast_answer_reads_the_question() -> None:
    from agentiqa_cli.agent.rules import CAST_SEEN, cast_answer

    low, high = {"colorcast": CAST_SEEN / 2}, {"colorcast": 0.4}
    assert cast_answer("Does it have a colour cast?", low).startswith("No. colour cast reading")  # type: ignore[union-attr]
    assert cast_answer("Is the white balance correct?", low).startswith("Yes. ")  # type: ignore[union-attr]
    hedged = cast_answer("Is it tinted blue?", high)
    assert hedged is not None and hedged.startswith("Cannot tell without a reference.")
    assert "±35%" in hedged  # exp(0.75 * 0.4) - 1: the channel gain the reading corresponds to
    # not questions about the light's colour, not yes/no questions, or no reading: no answer
    assert cast_answer("Does the tree cast a shadow?", high) is None
    assert cast_answer("Describe the colour cast.", high) is None
    assert cast_answer("Does it have a colour cast?", {}) is None


def test_the_agents_evidence_is_the_signal_detectors_only() -> None:
    """The builtin FR measure (``detail``) is no signal detector: the agent does not read it
    on every image as evidence (without --ref it could only fail there)."""

    async def go() -> list[str]:
        async with build_runtime(Settings()) as rt:
            return [c.name for c in (await rt.agent()).evidence_cards]

    names = asyncio.run(go())
    assert "sharpness" in names and "noise" in names and "detail" not in names


def test_low_light_is_named_as_dark_and_noisy() -> None:
    from agentiqa_cli.agent.rules import low_light
    from agentiqa_cli.records import Finding

    dark = Finding(category="Brightness change", severity="severe", says="under-exposed")
    bright = Finding(category="Brightness change", severity="severe", says="over-exposed")
    noisy = Finding(category="Noise", severity="moderate")
    quiet = Finding(category="Noise", severity="none")
    assert low_light([dark, noisy])
    assert not low_light([dark, quiet])  # dark but clean: under-exposure alone
    assert not low_light([bright, noisy])


def test_assess_says_which_way_an_exposure_went_and_names_low_light(
    tmp_path: Path, photo: np.ndarray
) -> None:
    rng = np.random.default_rng(0)
    dark = photo * 0.25
    out = assess(
        tmp_path,
        {
            "dark": dark,
            "dark_noisy": dark + rng.normal(0.0, 0.04, photo.shape),
            "bright": distort(photo, "brighten", 5, rng),
        },
    )
    cells = {k: r.distortions_cell() for k, r in out.items()}  # type: ignore[attr-defined]
    answers = {k: r.answer for k, r in out.items()}  # type: ignore[attr-defined]
    # the reply names the category, the readings say which way (the CSV and the answer)
    assert "brightness_change(under-exposed)" in cells["dark"], cells
    assert "brightness_change(over-exposed)" in cells["bright"], cells
    assert "brightness change (under-exposed)" in answers["dark"], answers
    assert "brightness change (over-exposed)" in answers["bright"], answers
    assert "low light: dark and noisy" in answers["dark_noisy"], answers
    assert "low light" not in answers["dark"] and "low light" not in answers["bright"]
