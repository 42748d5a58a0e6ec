"""Where the run is put together: the engine, the agent factory and the experience advisor.

``Runtime`` (runtime.py) builds resources only and imports no feature; the commands, the
benchmarks, the scripts and the Ray workers get theirs from ``build_runtime``, which
chooses the engine (``engine: ray`` → ``RayEngine``) and hands it the agent factory (the
agent with ``--experience``'s advisor). This module sits above the features and below the
CLI; nothing below it imports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentiqa_cli.config import Settings
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.ray_engine import RayEngine
from agentiqa_cli.runtime import Runtime
from agentiqa_cli.tools.weights import candidates
from agentiqa_cli.vlm.base import VLM

if TYPE_CHECKING:
    from agentiqa_cli.agent.advice import ToolAdvisor
    from agentiqa_cli.agent.pipeline import Agent


def build_runtime(settings: Settings, vlm: VLM | None = None) -> Runtime:
    """The Runtime of ``settings``: its engine and its agent factory (``vlm``: a fake, in
    tests and benchmarks)."""
    engine = RayEngine(build_runtime) if settings.engine == "ray" else None
    return Runtime(settings, vlm, agents=Agents(), engine=engine)


class Agents:
    """The agent factory of one Runtime: the experience pool is read once, on first use."""

    def __init__(self) -> None:
        self._advisor: tuple[ToolAdvisor | None] | None = None

    def check(self, rt: Runtime) -> None:
        self.advisor(rt)

    def advisor(self, rt: Runtime) -> ToolAdvisor | None:
        """The experience pool of ``--experience``, read whole and checked against the
        tool cards (a missing, damaged, foreign or stale pool is a ConfigError, exit 2)."""
        if self._advisor is None:
            self._advisor = (_pool_advisor(rt),)
        return self._advisor[0]

    async def __call__(self, rt: Runtime, query: str | None) -> Agent:
        """The agent for ``query`` (default: the configured one), on a connected VLM."""
        # start-up time: `score` and `--help` never build an agent (its roles, prompts, probing)
        from agentiqa_cli.agent.pipeline import Agent, AgentOptions

        asker = await rt.asker()
        settings = rt.settings
        options = AgentOptions(
            query=query or settings.query,
            learned_tools=settings.learned_tools,
            default_nr=settings.tools or [c.name for c in rt.cards.default_set(False)],
            default_fr=settings.tools or [c.name for c in rt.cards.default_set(True)],
            fusion=settings.fusion,
            show_evidence=settings.evidence,
            zoom=settings.zoom,
            zoom_turns=settings.zoom_turns,
            pixel_budget=settings.image_pixels,
        )
        return Agent(asker, rt.cards, rt.runner, options, advisor=self.advisor(rt))


def _pool_advisor(rt: Runtime) -> ToolAdvisor | None:
    settings = rt.settings
    if settings.experience is None:
        if settings.evolve:
            raise ConfigError("--evolve needs --experience POOL")
        return None
    # start-up time: the pool's measuring side loads scipy and the distortion library, so
    # only a run with --experience pays for it
    from agentiqa_cli.experience import advisor, pool

    learnt = pool.read_pool(settings.experience)
    pool.check_cards(learnt, rt.cards.hashes, rt.calibration_digest())
    offered = [c.name for c in candidates(rt.cards, True, settings.learned_tools)]
    return advisor.PoolAdvisor(learnt, offered, rt.cards, rt.runner, evolve=settings.evolve)
