"""`evaluate`'s parts without images: tiers, the two-phase estimate, seeded draws, the rules
planner, and the eval_plan role's prompt, schema and reply."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from agentiqa_cli.asking.asker import parse_reply
from agentiqa_cli.asking.prompts import load_prompts
from agentiqa_cli.asking.rules import RulesVLM
from agentiqa_cli.asking.schemas import schema_problems
from agentiqa_cli.errors import ConfigError, VLMError
from agentiqa_cli.evaluate.planning import (
    EvalPlanInput,
    EvalPlanReply,
    RoundView,
    rules_eval_plan,
)
from agentiqa_cli.evaluate.records import Estimate, TierShare
from agentiqa_cli.evaluate.sampling import draw_pool, round_rng, split
from agentiqa_cli.evaluate.stats import Known, RoundData, combine, round_estimate
from agentiqa_cli.evaluate.tiers import Tiers, parse_tier, tiers_from_reference
from agentiqa_cli.evaluate.verdict import mix_text
from agentiqa_cli.resources import default_cards_dir, default_prompts_dir
from agentiqa_cli.tools.cards import load_cards
from agentiqa_cli.vlm.base import VLMReply

CUTS = [1.5, 2.5, 3.5, 4.5]


# -- tiers --------------------------------------------------------------------------------------
def test_default_tiers_are_half_open_and_fit_checks_both_ends() -> None:
    t = Tiers()
    assert [t.tier(x) for x in (1.0, 1.4999, 1.5, 2.5, 3.4999, 3.5, 4.4999, 4.5, 5.0)] == [
        "Very Low", "Very Low", "Low", "Moderate", "Moderate", "High", "High", "Very High",
        "Very High",
    ]  # fmt: skip
    assert t.fits(3.5, 4.49) and not t.fits(3.49, 3.8) and not t.fits(1.0, 5.0)
    assert t.fits(4.6, 5.0) and not t.fits(-math.inf, 2.0)


@pytest.mark.parametrize("text", ["high", "High", "HIGH"])
def test_parse_tier_plain(text: str) -> None:
    assert parse_tier(text) == "High"


@pytest.mark.parametrize("text", ["very high", "Very-High", "very_high", "VeryHigh"])
def test_parse_tier_spellings(text: str) -> None:
    assert parse_tier(text) == "Very High"


def test_parse_tier_rejects_unknown_names() -> None:
    with pytest.raises(ConfigError, match="unknown tier"):
        parse_tier("excellent")


def test_reference_tiers_are_the_quintiles_of_ok_scores(tmp_path: Path) -> None:
    ref = tmp_path / "ref.csv"
    lines = ["image,status,score"] + [f"{i}.png,ok,{1 + i * 0.04:.3f}" for i in range(101)]
    lines.append("bad.png,error,")  # error rows do not count
    ref.write_text("\n".join(lines) + "\n")
    t = tiers_from_reference(ref)
    assert t.cuts == pytest.approx((1.8, 2.6, 3.4, 4.2), abs=1e-6)
    assert t.tier(3.45) == "High" and t.tier(3.35) == "Moderate"
    assert "quintiles of ref.csv" in t.source


def test_reference_tiers_refuse_too_few_or_concentrated_scores(tmp_path: Path) -> None:
    few = tmp_path / "few.csv"
    few.write_text("image,score\n" + "".join(f"{i},3.0\n" for i in range(5)))
    with pytest.raises(ConfigError, match="at least"):
        tiers_from_reference(few)
    flat = tmp_path / "flat.csv"
    flat.write_text("image,score\n" + "".join(f"{i},4.0\n" for i in range(40)))
    with pytest.raises(ConfigError, match="too concentrated"):
        tiers_from_reference(flat)
    nocol = tmp_path / "nocol.csv"
    nocol.write_text("image,level\na,good\n")
    with pytest.raises(ConfigError, match="no 'score' column"):
        tiers_from_reference(nocol)


# -- the estimate ---------------------------------------------------------------------------------
def test_plain_random_round_is_the_textbook_srs_variance() -> None:
    xs = [3.0, 4.0, 5.0, 2.0]
    mean, var = round_estimate(RoundData(random=xs, remaining=40))
    s2 = float(np.var(xs, ddof=1))
    assert mean == pytest.approx(3.5)
    assert var == pytest.approx((1 - 4 / 40) * s2 / 4)
    _, unbounded = round_estimate(RoundData(random=xs, remaining=None))
    assert unbounded == pytest.approx(s2 / 4)


def test_a_round_that_read_everything_left_is_exact() -> None:
    r = RoundData(random=[2.0, 4.0], pool=2, remaining=2)
    got = combine([(r, Known(total=9.0, count=3))], population=5)
    assert got is not None and got.exact
    assert got.mean == pytest.approx((9.0 + 6.0) / 5) and got.lo == got.hi == got.mean


def test_a_single_reading_cannot_fit_a_tier() -> None:
    got = combine([(RoundData(random=[4.0], remaining=50), Known())], population=50)
    assert got is not None and (got.lo, got.hi) == (1.0, 5.0)
    assert not Tiers().fits(got.lo, got.hi)


def _population(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """70% good images, 30% bad ones; a cheap detector that sees the quality with noise."""
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.3, rng.normal(1.5, 0.3, n), rng.normal(4.4, 0.3, n))
    return np.clip(y, 1, 5), y + rng.normal(0, 0.4, n)


def _one_run(y: np.ndarray, proxy: np.ndarray, seed: int) -> tuple[float, float, float, float]:
    """Five rounds of nine with the real draws; (estimate, lo, hi, naive sample mean)."""
    names = [f"{i:03d}" for i in range(len(y))]
    value = {nm: float(v) for nm, v in zip(names, y, strict=True)}
    hard_of = {nm: float(v) for nm, v in zip(names, proxy, strict=True)}
    taken: set[str] = set()
    rounds, known, seen = [], Known(), []
    for k in range(1, 6):
        rng = round_rng(seed, k)
        remaining = [nm for nm in names if nm not in taken]
        pool = draw_pool(remaining, 9, rng)
        samples = split(pool, {p: hard_of[p] for p in pool}, 9, rng)
        hard = [value[s.image] for s in samples if s.stratum == "hard"]
        rand = [value[s.image] for s in samples if s.stratum == "random"]
        rounds.append((RoundData(hard, rand, len(pool), len(hard), len(remaining)), known))
        known = Known(known.total + sum(hard) + sum(rand), known.count + len(samples))
        taken |= {s.image for s in samples}
        seen += hard + rand
    got = combine(rounds, len(y))
    assert got is not None
    return got.mean, got.lo, got.hi, float(np.mean(seen))


def test_hard_sampling_is_reweighted_unbiased_and_the_interval_covers() -> None:
    """Half the samples are the hardest of their pool: their plain mean is far too low,
    the two-phase estimate is not, and its 95% interval covers the truth ~95% of the time."""
    y, proxy = _population(300, seed=1)
    truth = float(y.mean())
    runs = [_one_run(y, proxy, seed) for seed in range(400)]
    est = np.array([r[0] for r in runs])
    naive = np.array([r[3] for r in runs])
    cover = np.mean([lo <= truth <= hi for _, lo, hi, _ in runs])
    assert abs(est.mean() - truth) < 0.03
    assert naive.mean() < truth - 0.3  # the bias the weighting removes
    assert 0.88 <= cover <= 0.99
    assert est.std() < 0.2  # better than a plain random sample of 45 (σ/√45·fpc ≈ 0.19)


# -- draws ----------------------------------------------------------------------------------------
def test_draws_are_seeded_without_replacement_and_the_hard_half_is_the_lowest() -> None:
    names = [f"{i:03d}" for i in range(100)]
    hard_of = {nm: float(i) for i, nm in enumerate(names)}  # lower index, harder

    def draw(seed: int) -> list[str]:
        rng = round_rng(seed, 1)
        pool = draw_pool(names, 9, rng)
        assert len(pool) == 18 and len(set(pool)) == 18
        samples = split(pool, hard_of, 9, rng)
        hard = [s.image for s in samples if s.stratum == "hard"]
        assert len(hard) == 4 and sorted(hard) == sorted(pool, key=hard_of.__getitem__)[:4]
        return [s.image for s in samples]

    first = draw(7)
    assert len(first) == 9 and len(set(first)) == 9
    assert draw(7) == first
    assert draw(8) != first


def test_a_pool_no_larger_than_n_is_taken_whole_as_random() -> None:
    rng = round_rng(0, 1)
    pool = draw_pool(["a", "b"], 9, rng)
    assert pool == ["a", "b"]
    samples = split(pool, {}, 9, rng)
    assert [(s.image, s.stratum) for s in samples] == [("a", "random"), ("b", "random")]


# -- the rules planner ------------------------------------------------------------------------
def _input(query: str = "How good are these photos?", **kw: object) -> EvalPlanInput:
    base: dict[str, object] = {
        "query": query, "round": 1, "max_rounds": 5, "samples_left": 45, "population": 300,
        "tool_names": ["assess", "colorcast", "noise"], "cuts": CUTS,
        "assess_measures": ["Blurs", "Noise", "Compression", "Brightness change", "Sharpness",
                            "Contrast"],
        "card_for": {"Color distortions": "colorcast"},
    }  # fmt: skip
    return EvalPlanInput.model_validate(base | kw)


def _est(name: str, kind: str, mean: float, half: float, n: int = 9, round_: int | None = None) -> Estimate:  # fmt: skip
    t = Tiers()
    lo, hi = max(1.0, mean - half), min(5.0, mean + half)
    return Estimate(sub_aspect=name, kind=kind, mean=mean, lo=lo, hi=hi, tier=t.tier(mean),  # type: ignore[arg-type]
                    fits=t.fits(lo, hi), samples=n, round=round_)  # fmt: skip


def _hist(*names: str) -> list[RoundView]:
    return [RoundView(round=i + 1, sub_aspect=n, tool="assess", n=9, assessed=9) for i, n in enumerate(names)]  # fmt: skip


def test_rules_start_with_overall_quality_then_the_worst_category_of_round_1() -> None:
    first = rules_eval_plan(_input())
    assert (first.done, first.sub_aspect, first.tool, first.n) == (
        False,
        "Overall quality",
        "assess",
        9,
    )
    assert first.sub_aspects == ["Overall quality"]
    after = _input(round=2, history=_hist("Overall quality"), estimates=[
        _est("Overall quality", "overall", 3.9, 0.2, round_=1),
        _est("Blurs", "category", 4.8, 0.1), _est("Noise", "category", 2.7, 0.6),
        _est("Contrast", "category", 4.1, 0.3)])  # fmt: skip
    second = rules_eval_plan(after)
    assert not second.done and second.sub_aspect == "Noise" and second.tool == "assess"


def test_rules_take_the_named_categories_in_order_and_a_card_for_colour() -> None:
    i = _input("Is there noise or a colour cast in these images?")
    first = rules_eval_plan(i)
    assert first.sub_aspects == ["Noise", "Color distortions"] and first.sub_aspect == "Noise"
    second = rules_eval_plan(i.model_copy(update={"round": 2, "history": _hist("Noise")}))
    assert second.sub_aspect == "Color distortions" and second.tool == "colorcast"


def test_rules_stop_only_after_two_rounds_with_every_interval_inside_a_tier() -> None:
    fitting = [_est("Overall quality", "overall", 4.0, 0.2, round_=1),
               _est("Noise", "category", 4.0, 0.3, round_=2)]  # fmt: skip
    unprobed = _est("Noise", "category", 4.0, 0.3)
    one = _input(round=2, history=_hist("Overall quality"), estimates=[fitting[0], unprobed])
    assert not rules_eval_plan(one).done  # fits, but a single round is not enough
    alone = rules_eval_plan(one.model_copy(update={"estimates": fitting[:1]}))
    assert alone.done and "Every sub-aspect had a round" in alone.summary  # nothing else to probe
    two = _input(round=3, history=_hist("Overall quality", "Noise"), estimates=fitting)
    reply = rules_eval_plan(two)
    assert reply.done and "inside one tier" in reply.summary
    wide = [fitting[0], _est("Noise", "category", 3.6, 0.3, round_=2)]  # spans 3.5
    more = rules_eval_plan(two.model_copy(update={"estimates": [*wide, unprobed.model_copy(
        update={"sub_aspect": "Contrast"})]}))  # fmt: skip
    assert not more.done and more.sub_aspect == "Contrast"


def test_rules_sample_count_stays_in_3_to_9_whatever_the_estimates() -> None:
    rng = np.random.default_rng(0)
    for _ in range(300):
        mean, half, n = rng.uniform(1, 5), rng.uniform(0, 2), int(rng.integers(1, 50))
        i = _input(round=2, history=_hist("Overall quality"),
                   estimates=[_est("Overall quality", "overall", mean, half, n, round_=1)])  # fmt: skip
        assert 3 <= rules_eval_plan(i).n <= 9


def test_rules_write_n_prompts_about_the_query_for_a_generator() -> None:
    reply = rules_eval_plan(_input("How sharp are the generated cats?", population=None))
    assert len(reply.prompts) == reply.n == 9
    assert all("generated cats" in p for p in reply.prompts)
    assert len(set(reply.prompts)) == 9


# -- the role -----------------------------------------------------------------------------------
def test_eval_plan_prompt_renders_from_the_input_with_a_bounded_schema() -> None:
    spec = load_prompts(default_prompts_dir())["eval_plan"]
    i = _input(round=2, history=_hist("Overall quality"), feedback="repeat refused",
               estimates=[_est("Overall quality", "overall", 3.9, 0.2, round_=1)])  # fmt: skip
    assert set(i.variables()) == set(spec.inputs)
    user = spec.render(**i.variables())[1].text
    assert "round 1: Overall quality with assess" in user and "repeat refused" in user
    schema = spec.schema_for(**i.dynamic())
    assert schema_problems(schema) == []
    assert schema["properties"]["tool"]["enum"] == ["assess", "colorcast", "noise"]
    assert schema["properties"]["n"]["enum"] == [3, 4, 5, 6, 7, 8, 9]
    assert schema["properties"]["prompts"]["items"]["maxLength"] == 160
    assert EvalPlanReply.model_validate(spec.example)


def test_a_users_eval_plan_prompt_with_an_invalid_example_is_refused_at_load(tmp_path) -> None:
    src = (default_prompts_dir() / "eval_plan.yaml").read_text()
    for f in default_prompts_dir().glob("*.yaml"):
        (tmp_path / f.name).write_text(f.read_text())
    (tmp_path / "eval_plan.yaml").write_text(src.replace("n: 9", "n: 12"))
    with pytest.raises(ConfigError, match=r"eval_plan.*EvalPlanReply"):
        load_prompts(tmp_path)


def test_a_reply_outside_3_to_9_samples_is_refused() -> None:
    ok = '{"thought":"t","sub_aspects":["Noise"],"done":false,"summary":"","sub_aspect":"Noise","tool":"assess","n":%d,"prompts":[]}'  # fmt: skip
    assert parse_reply(VLMReply(text=ok % 3), EvalPlanReply).n == 3
    for n in (2, 12):
        with pytest.raises(VLMError, match="schema at n"):
            parse_reply(VLMReply(text=ok % n), EvalPlanReply)


def test_the_rules_backend_answers_eval_plan() -> None:
    reply = RulesVLM(load_cards(default_cards_dir())).answer(_input())
    assert isinstance(reply, EvalPlanReply) and reply.sub_aspect == "Overall quality"


def test_bench_collections_have_the_stated_mix(tmp_path: Path) -> None:
    from agentiqa_cli.bench.evaluate_bench import make_collection, srs_agreement
    from agentiqa_cli.imaging.load import load_image
    from agentiqa_cli.tools.detectors import noise

    folder = make_collection(tmp_path / "m", "mixed", n=10)
    sigma = [noise(load_image(p)) for p in sorted(folder.glob("*.png"))]
    assert [s > 0.05 for s in sigma] == [True] * 3 + [False] * 7  # 30% extreme noise
    assert 0.3 < srs_agreement([4.5] * 10 + [2.3] * 10, 8) < 0.8  # mean 3.4, near the 3.5 cut
    assert srs_agreement([4.0] * 30, 10) == 1.0


def test_the_mix_is_named_only_when_two_distant_tiers_each_hold_a_share() -> None:
    def share(tier: str, x: float) -> TierShare:
        return TierShare(tier=tier, share=x, lo=max(0, x - 0.1), hi=min(1, x + 0.1))

    mixed = [share("Very Low", 0.3), share("Low", 0.02), share("High", 0.68)]
    assert mix_text(mixed) == (
        "A mixed collection: 68% High (58%-78%), 30% Very Low (20%-40%) of the images."
    )
    assert mix_text([share("High", 0.8), share("Moderate", 0.2)]) == ""
    assert mix_text([share("High", 0.55), share("Very High", 0.45)]) == ""  # adjacent tiers
    assert mix_text([share("High", 0.9), share("Very Low", 0.1)]) == ""  # a few outliers
    assert mix_text([]) == ""
