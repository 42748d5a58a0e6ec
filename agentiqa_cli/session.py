"""Builds a run's pieces from Settings: cards, tool runner, decoder, jobs, outputs."""

from __future__ import annotations

import platform
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import Any

from agentiqa_cli import __version__
from agentiqa_cli.batch import Decoder
from agentiqa_cli.config import Settings
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.imaging.discover import Job, discover, pair
from agentiqa_cli.io.results import ResultsWriter, columns_for
from agentiqa_cli.io.trace import TraceWriter
from agentiqa_cli.records import TraceEvent
from agentiqa_cli.resources import default_cards_dir
from agentiqa_cli.tools.cards import CardSet, ToolCard, load_cards, load_overlay
from agentiqa_cli.tools.runner import ToolRunner


def file_digest(path: Path) -> str:
    import hashlib

    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError as e:
        raise ConfigError(f"{path}: {e.strerror or e}") from None


class Session:
    def __init__(self, settings: Settings):
        self.settings = settings

    @cached_property
    def cards(self) -> CardSet:
        cards = load_cards(self.settings.cards_dir or default_cards_dir())
        if self.settings.calibration is not None:
            cards = cards.with_overlay(load_overlay(self.settings.calibration))
        return cards

    @cached_property
    def runner(self) -> ToolRunner:
        return ToolRunner(self.cards, self.settings.device)

    @cached_property
    def decoder(self) -> Decoder:
        return Decoder(self.settings.max_pixels)

    def jobs(self, paths: list[str], ref: str | None) -> list[Job]:
        return pair(discover(paths, self.settings.recursive), ref)

    def score_cards(self, has_reference: bool) -> list[ToolCard]:
        tools = self.settings.tools
        cards = self.cards.resolve(tools) if tools else self.cards.default_set(has_reference)
        if not cards:
            raise ConfigError(
                "no tool card is a default for this mode (default_order): use --tools"
            )
        if not has_reference:
            fr = [c.name for c in cards if c.mode == "FR"]
            if fr:
                raise ConfigError(f"full-reference tool(s) {', '.join(fr)} need --ref")
        return cards

    @cached_property
    def prompts(self) -> dict[str, Any]:
        from agentiqa_cli.agent.prompts import load_prompts
        from agentiqa_cli.resources import default_prompts_dir

        return load_prompts(self.settings.prompts_dir or default_prompts_dir())

    @cached_property
    def vlm(self) -> Any:
        return build_vlm(self.settings, self.cards)

    def asker(self, trace: TraceWriter, query: str) -> Any:
        from agentiqa_cli.agent.roles import Asker

        fallback = None
        if self.settings.vlm_fallback == "rules" and self.settings.vlm != "rules":
            from agentiqa_cli.agent.rules import RulesVLM

            fallback = RulesVLM(self.cards)
        return Asker(self.vlm, self.prompts, trace, query=query, fallback=fallback)

    def agent(self, trace: TraceWriter, query: str | None = None) -> Any:
        from agentiqa_cli.agent.pipeline import Agent, AgentOptions

        query = query or self.settings.query
        options = AgentOptions(
            query=query,
            learned_tools=self.settings.learned_tools,
            default_nr=self.settings.tools or [c.name for c in self.cards.default_set(False)],
            default_fr=self.settings.tools or [c.name for c in self.cards.default_set(True)],
        )
        return Agent(self.asker(trace, query), self.cards, self.runner, options)

    async def connect(self, agent: Any) -> str | None:
        """Check the VLM once before a batch, so a dead server or a wrong model fails once.

        A wrong model name is a configuration error. An unreachable server raises
        ``VLMUnreachableError`` (every image then gets an error row), unless
        ``--vlm-fallback rules`` is set: then the run continues on the rules backend and
        the returned note says so.
        """
        from agentiqa_cli.errors import VLMError, VLMUnreachableError

        check = getattr(self.vlm, "check", None)
        if check is None:
            return None
        try:
            await check()
        except VLMUnreachableError as e:
            if self.settings.vlm_fallback != "rules":
                raise
            from agentiqa_cli.agent.rules import RulesVLM

            agent.ask.vlm = RulesVLM(self.cards)
            return f"{e}; continuing with the rules backend (--vlm-fallback rules)"
        except VLMError as e:
            raise ConfigError(str(e)) from None
        return None

    def prompt_versions(self) -> dict[str, str]:
        return {name: p.fingerprint for name, p in self.prompts.items()}

    def prepare_tools(self, cards: list[ToolCard]) -> list[str]:
        """Build each metric once, now: a broken card is a ConfigError before any output;
        a tool that cannot run here (weights missing) is reported and its cells stay empty."""
        problems = []
        for card in cards:
            ok, why = self.runner.availability(card)
            if not ok:
                problems.append(f"{why} (skipped; its columns stay empty)")
        return problems

    def check_agent_setup(self) -> None:
        """Everything ``assess`` needs that can be wrong in the configuration, checked before
        the outputs are opened."""
        _ = self.prompts, self.runner, self.vlm
        if self.settings.tools:
            self.cards.resolve(self.settings.tools)

    def fingerprint(self, command: str) -> str:
        """Resume keys: ``score`` depends on tools and cards; ``assess`` also on the VLM,
        the query and the prompts."""
        calibration = self.settings.calibration
        overlay = file_digest(calibration) if calibration is not None else None
        if command == "score":
            return self.settings.fingerprint(
                command, self.cards.hashes, overlay, include_agent=False
            )
        # the model the server actually serves (resolved by connect() when --model is unset)
        model = getattr(self.vlm, "model", None)
        return self.settings.fingerprint(
            command, self.cards.hashes, overlay, model, self.prompt_versions()
        )

    def header(self, command: str, extra: dict[str, Any] | None = None) -> TraceEvent:
        return TraceEvent(
            step="run",
            parsed={
                "tool": "agentiqa",
                "version": __version__,
                "command": command,
                "python": platform.python_version(),
                "config": self.settings.redacted(),
                "tool_cards": self.cards.hashes,
                **(extra or {}),
            },
        )

    @contextmanager
    def outputs(
        self,
        out: Path,
        trace: Path | None,
        resume: bool,
        columns_tools: list[str] | None,
        command: str,
        header_extra: dict[str, Any] | None = None,
    ) -> Iterator[tuple[ResultsWriter, TraceWriter]]:
        # results.csv → trace.jsonl beside it (SPEC §1); other names get <stem>.trace.jsonl
        default = "trace.jsonl" if out.name == "results.csv" else out.stem + ".trace.jsonl"
        trace_path = trace or out.with_name(default)
        writer = ResultsWriter(out, columns_for(columns_tools), resume=resume)
        tracer = TraceWriter(trace_path, append=resume, header=self.header(command, header_extra))
        completed = False
        try:
            yield writer, tracer
            completed = True
        finally:
            writer.close(completed)
            tracer.close(completed)


def build_vlm(settings: Settings, cards: CardSet) -> Any:
    """The VLM backend named by ``--vlm``: rules, an OpenAI-compatible URL, or vllm:MODEL."""
    spec = settings.vlm.strip()
    if spec == "rules":
        from agentiqa_cli.agent.rules import RulesVLM

        return RulesVLM(cards)
    if spec.startswith(("http://", "https://")):
        from agentiqa_cli.vlm.http import OpenAIHTTPVLM

        # without --model the server's only model is used (checked before the batch)
        return OpenAIHTTPVLM(
            base_url=spec,
            model=settings.model,
            api_key=settings.api_key.get_secret_value() if settings.api_key else None,
            concurrency=settings.concurrency,
            timeout=settings.timeout,
            retries=settings.retries,
            image_pixels=settings.image_pixels,
        )
    if spec.startswith("vllm:"):
        from agentiqa_cli.vlm.inprocess import InProcessVLM

        return InProcessVLM(model=spec[len("vllm:") :], image_pixels=settings.image_pixels)
    raise ConfigError(f"--vlm must be 'rules', an http(s):// URL or vllm:MODEL_PATH, got {spec!r}")
