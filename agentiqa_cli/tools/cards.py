"""Tool cards: one YAML file per tool, validated on load; a registry with helpful errors.

Also the one writer of logistic parameters: into a card file (``write_card_logistic``, for
the calibration scripts) or into a calibration overlay (``write_overlay``, for
``agentiqa calibrate``).
"""

from __future__ import annotations

import difflib
import hashlib
import re
import textwrap
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    FiniteFloat,
    StringConstraints,
    ValidationError,
    field_validator,
)

from agentiqa_cli.errors import ConfigError, UnknownToolError
from agentiqa_cli.io.guard import write_whole
from agentiqa_cli.io.read import load_yaml, read_bytes
from agentiqa_cli.records import Category, Mode
from agentiqa_cli.tools.logistic import anchor_top, normalize


class Logistic(BaseModel):
    """Five logistic parameters and where they came from."""

    model_config = ConfigDict(extra="forbid")

    # finite: NaN makes every score an error, ±inf a step or an inverted curve
    params: list[FiniteFloat] = Field(min_length=5, max_length=5)
    source: str = Field(min_length=1, description="dataset/procedure the parameters were fitted on")


# where a weights file lands: a folder of torch's hub dir, or a Hugging Face hub repo
WeightFile = Annotated[
    str,
    StringConstraints(pattern=r"^((pyiqa|checkpoints|clip)/[^/]+|hf:[\w.-]+/[\w.-]+/[^:]+)$"),
]


