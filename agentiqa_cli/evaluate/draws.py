"""Where a round's samples come from: a folder (a seeded two-phase draw, ranked by the
sub-aspect's detector) or a generator (one image per prompt of the plan)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agentiqa_cli.evaluate.aspects import detectors_for
from agentiqa_cli.evaluate.generator import Generator
from agentiqa_cli.evaluate.planning import EvalPlanReply, generator_prompts
from agentiqa_cli.evaluate.records import RoundDraw, Sample, SubAspect
from agentiqa_cli.evaluate.sampling import draw_pool, round_rng, split
from agentiqa_cli.imaging.discover import Job
from agentiqa_cli.imaging.load import display_path
from agentiqa_cli.io.trace import TraceWriter
from agentiqa_cli.runtime import Runtime
from agentiqa_cli.tools.cards import ToolCard


@dataclass
class Folder:
    jobs: list[Job]

    def __post_init__(self) -> None:
        self.by_name = {j.name: j for j in self.jobs}
        self.names = sorted(self.by_name)  # a stable order: the draws depend only on the seed

    def job(self, name: str) -> Job:
        """The job of a sampled image; one no longer in the folder (a resumed run) gets a
        job that fails with a row saying so."""
        if name in self.by_name:
            return self.by_name[name]
        path = Path(name)
        return Job(image=path, root=path.parent, error=f"{name}: no longer in the folder")


@dataclass(frozen=True)
class GeneratorSource:
    generator: Generator
    out_dir: Path

    def path(self, round_: int, i: int) -> str:
        return display_path(self.out_dir / f"r{round_:02d}-{i + 1:02d}.png")


Source = Folder | GeneratorSource


def _round(
    k: int, aspect: SubAspect, reply: EvalPlanReply, samples: list[Sample], **design: object
) -> RoundDraw:
    return RoundDraw.model_validate(
        {
            "round": k,
            "sub_aspect": aspect,
            "tool": reply.tool,
            "n": reply.n,
            "thought": reply.thought,
            "question": reply.question,
            "samples": samples,
            **design,
        }
    )


def generated(
    source: GeneratorSource,
    k: int,
    aspect: SubAspect,
    reply: EvalPlanReply,
    query: str,
    n: int,
    seed: int,
) -> RoundDraw:
    """The plan's prompts (topped up from the templates when it gave fewer than n)."""
    extra = generator_prompts(query, aspect, n, seed, k)
    prompts = ([p for p in reply.prompts if p.strip()] + extra)[:n]
    samples = [
        Sample(image=source.path(k, i), stratum="random", prompt=p) for i, p in enumerate(prompts)
    ]
    return _round(k, aspect, reply, samples)


async def drawn(
    rt: Runtime,
    folder: Folder,
    taken: set[str],
    k: int,
    aspect: SubAspect,
    reply: EvalPlanReply,
    n: int,
    seed: int,
    default_set: list[str],
) -> RoundDraw:
    """n images not sampled before: the hardest ``n // 2`` of a random pool on the
    sub-aspect's detector and a random rest (all that is left when n or fewer are)."""
    rng = round_rng(seed, k)
    remaining = [name for name in folder.names if name not in taken]
    pool = draw_pool(remaining, n, rng)
    cards, fusion = detector(rt, aspect, reply.tool, default_set)
    if len(pool) > n and not cards:  # nothing to rank by: a plain random sample
        picked = sorted(rng.choice(len(pool), size=n, replace=False))
        samples = [Sample(image=pool[int(i)], stratum="random") for i in picked]
        return _round(k, aspect, reply, samples, remaining=len(remaining))
    hardness: dict[str, float] = {}
    if len(pool) > n:
        hardness = await screen(rt, [folder.job(p) for p in pool], cards, fusion)
    samples = split(pool, hardness, n, rng)
    return _round(
        k,
        aspect,
        reply,
        samples,
        pool=len(pool),
        hard_pool=sum(s.stratum == "hard" for s in samples),
        remaining=len(remaining),
        detector=[c.name for c in cards] if hardness else [],
    )


def detector(
    rt: Runtime, aspect: SubAspect, tool: str, default_set: list[str]
) -> tuple[list[ToolCard], str]:
    """The cheap reading that ranks a pool: the category's signal detectors (the worst of
    them), the built-in card the round uses, or the agent's default set fused as `score`
    fuses it."""
    cards = rt.cards
    if aspect.category is not None:
        return cards.resolve(detectors_for(aspect.category, cards)), "min"
    if tool in cards and cards.get(tool).detector:
        return [cards.get(tool)], "min"
    default = [c for c in cards.resolve(sorted(default_set)) if c.mode == "NR"]
    return default, rt.settings.fusion


async def screen(
    rt: Runtime, jobs: list[Job], cards: list[ToolCard], fusion: str
) -> dict[str, float]:
    """Detector readings (fused) per image, through the same batch as `score` (no rows)."""
    summary = await rt.run(jobs, rt.scorer(cards, fusion), command="score", trace=TraceWriter(None))
    return {r.image: float(r.score) for r in summary.results if r.score is not None}
