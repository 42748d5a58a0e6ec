"""The agent's roles, declared (input, reply, trace step, rules answer), and its typed asks.

Each role of the assessment pipeline is registered here beside its typed input
(``agent/inputs.py``) and reply (``agent/replies.py``); ``asking/registry.py`` says what a
declaration holds. ``AgentAsker`` is the generic ``Asker`` with one typed call per role.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel

from agentiqa_cli.agent import rules
from agentiqa_cli.agent.inputs import (
    AnalyzeInput,
    DetectInput,
    ExamineInput,
    InterpretInput,
    PlannerInput,
    SelectInput,
    SummarizeInput,
    evidence_view,
)
from agentiqa_cli.agent.probe import ProbeFinalInput, ProbeTurnInput
from agentiqa_cli.agent.probe.records import ProbeFinalReply, ProbeTurnReply
from agentiqa_cli.agent.replies import (
    AnalyzeReply,
    DetectReply,
    ExamineReply,
    InterpretReply,
    ScoreReply,
    SelectReply,
)
from agentiqa_cli.asking.asker import Asker, images_of
from agentiqa_cli.asking.registry import Role, register
from agentiqa_cli.batch import Pair
from agentiqa_cli.io.trace import ImageTrace
from agentiqa_cli.records import Plan, ToolScore, Usage
from agentiqa_cli.vlm.base import RoleInput, VLMReply

R = TypeVar("R", bound=BaseModel)

# trace steps: the combined examine call is traced as an analysis, interpret as a summary;
# probing's rules version runs inside the agent (agent/probe/rules.py), not as an answer
register(Role(PlannerInput, Plan, step="plan", answer=rules.plan))
register(Role(DetectInput, DetectReply, step="detect", answer=rules.detect))
register(Role(AnalyzeInput, AnalyzeReply, step="analyze", answer=rules.analyze))
register(Role(ExamineInput, ExamineReply, step="analyze", answer=rules.examine))
register(Role(SelectInput, SelectReply, step="select", answer=rules.select))
register(Role(SummarizeInput, ScoreReply, step="summarize", answer=rules.summarize))
register(Role(InterpretInput, InterpretReply, step="summarize", answer=rules.interpret))
register(Role(ProbeTurnInput, ProbeTurnReply, step="probe", answer=None))
register(Role(ProbeFinalInput, ProbeFinalReply, step="probe", answer=None))


class AgentAsker(Asker):
    """The agent's typed calls, one per role, over the generic ``Asker``."""

    @classmethod
    def of(cls, asker: Asker) -> AgentAsker:
        if isinstance(asker, AgentAsker):
            return asker
        return cls(asker.vlm, asker.prompts, fallback=asker.fallback, reasks=asker.reasks)

    async def plan(self, inputs: PlannerInput, usage: Usage, trace: ImageTrace) -> Plan:
        return (await self.ask(inputs, Plan, usage, trace))[0]

    async def examine(self, inputs: ExamineInput, pair: Pair) -> AnalyzeReply:
        return await self._look(inputs, AnalyzeReply, pair)

    async def detect(self, inputs: DetectInput, pair: Pair) -> DetectReply:
        return await self._look(inputs, DetectReply, pair)

    async def analyze(self, inputs: AnalyzeInput, pair: Pair) -> AnalyzeReply:
        return await self._look(inputs, AnalyzeReply, pair)

    async def select(self, inputs: SelectInput, pair: Pair) -> SelectReply:
        return (await self.ask(inputs, SelectReply, pair.usage, pair.trace))[0]

    async def summarize(self, inputs: SummarizeInput, pair: Pair) -> tuple[ScoreReply, VLMReply]:
        return await self.ask(inputs, ScoreReply, pair.usage, pair.trace, images_of(pair))

    async def interpret(self, inputs: InterpretInput, pair: Pair) -> InterpretReply:
        return await self._look(inputs, InterpretReply, pair)

    async def _look(self, inputs: RoleInput, model: type[R], pair: Pair) -> R:
        """A role that looks at the image (and its reference)."""
        return (await self.ask(inputs, model, pair.usage, pair.trace, images_of(pair)))[0]


class Prober:
    """The Asker as context-aware probing's ``ProbeAsker``, for one image: each turn is an
    ordinary role call (traced, counted, validated), with the agent's query and evidence."""

    def __init__(
        self, asker: Asker, usage: Usage, trace: ImageTrace, query: str, evidence: list[ToolScore]
    ):
        self.asker, self.usage, self.trace = asker, usage, trace
        self.extra = {"query": query, "evidence": evidence_view(evidence)}

    async def turn(self, view: ProbeTurnInput) -> ProbeTurnReply:
        inputs = view.model_copy(update=self.extra)
        return (await self.asker.ask(inputs, ProbeTurnReply, self.usage, self.trace, view.images))[
            0
        ]

    async def final(self, view: ProbeFinalInput) -> ProbeFinalReply:
        inputs = view.model_copy(update=self.extra)
        reply = await self.asker.ask(inputs, ProbeFinalReply, self.usage, self.trace, view.images)
        return reply[0]
