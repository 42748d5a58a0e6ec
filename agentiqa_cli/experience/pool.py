"""The experience pool file: one SQLite database (stdlib), versioned, safe for concurrent runs.

Tables:

- ``meta``: format name and version, the tool cards it was measured with (file hashes,
  calibration overlay digest), how detector readings are standardised into pattern
  profiles, and the logistic fits the RMSE metric uses.
- ``entries``: the coarse level, one row per key (mode, distortion category): the
  candidate tools, the pairwise win/tie counts, θ, ν, Cov(θ), d, SE, significance, the
  number of records fitted, and the id of the last record fitted.
- ``records``: every vote (one content, one distortion kind): its counts, its pattern
  profile (the standardised detector readings of the distorted image) and its best tool.
  The fine level is these records, retrieved by cosine similarity of profiles.

A pool is written whole into a temporary file and renamed into place, and every later
change (``--evolve``) is one ``BEGIN IMMEDIATE`` transaction, so a reader sees the pool
before or after a change, never half of it. Loading reads everything in one transaction
and validates it; anything wrong is a ``ConfigError`` (exit 2) naming the problem.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentiqa_cli.errors import ConfigError
from agentiqa_cli.experience import btd
from agentiqa_cli.experience.vote import Counts
from agentiqa_cli.records import Category, Mode

FORMAT = "agentiqa-experience"
VERSION = 1
EVOLVE_BATCH = 25  # EvoIR-Agent: B new records for a key trigger a refit

Key = tuple[str, str]  # (mode, category)

_SCHEMA = """
CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE entries (
    mode TEXT NOT NULL, category TEXT NOT NULL, tools TEXT NOT NULL,
    wins TEXT NOT NULL, ties TEXT NOT NULL, theta TEXT NOT NULL, nu REAL NOT NULL,
    cov TEXT NOT NULL, d REAL, se REAL, significant INTEGER NOT NULL,
    records INTEGER NOT NULL, last_record INTEGER NOT NULL,
    PRIMARY KEY (mode, category));
CREATE TABLE records (
    id INTEGER PRIMARY KEY AUTOINCREMENT, mode TEXT NOT NULL, category TEXT NOT NULL,
    source TEXT NOT NULL, kind TEXT NOT NULL, wins TEXT NOT NULL, ties TEXT NOT NULL,
    profile TEXT, best TEXT);
CREATE INDEX records_key ON records (mode, category, id);
"""


class Meta(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: str = FORMAT
    version: int = VERSION
    cards: dict[str, str]  # tool card file hashes of every tool measured
    calibration: str | None = None  # digest of the calibration overlay, if any
    detectors: list[str]  # the profile's components, in order
    standardize: dict[str, tuple[float, float]]  # detector → (mean, std) of raw readings
    fits: dict[str, list[float] | None] = Field(default_factory=dict)  # "tool|kind" → logistic
    source: str = ""  # what it was built from
    size: int | None = 384  # long side the images were resized to before distorting
    seed: int = 0  # the synthetic distortions' seed


class Record(BaseModel):
    """One vote: the candidates' outcomes on one content under one distortion kind."""

    model_config = ConfigDict(extra="forbid")

    mode: Mode
    category: Category
    source: str
    kind: str
    tools: list[str]
    wins: list[list[float]]
    ties: list[list[float]]
    profile: list[float] | None = None
    best: str | None = None

    @property
    def key(self) -> Key:
        return (self.mode, self.category)

    def counts(self) -> Counts:
        return Counts(np.asarray(self.wins, float), np.asarray(self.ties, float))


class Entry(BaseModel):
    """The coarse level of one key."""

    model_config = ConfigDict(extra="forbid")

    mode: Mode
    category: Category
    tools: list[str]
    wins: list[list[float]]
    ties: list[list[float]]
    theta: list[float]
    nu: float
    cov: list[list[float]]
    d: float | None
    se: float | None
    significant: bool
    records: int
    last_record: int = 0

    @property
    def key(self) -> Key:
        return (self.mode, self.category)

    def ranking(self) -> list[tuple[str, float, float | None]]:
        """(tool, θ, SE of θ) best first; SE relative to the pinned first tool."""
        order = sorted(range(len(self.tools)), key=lambda i: -self.theta[i])
        return [(self.tools[i], self.theta[i], _sqrt(self.cov[i][i]) if i else None) for i in order]

    @property
    def best(self) -> str:
        return self.tools[max(range(len(self.tools)), key=lambda i: self.theta[i])]


def _sqrt(v: float) -> float | None:
    return math.sqrt(v) if v >= 0 and math.isfinite(v) else None


def fit_entry(mode: Mode, category: Category, tools: list[str], counts: Counts, records: int,
              last_record: int) -> Entry:  # fmt: skip
    f = btd.fit(counts)
    return Entry(
        mode=mode,
        category=category,
        tools=tools,
        wins=counts.wins.tolist(),
        ties=counts.ties.tolist(),
        theta=f.theta,
        nu=f.nu,
        cov=f.cov,
        d=f.d,
        se=f.se,
        significant=f.significant,
        records=records,
        last_record=last_record,
    )


