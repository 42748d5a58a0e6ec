"""``agentiqa score``: tools only, no VLM. Raw and normalized score per tool, fused by the mean."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from statistics import fmean

from agentiqa_cli.batch import Pair, trace_tool_scores
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.records import Result, level_of
from agentiqa_cli.tools.cards import ToolCard
from agentiqa_cli.tools.runner import ToolRunner

FUSIONS = ("mean", "min")


def fuse_tools(norms: Sequence[float], fusion: str = "mean") -> float:
    """The tools' joint 1–5 score: used by ``score`` as its score and by the agent as the
    q̄ of Eq. 4, so the agent's tool evidence is exactly what ``score`` reports."""
    if not norms:
        raise ValueError("no tool scores to fuse")
    if fusion == "min":
        return min(norms)
    if fusion == "mean":
        return fmean(norms)
    raise ConfigError(f"--fusion must be one of {', '.join(FUSIONS)}, got {fusion!r}")


class ToolScorer:
    """``fusion="mean"`` is the paper's mean of normalized scores. ``"min"`` (the worst tool)
    suits sets of specialised detectors: an image is as bad as its worst attribute, while
    one bad attribute barely moves the mean of seven."""

    def __init__(self, runner: ToolRunner, cards: list[ToolCard], fusion: str = "mean"):
        if fusion not in FUSIONS:
            raise ConfigError(f"--fusion must be one of {', '.join(FUSIONS)}, got {fusion!r}")
        self.runner = runner
        self.cards = cards
        self.fusion = fusion

    async def __call__(self, pair: Pair) -> Result:
        scores = await asyncio.to_thread(
            self.runner.run_many, self.cards, pair.image, pair.reference
        )
        trace_tool_scores(pair, scores)
        ok = [s.norm for s in scores if s.ok and s.norm is not None]
        failed = [s for s in scores if not s.ok]
        result = pair.result()
        result.tools = scores
        if ok:
            result.score = fuse_tools(ok, self.fusion)
            result.level = level_of(result.score)
        if failed:
            msg = "; ".join(s.error or f"{s.tool} failed" for s in failed)
            if not ok:
                result.status, result.error = "error", msg
            else:
                result.error = msg  # partial: the fused score uses the tools that ran
        pair.trace.emit(
            "final",
            parsed={"score": result.score, "level": result.level, "status": result.status},
        )
        return result
