"""Reading a results CSV written by ``score``/``assess`` (or any CSV with an ``image`` column).

Only ``image`` is required; ``status``, ``error``, ``score``, ``level``, ``distortions`` and
``imperfections`` are used when present. List cells are parsed tolerantly: ``a;b``,
``a:severe;b:slight@Face``, ``a=0.4``, a JSON list of names or of objects
(``{"type": …, "level": …}``), or a JSON object ``{name: level}``.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

from agentiqa_cli.errors import ConfigError
from agentiqa_cli.io.results import original_cell

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
    for part in text.replace(",", ";").replace("|", ";").split(";"):
        part = part.strip().strip("\"'")
        if not part:
            continue
        name, level = part, ""
        for sep in (":", "="):
            if sep in part:
                name, level = (s.strip() for s in part.split(sep, 1))
                break
        name = name.split("@", 1)[0]
        if _norm_name(name):
            marks.append(Mark(_norm_name(name), level.split("@", 1)[0].strip()))
    return marks


def _float(text: str | None) -> float | None:
    try:
        v = float(text or "")
    except ValueError:
        return None
    return v if v == v else None  # NaN is no score


def read_rows(path: Path) -> list[Row]:
    """Every row of the results CSV at ``path``; the newest row wins for an image (resume)."""
    try:
        with open(path, newline="", encoding="utf-8", errors="surrogateescape") as f:
            reader = csv.DictReader(f)
            if reader.fieldnames is None or "image" not in reader.fieldnames:
                raise ConfigError(f"{path}: not a results CSV (no 'image' column)")
            rows: dict[str, Row] = {}
            for cells in reader:
                # cells that could read as formulas were written with a leading ' (safe_cell)
                rec = {k: original_cell(v) for k, v in cells.items() if isinstance(v, str)}
                image = (rec.get("image") or "").strip()
                if not image:
                    continue
                rows[image] = Row(
                    image=image,
                    status=(rec.get("status") or "ok").strip() or "ok",
                    error=rec.get("error") or "",
                    score=_float(rec.get("score")),
                    level=(rec.get("level") or "").strip(),
                    distortions=parse_marks(rec.get("distortions")),
                    imperfections=parse_marks(rec.get("imperfections")),
                )
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory, not a results CSV") from None
    except (csv.Error, UnicodeError) as e:
        raise ConfigError(f"{path}: not a readable CSV ({e})") from None
    return list(rows.values())