class Pool(BaseModel):
    """A whole pool as read from its file, validated."""

    model_config = ConfigDict(extra="forbid")

    path: Path
    meta: Meta
    entries: dict[str, Entry]  # "mode|category" → entry
    records: list[Record]

    def entry(self, mode: str, category: str) -> Entry | None:
        return self.entries.get(f"{mode}|{category}")

    def fine(self, mode: str, category: str) -> list[Record]:
        return [r for r in self.records if r.mode == mode and r.category == category and r.profile]


# -- writing -------------------------------------------------------------------------------


def write_pool(path: Path, meta: Meta, records: Sequence[Record]) -> Pool:
    """A new pool from ``records`` (every key fitted), written whole then renamed into place."""
    path = Path(path)
    _same_tools(records)
    target = Path(os.path.realpath(path))  # through a link: the file it names, link kept
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        con = sqlite3.connect(tmp)
        try:
            con.executescript(_SCHEMA)
            with con:
                for name, value in meta.model_dump(mode="json").items():
                    con.execute("INSERT INTO meta VALUES (?, ?)", (name, json.dumps(value)))
                _insert_records(con, records)
                for r in {r.key: r for r in records}.values():
                    _refit(con, r.key, r.tools)
        finally:
            con.close()
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return read_pool(path)


def _insert_records(con: sqlite3.Connection, records: Iterable[Record]) -> None:
    con.executemany(
        "INSERT INTO records (mode, category, source, kind, wins, ties, profile, best) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                r.mode,
                r.category,
                r.source,
                r.kind,
                json.dumps(r.wins),
                json.dumps(r.ties),
                json.dumps(r.profile) if r.profile is not None else None,
                r.best,
            )
            for r in records
        ],
    )


def _refit(con: sqlite3.Connection, key: Key, tools: list[str] | None = None) -> None:
    """Sum every record of ``key`` and refit its entry."""
    rows = con.execute(
        "SELECT id, wins, ties FROM records WHERE mode = ? AND category = ? ORDER BY id", key
    ).fetchall()
    if not rows:
        return
    if tools is None:
        row = con.execute(
            "SELECT tools FROM entries WHERE mode = ? AND category = ?", key
        ).fetchone()
        tools = json.loads(row[0]) if row else None
    first = np.asarray(json.loads(rows[0][1]), float)
    total = Counts.zeros(first.shape[0])
    for _, w, t in rows:
        total = total + Counts(np.asarray(json.loads(w), float), np.asarray(json.loads(t), float))
    if tools is None:
        raise ConfigError(f"experience pool: no tool list for {key}")
    e = fit_entry(key[0], key[1], tools, total, len(rows), int(rows[-1][0]))  # type: ignore[arg-type]
    con.execute(
        "INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            e.mode,
            e.category,
            json.dumps(e.tools),
            json.dumps(e.wins),
            json.dumps(e.ties),
            json.dumps(e.theta),
            e.nu,
            json.dumps(e.cov),
            e.d,
            e.se,
            int(e.significant),
            e.records,
            e.last_record,
        ),
    )


def _same_tools(records: Sequence[Record]) -> None:
    """Every record of one key names the same candidates, in the same order."""
    tools: dict[Key, list[str]] = {}
    for r in records:
        if tools.setdefault(r.key, r.tools) != r.tools:
            raise ValueError(f"records of {r.key} disagree on the candidate tools")


def add_records(path: Path, records: Sequence[Record], batch: int = EVOLVE_BATCH) -> list[Key]:
    """Append ``records`` to an existing pool (one transaction) and refit every key that now
    has ``batch`` or more records beyond its last fit. Returns the keys refitted."""
    if not records:
        return []
    refitted: list[Key] = []
    with _connect(path, write=True) as con:
        con.execute("BEGIN IMMEDIATE")  # one writer at a time; readers see before or after
        try:
            for key in dict.fromkeys(r.key for r in records):
                row = con.execute(
                    "SELECT tools FROM entries WHERE mode = ? AND category = ?", key
                ).fetchone()
                mine = [r for r in records if r.key == key]
                if row is not None and json.loads(row[0]) != mine[0].tools:
                    raise ConfigError(
                        f"experience pool {path}: the records for {key[0]}/{key[1]} name "
                        "other tools than the pool; rebuild the pool"
                    )
            _insert_records(con, records)
            for key in dict.fromkeys(r.key for r in records):
                row = con.execute(
                    "SELECT last_record FROM entries WHERE mode = ? AND category = ?", key
                ).fetchone()
                last = row[0] if row else 0
                (new,) = con.execute(
                    "SELECT COUNT(*) FROM records WHERE mode = ? AND category = ? AND id > ?",
                    (*key, last),
                ).fetchone()
                if new >= batch:
                    tools = next(r.tools for r in records if r.key == key)
                    _refit(con, key, tools)
                    refitted.append(key)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    return refitted


