"""Reading a results CSV written by ``score``, ``assess``, ``evaluate`` or ``fix`` (or any
CSV with an ``image`` column), with the records parser ``--resume`` uses.

Only ``image`` is required; ``status``, ``error``, ``score``, ``level``, ``answer``,
``distortions`` and ``imperfections`` are used when present. List cells are parsed
tolerantly: ``a;b``, ``a:severe;b:slight@Face``, ``a=0.4``, a JSON list of names or of
objects (``{"type": …, "level": …}``), or a JSON object ``{name: level}``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from agentiqa_cli.errors import ConfigError
from agentiqa_cli.io.results import read_table

_NAME_KEYS = ("type", "name", "kind", "category", "imperfection", "issue")
_LEVEL_KEYS = ("level", "severity", "score", "confidence", "value")


@dataclass(frozen=True)
class Mark:
    """One named finding in a list cell, with its level as written ('' if none)."""

    name: str
    level: str = ""


@dataclass(frozen=True)
class Row:
    image: str
    status: str = "ok"
    error: str = ""
    score: float | None = None
    level: str = ""
    answer: str = ""
    distortions: list[Mark] = field(default_factory=list)
    imperfections: list[Mark] = field(default_factory=list)


def _norm_name(text: str) -> str:
    return "_".join(text.strip().lower().replace("-", " ").split())


def _from_json(value: object) -> list[Mark]:
    if isinstance(value, dict):
        if any(k in value for k in _NAME_KEYS):
            value = [value]
        else:
            return [Mark(_norm_name(str(k)), "" if v is None else str(v)) for k, v in value.items()]
    if not isinstance(value, list):
        return [Mark(_norm_name(str(value)))] if str(value).strip() else []
    marks = []
    for item in value:
        if isinstance(item, dict):
            name = next((str(item[k]) for k in _NAME_KEYS if item.get(k) not in (None, "")), "")
            level = next((str(item[k]) for k in _LEVEL_KEYS if item.get(k) not in (None, "")), "")
            if name.strip():
                marks.append(Mark(_norm_name(name), level))
        elif item is not None and str(item).strip():
            marks.extend(parse_marks(str(item)))
    return marks


_OPEN, _CLOSE = "([{", ")]}"


def split_items(text: str) -> list[str]:
    """A list cell's items. ``;`` always separates (the writers' separator); ``,`` and ``|``
    separate too (other programs' CSVs) except inside brackets, after an item's ``@``
    (a scope: ``blurs:moderate@crop2 [0.0, 0.123, 0.5, 0.6]``) and before a number (a
    box ``0.1,0.2,0.5,0.6`` or a vector is one value, never several findings)."""
    items: list[str] = []
    cur: list[str] = []
    depth, scoped = 0, False
    for i, ch in enumerate(text):
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth = max(0, depth - 1)
        elif ch == "@" and depth == 0:
            scoped = True
        if ch == ";" or (
            ch in ",|" and depth == 0 and not scoped and not _number_follows(text, i + 1)
        ):
            items.append("".join(cur))
            cur, depth, scoped = [], 0, False
            continue
        cur.append(ch)
    items.append("".join(cur))
    return [item.strip() for item in items if item.strip()]


def _number_follows(text: str, at: int) -> bool:
    rest = text[at:].lstrip()
    return bool(rest) and (rest[0].isdigit() or (rest[0] in "+-." and rest[1:2].isdigit()))


def parse_marks(cell: str | None) -> list[Mark]:
    """The findings in one list cell; anything unparseable becomes a name, never an error."""
    text = (cell or "").strip()
    if not text or text.lower() in ("none", "nan", "[]", "{}", "-"):
        return []
    if text[0] in "[{":
        try:
            return _from_json(json.loads(text))
        except (json.JSONDecodeError, RecursionError):  # ("[" × 60 000: nested too deep)
            text = text.strip("[]{}")
    marks = []
    for item in split_items(text):
        part = item.split("@", 1)[0].strip().strip("\"'")  # the scope is not the finding
        name, level = part, ""
        for sep in (":", "="):
            if sep in part:
                name, level = (s.strip() for s in part.split(sep, 1))
                break
        if _norm_name(name):
            marks.append(Mark(_norm_name(name), level))
    return marks


def _float(text: str | None) -> float | None:
    try:
        v = float(text or "")
    except ValueError:
        return None
    return v if math.isfinite(v) else None  # NaN or ±inf is no score


def read_rows(path: Path) -> list[Row]:
    """Every row of the results CSV at ``path`` (parsed by ``io.results.read_table``, as
    ``--resume`` parses it); the newest row wins for an image (resume)."""
    header, records = read_table(path)
    if "image" not in header:
        raise ConfigError(f"{path}: not a results CSV (no 'image' column)")
    rows: dict[str, Row] = {}
    for rec in records:
        image = rec["image"].strip()
        if not image:
            continue
        rows[image] = Row(
            image=image,
            status=(rec.get("status") or "ok").strip() or "ok",
            error=rec.get("error") or "",
            score=_float(rec.get("score")),
            level=(rec.get("level") or "").strip(),
            answer=rec.get("answer") or "",
            distortions=parse_marks(rec.get("distortions")),
            imperfections=parse_marks(rec.get("imperfections")),
        )
    return list(rows.values())