class ToolCard(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[a-z0-9_]+$")
    backend: Literal["pyiqa", "builtin"]
    metric: str = Field(description="pyiqa metric id, or the builtin detector's name")
    mode: Mode
    lower_better: bool
    raw_range: tuple[float, float]
    logistic: Logistic | None = None
    distortions: list[Category] = Field(
        default_factory=list, description="categories it is best at (AgenticIQA App. A.3)"
    )
    description: str = Field(min_length=10, max_length=400)
    weights: bool = Field(description="needs downloaded weights")
    licence: str
    paper: str = ""
    in_seed: bool = Field(False, description="one of the 28 tools of AgenticIQA App. A.3")
    notes: str = ""
    default_order: int | None = Field(
        None,
        ge=1,
        description="place in the default tool set of its mode (`score` without --tools, the "
        "agent's fallback tools), 1 first; absent: not a default",
    )
    identical: float | None = Field(
        None,
        description="full-reference tools: the raw reading of an image against an identical "
        "copy; the fitted curve is stretched (tools.logistic.anchor_top) so that it maps to 5",
    )
    weight_files: tuple[WeightFile, ...] = Field(
        (),
        description="the files a `weights` tool loads from the caches, as its backend fetches "
        "them: FOLDER/FILE under the torch hub dir (pyiqa/, checkpoints/, clip/) or "
        "hf:ORG/REPO/FILE in the Hugging Face hub cache",
    )

    @field_validator("raw_range")
    @classmethod
    def _ordered(cls, v: tuple[float, float]) -> tuple[float, float]:
        if not v[0] < v[1]:
            raise ValueError(f"raw_range must be [low, high] with low < high, got {list(v)}")
        return v

    def normalize(self, raw: float) -> float:
        """Raw → [1, 5], higher is better.

        With fitted logistic parameters those are used (stretched so that ``identical``
        maps to 5, when the card gives it); an uncalibrated card maps its raw range linearly
        (respecting ``lower_better``), which keeps order but not scale.
        """
        if self.logistic is not None:
            return normalize(raw, self.curve_params)
        lo, hi = self.raw_range
        t = (min(max(raw, lo), hi) - lo) / (hi - lo)
        if self.lower_better:
            t = 1.0 - t
        return 1.0 + 4.0 * t

    @property
    def curve_params(self) -> list[float]:
        """The logistic parameters ``normalize`` uses (the card's, anchored at the top)."""
        if self.logistic is None:
            raise ValueError(f"{self.name} has no fitted logistic")
        if self.identical is None:
            return list(self.logistic.params)
        return anchor_top(self.logistic.params, self.identical)

    @property
    def calibrated(self) -> bool:
        return self.logistic is not None

    def curve_span(self, steps: int = 200) -> tuple[float, float]:
        """The lowest and highest 1-5 value ``normalize`` gives over ``raw_range``."""
        lo, hi = self.raw_range
        ys = [self.normalize(lo + (hi - lo) * i / steps) for i in range(steps + 1)]
        return min(ys), max(ys)

    def curve_problem(self, steps: int = 200) -> str | None:
        """Where the normalizing curve runs against the card's direction over raw_range
        (AgenticIQA Table 5 has such rows), or None. Such a card ranks some better raws
        below worse ones until `agentiqa calibrate` refits it."""
        lo, hi = self.raw_range
        xs = [lo + (hi - lo) * i / steps for i in range(steps + 1)]
        ys = [self.normalize(x) for x in xs]
        sign = -1.0 if self.lower_better else 1.0
        drops = [
            (xs[i], ys[i] - ys[i + 1]) for i in range(steps) if sign * (ys[i + 1] - ys[i]) < -1e-3
        ]
        if not drops:
            return None
        at, _ = max(drops, key=lambda d: abs(d[1]))
        return (
            f"{self.name}: the normalizing curve is not monotone over raw {lo:g}..{hi:g} "
            f"(it runs the wrong way near raw {at:.3g}; 1-5 range {min(ys):.2f}..{max(ys):.2f}); "
            "refit it with `agentiqa calibrate` and apply with --calibration"
        )

    @property
    def detector(self) -> bool:
        """One of agentiqa's signal detectors (builtin, no-reference): read on every image as
        evidence. Builtin full-reference measures (``detail``) need a reference and are not."""
        return self.backend == "builtin" and self.mode == "NR"

    @property
    def category(self) -> Category | None:
        """The category a detector's findings report: the first of ``distortions``."""
        return self.distortions[0] if self.distortions else None


class CardSet:
    """All tool cards of a run, by name, with their file hashes for the trace."""

    def __init__(
        self,
        cards: Iterable[ToolCard],
        hashes: dict[str, str] | None = None,
        overlaid: Iterable[str] = (),
    ):
        self._cards = {c.name: c for c in cards}
        self.hashes = hashes or {}
        # the tools whose logistic a calibration overlay (`agentiqa calibrate`) replaced
        self.overlaid = frozenset(overlaid)
        seen: dict[tuple[str, int], str] = {}
        for c in self:
            if c.default_order is not None:
                other = seen.setdefault((c.mode, c.default_order), c.name)
                if other != c.name:
                    raise ConfigError(
                        f"tool cards {other} and {c.name} both have default_order "
                        f"{c.default_order} for {c.mode} tools"
                    )

    def __iter__(self) -> Iterator[ToolCard]:
        return iter(self._cards.values())

    def __len__(self) -> int:
        return len(self._cards)

    def __contains__(self, name: object) -> bool:
        return name in self._cards

    def names(self) -> list[str]:
        return list(self._cards)

    def get(self, name: str) -> ToolCard:
        try:
            return self._cards[name.lower()]
        except KeyError:
            close = difflib.get_close_matches(name.lower(), self._cards, n=3, cutoff=0.5)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise UnknownToolError(f"unknown tool {name!r}{hint}") from None

    def resolve(self, names: Iterable[str]) -> list[ToolCard]:
        return [self.get(n.strip()) for n in names if n.strip()]

    def default_set(self, has_reference: bool) -> list[ToolCard]:
        """The tools ``score`` runs without --tools (FR ones with a reference, else NR), in
        ``default_order``; possibly empty for a user's card folder.

        The shipped NR set was chosen with scripts/quality_check.py: the built-in detectors,
        one per distortion family, each saturating at 5 on clean photos so that a detector
        with nothing to see does not drag the mean down. PIQE is left out: it ranks worse
        on the synthetic check and pyiqa ships it under a non-commercial licence.
        """
        mode = "FR" if has_reference else "NR"
        chosen = [c for c in self if c.mode == mode and c.default_order is not None]
        return sorted(chosen, key=lambda c: c.default_order or 0)

    def weight_free(self, mode: Mode = "NR") -> list[ToolCard]:
        """Every ``mode`` tool that runs without downloaded weights: the default set first."""
        free = [c for c in self if c.mode == mode and not c.weights]
        return sorted(free, key=lambda c: (c.default_order is None, c.default_order or 0, c.name))

    def with_overlay(self, overlay: dict[str, Logistic]) -> CardSet:
        """A copy with calibrated logistic parameters replacing the cards' own."""
        unknown = [n for n in overlay if n not in self._cards]
        if unknown:
            raise UnknownToolError(f"calibration overlay names unknown tools: {', '.join(unknown)}")
        cards = [c.model_copy(update={"logistic": overlay.get(c.name, c.logistic)}) for c in self]
        return CardSet(cards, self.hashes, self.overlaid | set(overlay))

    def fitted_elsewhere(self, card: ToolCard) -> str | None:
        """Where a pyiqa no-reference card's shipped logistic was fitted (its ``source``), or
        None. Such a curve maps raw readings to the levels of its fit data (NIQE's Table 5
        curve, fitted on KADID-10k, never reaches 3.5): on other content it can put every
        image in one level, so a row that uses it says on what it was fitted. A card the
        run's ``--calibration`` overlay refits, a built-in detector (fitted on the photos of
        scripts/fit_builtin_cards.py) and a full-reference card (read against the run's own
        reference) are not flagged."""
        if card.backend != "pyiqa" or card.mode != "NR" or card.logistic is None:
            return None
        if card.name in self.overlaid:
            return None
        return card.logistic.source.split(";")[0].strip()

    def fit_note(self, card: ToolCard) -> str | None:
        """One line saying ``card``'s curve was fitted elsewhere and how far it reaches."""
        source = self.fitted_elsewhere(card)
        if source is None:
            return None
        lo, hi = card.curve_span()
        return (
            f"{card.name}: its 1-5 curve was fitted on {source}, not on this run's images, and "
            f"spans only {lo:.2f}-{hi:.2f}: its levels may put these images all in one (their "
            "order holds); fit it on labelled images like these with `agentiqa calibrate`, "
            "then pass --calibration"
        )


def load_card(path: Path) -> ToolCard:
    data = load_yaml(path, "")  # a regular UTF-8 file, bounded; exit 2 otherwise
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a tool card must be a mapping")
    try:
        card = ToolCard.model_validate(data)
    except ValidationError as e:
        raise ConfigError(f"{path}: {_first_error(e)}") from None
    if card.name != path.stem:
        raise ConfigError(f"{path}: card name {card.name!r} must match the file name")
    return card


def load_cards(folder: Path) -> CardSet:
    paths = sorted(folder.glob("*.yaml"))
    if not paths:
        raise ConfigError(f"no tool cards (*.yaml) in {folder}")
    hashes = {p.stem: hashlib.sha256(read_bytes(p, "")).hexdigest()[:16] for p in paths}
    return CardSet((load_card(p) for p in paths), hashes)


def load_overlay(path: Path) -> dict[str, Logistic]:
    """A calibration overlay: ``{tool: {params: [...], source: ...}}`` as written by calibrate."""
    data = load_yaml(path, "") or {}  # a regular UTF-8 file, bounded; exit 2 otherwise
    try:
        tools = data.get("tools", data) if isinstance(data, dict) else None
        if not isinstance(tools, dict):
            raise ConfigError(f"{path}: calibration overlay must map tool names to parameters")
        return {str(k): Logistic.model_validate(v) for k, v in tools.items()}
    except ValidationError as e:
        raise ConfigError(f"{path}: {_first_error(e)}") from None


def _first_error(e: ValidationError) -> str:
    err = e.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "(top level)"
    return f"field {where}: {err['msg']}"


# -- writing ----------------------------------------------------------------------------------

_WIDTH = 100  # the cards' line width


def _text(key: str, text: str, indent: int = 0) -> list[str]:
    """``key: text`` as the cards write it: long text folded (``>-``) to the line width."""
    pad = " " * indent
    lines = textwrap.wrap(
        text, width=_WIDTH - indent - 2, break_long_words=False, break_on_hyphens=False
    )
    folded = [f"{pad}{key}: >-", *(f"{pad}  {line}" for line in lines)]
    if len(text) > 60 and yaml.safe_load("\n".join(folded)) == {key: text}:
        return folded
    # short, or folding would change it (double spaces, line breaks): a plain YAML scalar
    dumped = yaml.safe_dump({key: text}, width=10_000, allow_unicode=True).rstrip("\n")
    return [pad + line for line in dumped.splitlines()]


def _logistic_lines(logistic: Logistic, indent: int = 0) -> list[str]:
    pad = " " * indent
    params = ", ".join(f"{p:.10g}" for p in logistic.params)
    return [
        f"{pad}logistic:",
        f"{pad}  params: [{params}]",
        *_text("source", logistic.source, indent + 2),
    ]


def _replace_entry(text: str, key: str, lines: list[str]) -> str:
    """Replace the top-level ``key:`` entry (up to the next top-level key), or append it."""
    block = "\n".join(lines) + "\n"
    entry = re.compile(rf"^{re.escape(key)}:.*?(?=^\S|\Z)", re.S | re.M)
    if entry.search(text):
        return entry.sub(lambda _: block, text, count=1)
    return text + ("" if text.endswith("\n") else "\n") + block


def _replace_file(path: Path, text: str) -> None:
    write_whole(path, text)  # a temporary file renamed over it once complete


def write_card_logistic(path: Path, logistic: Logistic, notes: str | None = None) -> ToolCard:
    """Set a card file's logistic (and, if given, its notes), leaving every other line as
    written so a refit is a small diff; the file is only replaced if the result loads as the
    same card with just those fields changed."""
    old = load_card(path)
    text = _replace_entry(path.read_text(encoding="utf-8"), "logistic", _logistic_lines(logistic))
    changes: dict[str, object] = {"logistic": logistic}
    if notes is not None:
        text = _replace_entry(text, "notes", _text("notes", notes))
        changes["notes"] = notes
    try:
        new = ToolCard.model_validate(yaml.safe_load(text))
    except (yaml.YAMLError, ValidationError) as e:  # a bug in this writer, not in the card
        raise ConfigError(f"{path}: rewriting the card would break it: {e}") from None
    same = new.model_dump(exclude=set(changes)) == old.model_dump(exclude=set(changes))
    written = new.logistic is not None and new.logistic.source == logistic.source
    if not (same and written and new.notes == (old.notes if notes is None else notes)):
        raise ConfigError(f"{path}: rewriting the card would change more than {sorted(changes)}")
    _replace_file(path, text)
    return new


def write_overlay(path: Path, tools: Mapping[str, Logistic], header: str = "") -> None:
    """A calibration overlay ``{tools: {name: {params, source}}}`` as ``load_overlay`` reads
    it, after the ``header`` comment lines; the file is replaced atomically."""
    body = {
        name: {"params": [float(p) for p in lg.params], "source": lg.source}
        for name, lg in tools.items()
    }
    comment = "".join(f"# {line}\n" for line in header.splitlines())
    text = comment + yaml.safe_dump({"tools": body}, sort_keys=False, allow_unicode=True)
    _replace_file(Path(path), text)
