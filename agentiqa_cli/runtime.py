"""The run's pieces, built once from Settings: cards, tool runner, decoder, prompts, VLM.

Every command goes through one ``Runtime``, built by ``wiring.build_runtime``, which
chooses the engine (local or Ray) and gives it the agent factory::

    async with build_runtime(settings) as rt:
        agent = await rt.agent()          # connects and checks the VLM, once
        summary = await rt.run(jobs, agent, command="assess", writer=w, trace=t)

The Runtime builds resources only and sits below the features: it imports neither the
agent, the experience pool nor an engine; what it runs them with is handed to it
(``AgentFactory``, ``Engine``). Leaving the block closes the VLM, once. A server that cannot be reached is not a crash:
with ``--vlm-fallback rules`` the run continues on the rules backend; without it every
image gets a (transient) error row that ``--resume`` tries again.
"""

from __future__ import annotations

import asyncio
import hashlib
import platform
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Protocol

from pydantic import JsonValue

from agentiqa_cli import __version__
from agentiqa_cli.asking.asker import Asker
from agentiqa_cli.asking.rules import RulesVLM
from agentiqa_cli.batch import BatchSummary, Decoder, Process, RunSink, run_batch
from agentiqa_cli.config import Settings, redact_url
from agentiqa_cli.errors import ConfigError, VLMError, VLMUnreachableError
from agentiqa_cli.imaging.discover import Job, discover, pair
from agentiqa_cli.io.guard import Outputs, trace_path_for
from agentiqa_cli.io.read import read_bytes
from agentiqa_cli.io.results import ResultsWriter, columns_for
from agentiqa_cli.io.stream import STDOUT_NAME, RowFormat, RowStream, RowWriter, StreamWriter, Tee
from agentiqa_cli.io.trace import TraceWriter
from agentiqa_cli.records import Result, TraceEvent
from agentiqa_cli.resources import default_cards_dir, default_prompts_dir
from agentiqa_cli.scoring import ToolScorer
from agentiqa_cli.tools.cards import CardSet, ToolCard, load_cards, load_overlay
from agentiqa_cli.tools.extras import require_extras
from agentiqa_cli.tools.runner import ToolRunner
from agentiqa_cli.tools.weights import offered_learned
from agentiqa_cli.vlm.base import VLM, VLMReply, VLMRequest

if TYPE_CHECKING:  # types only: the agent sits above the Runtime, which is handed a factory
    from agentiqa_cli.agent.pipeline import Agent
    from agentiqa_cli.asking.prompts import PromptSpec

# how a command rebuilds its process on another worker's Runtime (``engine: ray``)
Remote = Callable[["Runtime"], Awaitable[Process]]


class AgentFactory(Protocol):
    """Builds the agent on a Runtime (``wiring.py``: with the experience pool's advisor)."""

    def check(self, rt: Runtime) -> None:
        """Raise ConfigError for what the agent needs that is wrong (before any output)."""
        ...

    async def __call__(self, rt: Runtime, query: str | None) -> Agent: ...


class Engine(Protocol):
    """Runs a command's images elsewhere (``ray_engine.RayEngine``); rows come back here."""

    async def __call__(
        self, rt: Runtime, jobs: Sequence[Job], remote: Remote, *, command: str, sink: RunSink
    ) -> BatchSummary: ...