# -- reading -------------------------------------------------------------------------------


@contextmanager
def _connect(path: Path, write: bool = False) -> Iterator[sqlite3.Connection]:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(
            f"experience pool {path}: no such file (make one with `agentiqa experience build`)"
        )
    mode = "rw" if write else "ro"
    try:
        con = sqlite3.connect(
            f"{path.resolve().as_uri()}?mode={mode}", uri=True, timeout=60, isolation_level=None
        )
    except sqlite3.Error as e:
        raise ConfigError(f"experience pool {path}: cannot open: {e}") from None
    try:
        yield con
    except sqlite3.DatabaseError as e:
        raise ConfigError(f"experience pool {path}: not a readable pool ({e})") from None
    finally:
        con.close()


def read_pool(path: Path) -> Pool:
    """The whole pool, read in one transaction and validated; ConfigError if it is missing,
    corrupt or of another format or version."""
    with _connect(path) as con:
        con.execute("BEGIN")
        (check,) = con.execute("PRAGMA quick_check").fetchone()
        if check != "ok":
            raise ConfigError(f"experience pool {path}: the file is damaged ({check})")
        try:
            raw_meta = dict(con.execute("SELECT name, value FROM meta").fetchall())
        except sqlite3.OperationalError:
            raise ConfigError(f"experience pool {path}: not an agentiqa experience pool") from None
        meta_values = _json_values(path, raw_meta)
        if meta_values.get("format") != FORMAT:
            raise ConfigError(f"experience pool {path}: not an agentiqa experience pool")
        if meta_values.get("version") != VERSION:
            raise ConfigError(
                f"experience pool {path}: format version {meta_values.get('version')}, this "
                f"agentiqa reads version {VERSION}; rebuild it with `agentiqa experience build`"
            )
        entries = con.execute("SELECT * FROM entries").fetchall()
        entry_cols = [c[0] for c in con.execute("SELECT * FROM entries LIMIT 0").description]
        records = con.execute(
            "SELECT mode, category, source, kind, wins, ties, profile, best FROM records "
            "ORDER BY id"
        ).fetchall()
        con.execute("COMMIT")
    try:
        meta = Meta.model_validate(meta_values)
        pool_entries: dict[str, Entry] = {}
        for row in entries:
            d = dict(zip(entry_cols, row, strict=True))
            for k in ("tools", "wins", "ties", "theta", "cov"):
                d[k] = json.loads(d[k])
            e = Entry.model_validate(d)
            _check_shape(e)
            pool_entries[f"{e.mode}|{e.category}"] = e
        tools_of = {k: e.tools for k, e in pool_entries.items()}
        recs = []
        for mode, cat, src, kind, w, t, prof, best in records:
            tools = tools_of.get(f"{mode}|{cat}")
            if tools is None:
                raise ValueError(f"a record for {mode}/{cat}, which has no entry")
            recs.append(
                Record(
                    mode=mode,
                    category=cat,
                    source=src,
                    kind=kind,
                    tools=tools,
                    wins=json.loads(w),
                    ties=json.loads(t),
                    profile=json.loads(prof) if prof else None,
                    best=best,
                )
            )
    except (ValidationError, ValueError, TypeError, KeyError, RecursionError) as e:
        first = (str(e) or type(e).__name__).splitlines()[0][:200]
        raise ConfigError(f"experience pool {path}: invalid content ({first})") from None
    return Pool(path=Path(path), meta=meta, entries=pool_entries, records=recs)


def _json_values(path: Path, raw: Mapping[str, str]) -> dict[str, Any]:
    try:
        return {k: json.loads(v) for k, v in raw.items()}
    except (TypeError, ValueError, RecursionError):
        raise ConfigError(f"experience pool {path}: invalid metadata") from None


def _check_shape(e: Entry) -> None:
    k = len(e.tools)
    ok = (
        len(e.theta) == k
        and len(e.wins) == k
        and len(e.ties) == k
        and len(e.cov) == k
        and all(len(r) == k for r in [*e.wins, *e.ties, *e.cov])
    )
    if not ok:
        raise ValueError(f"entry {e.mode}/{e.category}: shapes do not match its {k} tools")


def check_cards(pool: Pool, hashes: Mapping[str, str], calibration: str | None) -> None:
    """Refuse a pool measured with other tool cards (or another calibration overlay)."""
    changed = sorted(n for n, h in pool.meta.cards.items() if hashes.get(n) != h)
    if changed:
        raise ConfigError(
            f"experience pool {pool.path}: built with other tool cards ({', '.join(changed)} "
            "changed or missing); rebuild it with `agentiqa experience build`"
        )
    if pool.meta.calibration != calibration:
        raise ConfigError(
            f"experience pool {pool.path}: built with another calibration overlay; rebuild it"
        )
