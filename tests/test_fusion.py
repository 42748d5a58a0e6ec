"""Score fusion (AgenticIQA §3.3, Eqs. 4–5) and level log-probabilities read off a reply."""

from __future__ import annotations

import math

import pytest

from agentiqa_cli.agent.fusion import fuse, gaussian_weights, level_logprobs, softmax_levels
from agentiqa_cli.vlm.base import VLMReply


def test_gaussian_weights_eq4() -> None:
    a = gaussian_weights(3.0)
    z = sum(math.exp(-((3 - c) ** 2)) for c in range(1, 6))
    assert a[2] == pytest.approx(1 / z)
    assert a[0] == pytest.approx(math.exp(-4) / z)
    assert sum(a) == pytest.approx(1.0)


def test_fuse_by_hand() -> None:
    p = [0.1, 0.1, 0.2, 0.4, 0.2]
    qbar = 2.5
    alpha = [math.exp(-((qbar - c) ** 2)) for c in range(1, 6)]
    num = sum(a * pc * c for a, pc, c in zip(alpha, p, range(1, 6), strict=True))
    den = sum(a * pc for a, pc in zip(alpha, p, strict=True))
    assert fuse(2.5, p) == pytest.approx(num / den)


def test_fuse_edge_cases() -> None:
    p = [0.0, 0.0, 0.0, 1.0, 0.0]
    assert fuse(None, p) == pytest.approx(4.0)  # no tools: Σ p c
    assert fuse(None, None) == pytest.approx(3.0)  # uniform p
    # no level probabilities: the score is the tools' q̄ itself, never pulled to the middle
    assert fuse(1.2, None) == pytest.approx(1.2) and fuse(4.8, None) == pytest.approx(4.8)
    # stays on the 1-5 scale whatever the inputs
    for q in (1.0, 2.2, 3.7, 5.0):
        for pp in ([1, 0, 0, 0, 0], [0, 0, 0, 0, 1], [0.2] * 5):
            assert 1.0 <= fuse(q, pp) <= 5.0


def test_fuse_monotone_in_tools() -> None:
    scores = [fuse(q, None) for q in (1.0, 1.5, 2.0, 3.0, 4.0, 4.5, 5.0)]
    assert scores == sorted(scores)


def test_softmax_renormalises_over_five_with_floor() -> None:
    p = softmax_levels({"good": math.log(0.6), "excellent": math.log(0.2)})
    assert sum(p) == pytest.approx(1.0)
    assert p[3] == pytest.approx(0.75, abs=1e-4) and p[4] == pytest.approx(0.25, abs=1e-4)
    assert 0 < p[0] < 1e-5


def test_level_logprobs_at_json_position() -> None:
    reply = VLMReply(
        text='{"level":"good","answer":"x"}',
        tokens=['{"', "level", '":"', "good", '","', "answer"],
        top_logprobs=[{}, {}, {}, {"good": -0.2, "fair": -1.9, "the": -3.0}, {}, {}],
    )
    lp = level_logprobs(reply, '{"level":"')
    assert lp == {"good": pytest.approx(-0.2), "fair": pytest.approx(-1.9)}
    # a bare choice answer: the first position
    choice = VLMReply(text="poor", tokens=["po", "or"], top_logprobs=[{"po": -0.1, "b": -2.0}, {}])
    assert set(level_logprobs(choice) or {}) == {"poor", "bad"}
    assert level_logprobs(VLMReply(text="good")) is None


def test_visible_findings_cap_the_score_and_weak_ones_do_not() -> None:
    from agentiqa_cli.agent.fusion import capped
    from agentiqa_cli.records import Finding, ToolScore

    evidence = [
        ToolScore(tool="sharpness", raw=0.3, norm=2.2),
        ToolScore(tool="noise", raw=0.001, norm=4.9),
    ]
    severe_blur = Finding(category="Blurs", severity="severe", reason="r")
    # severe blur: the score is what the blur detector says, not the mean's "good"
    assert capped(4.4, [severe_blur], evidence) == pytest.approx(2.2)
    # nothing moderate or worse: the score rests on the tools' evidence alone
    slight = Finding(category="Noise", severity="slight", reason="r")
    assert capped(4.4, [slight], evidence) == pytest.approx(4.4)
    # a model's finding without a detector reading caps at the top of its severity band
    vlm = Finding(category="Contrast", severity="moderate", reason="r")
    assert capped(4.4, [vlm], evidence) == pytest.approx(3.8)
    # the cap never lifts a score
    assert capped(1.5, [severe_blur], evidence) == pytest.approx(1.5)


def test_cap_stays_within_the_severity_band() -> None:
    from agentiqa_cli.records import Finding
    from agentiqa_cli.tools.severity import band, cap_for

    assert band("moderate") == (3.0, 3.8) and band("extreme") == (1.0, 1.4)
    f = Finding(category="Blurs", severity="moderate", reason="r")
    # the detector read "severe" but the finding says moderate: the band wins, words agree
    assert cap_for(f, {"sharpness": 2.0}) == pytest.approx(3.0)
    assert cap_for(f, {"sharpness": 3.4}) == pytest.approx(3.4)


def test_two_readings_that_agree_cap_lower_than_either() -> None:
    import math

    from agentiqa_cli.records import Finding
    from agentiqa_cli.tools.severity import AGREE, cap_for, soft_min

    assert soft_min([2.5]) == 2.5
    assert soft_min([2.0, 2.0]) == pytest.approx(2.0 - AGREE * math.log(2))
    # a reading far above the lowest changes nothing; one close by lowers the cap
    assert soft_min([2.0, 4.9]) == pytest.approx(2.0, abs=1e-6)
    assert soft_min([2.0, 2.1]) < 2.0
    # the darken case: the camera model's head wobbles at its floor (level 5 reads 1.58
    # against level 4's 1.49) while underexposure keeps falling (1.65 against 2.21); the
    # cap orders the levels by both
    f = Finding(category="Brightness change", severity="severe", reason="r")
    level4 = cap_for(f, {"camera_under": 1.49, "underexposure": 2.21})
    level5 = cap_for(f, {"camera_under": 1.58, "underexposure": 1.65})
    assert level5 < level4
    # the finding's band still bounds it: "severe" never caps below 1.4
    assert cap_for(f, {"camera_under": 1.0, "underexposure": 1.0}) == pytest.approx(1.4)


def test_answer_words_follow_the_rows_level() -> None:
    from agentiqa_cli.records import answer_at_level

    assert answer_at_level("Fair quality; the main problem is x.", "bad") == (
        "Bad quality; the main problem is x."
    )
    assert answer_at_level("good quality, sharp", "poor") == "Poor quality, sharp"
    assert answer_at_level("The bird is in focus.", "bad") == "The bird is in focus."
    assert answer_at_level("Fair quality.", "") == "Fair quality."