class Runtime:
    def __init__(
        self,
        settings: Settings,
        vlm: VLM | None = None,
        *,
        agents: AgentFactory | None = None,
        engine: Engine | None = None,
    ):
        """``vlm`` replaces the backend ``--vlm`` names (tests and benchmarks inject fakes);
        ``agents`` builds the agent (without it ``agent`` refuses), ``engine`` runs the
        commands that can be rebuilt elsewhere (without it everything runs here)."""
        self.settings = settings
        self._given_vlm = vlm
        self._agents = agents
        self._engine = engine
        self._active: VLM | None = None
        self._connect_lock = asyncio.Lock()
        self.notes: list[str] = []  # said once on stderr by the CLI

    async def __aenter__(self) -> Runtime:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if "_backend" in self.__dict__:  # built: close it, once
            await self._backend.aclose()

    # -- what every command shares ----------------------------------------------------------
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

    @cached_property
    def prompts(self) -> dict[str, PromptSpec]:
        # start-up time: the templates' sandbox (jinja2) loads only for commands that ask
        from agentiqa_cli.asking.prompts import load_prompts

        return load_prompts(self.settings.prompts_dir or default_prompts_dir())

    def jobs(self, paths: list[str], ref: str | None, outputs: Outputs | None = None) -> list[Job]:
        """The inputs' jobs; with ``outputs``, without our own outputs and only once those
        are known to be safe to write (exit 2 before any image is processed)."""
        jobs = pair(discover(paths, self.settings.recursive, self.notes), ref)
        return outputs.screened(jobs) if outputs is not None else jobs

    def tool_problems(self, cards: Sequence[ToolCard]) -> list[str]:
        """Build each metric once, now: a broken card is a ConfigError before any output;
        a tool that cannot run here (weights missing) is reported and its cells stay empty."""
        problems = []
        for card in cards:
            ok, why = self.runner.availability(card)
            if not ok:
                problems.append(f"{why} (every row will be an error until it can run)")
        return problems

    async def run(
        self,
        jobs: Sequence[Job],
        process: Process,
        *,
        command: str,
        trace: TraceWriter,
        writer: RowWriter | None = None,
        on_result: Callable[[Result], None] | None = None,
        on_skip: Callable[[Job], None] | None = None,
        remote: Remote | None = None,
    ) -> BatchSummary:
        """Every command's images go through here: same decoding, limits, keys, error rows.
        With an engine (``engine: ray``), a command that says how to rebuild its process
        elsewhere (``remote``: `score`, `assess`) runs there (ray_engine.py)."""
        sink = RunSink(trace, writer, on_result, on_skip)  # handed down once from here
        if self._engine is not None and remote is not None:
            return await self._engine(self, jobs, remote, command=command, sink=sink)
        return await run_batch(
            jobs,
            process,
            fingerprint=self.fingerprint(command),
            decoder=self.decoder,
            sink=sink,
            concurrency=self.settings.concurrency,
        )

    # -- score --------------------------------------------------------------------------------
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
        require_extras(cards)
        return cards

    def fit_notes(self, cards: Sequence[ToolCard]) -> list[str]:
        """A line for each of ``cards`` whose 1-5 curve was fitted on other data than the
        run's (``CardSet.fit_note``): said once on stderr; each row's ToolScore.fit names it."""
        return [note for c in cards if (note := self.cards.fit_note(c))]

    def scorer(self, cards: Sequence[ToolCard], fusion: str | None = None) -> ToolScorer:
        return ToolScorer(self.runner, list(cards), fusion or self.settings.fusion)

    # -- the agent ----------------------------------------------------------------------------
    @cached_property
    def _backend(self) -> VLM:
        return self._given_vlm or build_vlm(self.settings, self.cards)

    @property
    def vlm(self) -> VLM:
        """The backend the agent talks to: ``--vlm``'s, or its stand-in after ``connect``."""
        return self._active or self._backend

    def check_agent_setup(self) -> None:
        """Everything the agent needs that can be wrong in the configuration, checked
        before any output is opened (exit 2, earlier outputs untouched)."""
        _ = self.prompts, self.runner, self._backend
        if self._agents is not None:
            self._agents.check(self)
        if self.settings.tools:
            cards = self.cards.resolve(self.settings.tools)
            require_extras(cards)
            self.notes.extend(self.fit_notes(cards))

    async def connect(self) -> None:
        """Check the VLM once before a batch, so a dead server or a wrong model fails once.

        A wrong model name is a configuration error. An unreachable server is replaced by
        the rules backend (``--vlm-fallback rules``) or by a stand-in that fails each image
        at once with the server's error (no per-image retries)."""
        async with self._connect_lock:
            if self._active is not None:
                return
            backend = self._backend
            try:
                await backend.check()
                self._active = backend
            except VLMUnreachableError as e:
                if self.settings.vlm_fallback == "rules":
                    self._active = RulesVLM(self.cards)
                    self.notes.append(
                        f"{e}; continuing with the rules backend (--vlm-fallback rules)"
                    )
                else:
                    self._active = Unreachable(e, backend)
                    self.notes.append(f"{e}; every image gets an error row (--resume retries them)")
            except VLMError as e:
                raise ConfigError(str(e)) from None

    async def asker(self) -> Asker:
        """Asks roles of the connected VLM (with the rules backend as fallback if set)."""
        await self.connect()
        fallback = None
        if self.settings.vlm_fallback == "rules" and self.vlm.name != "rules":
            fallback = RulesVLM(self.cards)
        return Asker(self.vlm, self.prompts, fallback=fallback)

    async def agent(self, query: str | None = None) -> Agent:
        """The agent for ``query`` (default: the configured one), on a connected VLM."""
        if self._agents is None:
            raise TypeError("this Runtime has no agent factory: build it with wiring.build_runtime")
        return await self._agents(self, query)

    def calibration_digest(self) -> str | None:
        """The calibration overlay's content digest (None without one)."""
        calibration = self.settings.calibration
        return _file_digest(calibration) if calibration is not None else None

    # -- identity of a run ----------------------------------------------------------------------
    def fingerprint(self, command: str) -> str:
        """Resume keys: ``score`` depends on tools and cards; the agent also on the VLM (the
        model it actually serves, once connected), the query and the prompts."""
        overlay = self.calibration_digest()
        if command == "score":
            return self.settings.fingerprint(
                command, self.cards.hashes, overlay, include_agent=False
            )
        return self.settings.fingerprint(
            command,
            self.cards.hashes,
            overlay,
            self.vlm.model,
            self.prompt_versions(),
            self.learned_offered(),  # auto: what the caches held changes the answers
        )

    def learned_offered(self) -> list[str]:
        """The tools needing weights that the agent may select in this run."""
        return offered_learned(self.cards, self.settings.learned_tools)

    def prompt_versions(self) -> dict[str, str]:
        return {name: p.fingerprint for name, p in self.prompts.items()}

    def header(self, command: str) -> TraceEvent:
        parsed: dict[str, JsonValue] = {
            "tool": "agentiqa",
            "version": __version__,
            "command": command,
            "python": platform.python_version(),
            "config": self.settings.redacted(),
            "tool_cards": dict(self.cards.hashes),
        }
        if command != "score":
            parsed |= {
                "vlm": redact_url(self.settings.vlm),
                "model": self.vlm.model,
                "prompts": dict(self.prompt_versions()),
                "learned_tools": {
                    "setting": self.settings.learned_tools,
                    "offered": list(self.learned_offered()),
                },
            }
        return TraceEvent(step="run", parsed=parsed)

    @contextmanager
    def outputs(
        self,
        out: Path,
        trace: Path | None,
        resume: bool,
        command: str,
        tool_columns: list[str] | None = None,
        extra_columns: list[str] | None = None,
        extra: Callable[[Result], Mapping[str, str]] | None = None,
        force: bool = False,
        stream: RowFormat | None = None,
    ) -> Iterator[tuple[RowWriter, TraceWriter]]:
        """The results CSV and its trace, closed as complete only when the block completes.
        ``extra_columns`` are a command's own columns, filled per row by ``extra``; the
        paths are checked first (``Outputs.check``: exit 2, nothing written). ``stream``:
        each row on stdout too, in that format; with ``out`` "-" only there (no file, and
        a trace only when ``trace`` names one)."""
        columns = columns_for(tool_columns) + list(extra_columns or [])
        writer: RowWriter
        if str(out) == STDOUT_NAME:
            writer = StreamWriter(RowStream(stream or "csv", columns, extra))
            tracer = TraceWriter(trace, header=self.header(command))  # None: no trace
        else:
            trace_path = trace_path_for(out, trace)
            Outputs(out, trace_path, force).check()
            writer = ResultsWriter(out, columns, resume, extra, optional=extra_columns or [])
            if stream is not None:
                writer = Tee(writer, RowStream(stream, columns, extra))
            tracer = TraceWriter(trace_path, append=resume, header=self.header(command))
        completed = False
        try:
            yield writer, tracer
            completed = True
        finally:
            writer.close(completed)
            tracer.close(completed)


