"""``agentiqa score``: tools only, no VLM. Raw and normalized score per tool, fused (by
default the worst tool: ``config.Settings.fusion``)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from statistics import fmean

from agentiqa_cli.batch import Pair, trace_tool_scores
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.imaging.load import LoadedImage
from agentiqa_cli.records import Result, ToolScore, level_of
from agentiqa_cli.tools.cards import ToolCard
from agentiqa_cli.tools.runner import ToolRunner

FUSIONS = ("mean", "min")


def fusable(scores: Sequence[ToolScore]) -> list[float]:
    """The normalized scores a fusion may use: tools that ran, on a calibrated scale. An
    uncalibrated card's linear map keeps order, not the 1-5 scale that Eq. 4 and the mean
    assume, so it is reported but not fused until `agentiqa calibrate` fits it."""
    return [s.norm for s in scores if s.ok and s.calibrated and s.norm is not None]


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
    """``fusion="mean"`` is the paper's mean of normalized scores. ``"min"`` (the worst tool,
    the configured default) suits sets of specialised detectors: an image is as bad as its
    worst attribute, while one bad attribute barely moves the mean of seven — a mean of N
    detectors with one at 1 and the rest at 5 is 5 - 4/N (4.43 for seven), so a strong
    single distortion can never reach the bottom of the scale."""

    def __init__(self, runner: ToolRunner, cards: list[ToolCard], fusion: str = "mean"):
        if fusion not in FUSIONS:
            raise ConfigError(f"--fusion must be one of {', '.join(FUSIONS)}, got {fusion!r}")
        self.runner = runner
        self.cards = cards
        self.fusion = fusion

    def fused(self, scores: Sequence[ToolScore]) -> float | None:
        """The score a row gets from ``scores``: None when a tool failed or none of them is
        on the calibrated 1-5 scale (the row is then an error)."""
        ok = fusable(scores)
        if not ok or any(not s.ok for s in scores):
            return None
        return fuse_tools(ok, self.fusion)

    def measure(self, image: LoadedImage) -> tuple[float | None, list[ToolScore]]:
        """``image``'s no-reference score exactly as ``score`` reports it (``fix`` compares
        an input with its fixed version by it), and the tools' scores behind it."""
        scores = self.runner.run_many(self.cards, image, None)
        return self.fused(scores), scores

    async def __call__(self, pair: Pair) -> Result:
        scores = await asyncio.to_thread(
            self.runner.run_many, self.cards, pair.image, pair.reference
        )
        trace_tool_scores(pair, scores)
        ok = fusable(scores)
        failed = [s for s in scores if not s.ok]
        loose = [s.tool for s in scores if s.ok and not s.calibrated]
        result = pair.result()
        result.tools = scores
        result.score = self.fused(scores)
        if result.score is not None:
            result.level = level_of(result.score)
        if loose and not ok:
            failed.append(
                ToolScore(
                    tool=loose[0],
                    error=f"{', '.join(loose)}: no fitted logistic on the card, so not on the "
                    "1-5 scale (fit it with `agentiqa calibrate`, apply with --calibration)",
                )
            )
        if failed:
            # a score from some of the requested tools is not the score asked for: the row
            # is an error (transient: --resume tries it again); the tools that ran keep
            # their cells
            msg = "; ".join(s.error or f"{s.tool} failed" for s in failed)
            result.status, result.error, result.transient = "error", msg, True
            result.score, result.level = None, ""
        pair.trace.emit(
            "final",
            parsed={"score": result.score, "level": result.level, "status": result.status},
        )
        return result
