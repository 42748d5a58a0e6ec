"""The verdict: the overall tier with its interval, the sub-aspects, the lowest one named,
and a one-paragraph summary."""

from __future__ import annotations

from agentiqa_cli.evaluate.records import OVERALL, Estimate, TierShare, Verdict
from agentiqa_cli.evaluate.state import EvalState, worst
from agentiqa_cli.evaluate.tiers import TIER_NAMES, Tiers


def make_verdict(
    query: str,
    found: list[Estimate],
    mix: list[TierShare],
    state: EvalState,
    population: int | None,
    tiers: Tiers,
    stop_reason: str,
    planner_summary: str = "",
    seconds: float = 0.0,
) -> Verdict:
    overall = next(
        (e for e in found if e.kind == "overall"), Estimate(sub_aspect=OVERALL, kind="overall")
    )
    low = worst(found)
    assessed = sum(s in state.rows for s in state.sampled)
    return Verdict(
        query=query,
        overall=overall,
        mix=mix,
        sub_aspects=[e for e in found if e.kind != "overall"],
        worst=low.sub_aspect if low else None,
        summary=summary(
            overall, low, assessed, population, len(state.rounds), planner_summary, mix
        ),
        stop_reason=stop_reason,
        rounds=len(state.rounds),
        assessed=assessed,
        errors=state.errors,
        population=population,
        screened=sum(r.pool for r in state.rounds if r.detector),
        tiers=list(tiers.cuts),
        tiers_source=tiers.source,
        planner=state.planner,
        seconds=round(seconds, 3),
    )


def summary(
    overall: Estimate,
    low: Estimate | None,
    assessed: int,
    population: int | None,
    rounds: int,
    planner_summary: str = "",
    mix: list[TierShare] | None = None,
) -> str:
    of = f" of {population}" if population is not None else " generated"
    if overall.mean is None or overall.lo is None or overall.hi is None:
        text = f"No verdict: none of the {assessed}{of} images sampled could be scored."
    else:
        spread = "exact" if overall.exact else f"95% interval {overall.lo:.2f}-{overall.hi:.2f}"
        text = (
            f"{overall.tier} overall ({overall.mean:.2f}, {spread}) from {assessed}{of} "
            f"images in {rounds} round{'s' if rounds != 1 else ''}"
        )
        text += "; the interval spans more than one tier." if not overall.fits else "."
    mixed = mix_text(mix or [])
    if mixed:
        text += f" {mixed}"
    if low is not None and low.mean is not None:
        text += f" Lowest sub-aspect: {low.sub_aspect} ({low.tier}, {low.mean:.2f})."
    if planner_summary:
        text += f" Planner: {planner_summary}"
    return text


MIX_SHARE = 0.15  # a tier holding this share of the images is part of the collection's mix
SHOWN = 0.05  # tiers with a smaller estimated share are left out of the sentence


def mix_text(mix: list[TierShare]) -> str:
    """A sentence on how the images spread over the tiers when the collection is bimodal
    (two tiers at least two apart each hold ≥ 15% of it: the mean's tier then describes
    few of its images), else ""."""
    held = [TIER_NAMES.index(t.tier) for t in mix if t.share >= MIX_SHARE]
    if not held or max(held) - min(held) < 2:
        return ""
    parts = [
        f"{t.share:.0%} {t.tier} ({t.lo:.0%}-{t.hi:.0%})"
        for t in sorted(mix, key=lambda t: -t.share)
        if t.share >= SHOWN
    ]
    return f"A mixed collection: {', '.join(parts)} of the images."