class Unreachable:
    """Stands in for a VLM that could not be reached: every request fails at once with the
    server's error, so each image gets its error row without waiting for retries."""

    name = "unreachable"
    supports_schema = True
    supports_logprobs = False

    def __init__(self, error: VLMUnreachableError, backend: VLM):
        self.error = error
        self.model = backend.model

    async def check(self) -> None:
        raise self.error

    async def complete(self, request: VLMRequest) -> VLMReply:
        raise self.error

    async def aclose(self) -> None:
        return None


def build_vlm(settings: Settings, cards: CardSet) -> VLM:
    """The VLM backend named by ``--vlm``: rules, an OpenAI-compatible URL, or vllm:MODEL."""
    spec = settings.vlm.strip()
    if spec == "rules":
        return RulesVLM(cards)
    # start-up time: httpx loads only for a model backend (vllm itself only when first used)
    from agentiqa_cli.vlm import http, inprocess

    if spec.startswith(("http://", "https://")):
        # without --model the server's only model is used (resolved by check())
        return http.OpenAIHTTPVLM(
            base_url=spec,
            model=settings.model,
            api_key=settings.api_key.get_secret_value() if settings.api_key else None,
            concurrency=settings.concurrency,
            timeout=settings.timeout,
            retries=settings.retries,
            image_pixels=settings.image_pixels,
        )
    if spec.startswith("vllm:"):
        return inprocess.InProcessVLM(
            model=spec[len("vllm:") :], image_pixels=settings.image_pixels
        )
    raise ConfigError(
        f"--vlm must be 'rules', an http(s):// URL or vllm:MODEL_PATH, got {redact_url(spec)!r}"
    )


def _file_digest(path: Path) -> str:
    return hashlib.sha256(read_bytes(path, "")).hexdigest()[:16]
