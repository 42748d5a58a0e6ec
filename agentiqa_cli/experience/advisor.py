"""``PoolAdvisor``: the agent's ``ToolAdvisor`` over an experience pool.

Coarse level: a key (mode, category) whose top two tools are significantly ordered (Wald
test) names its best tool, with no model call. Fine level: otherwise, the image's pattern
profile (its standardised detector readings) is compared by cosine with the key's records;
when at least two of the three most similar records agree on their best tool, that tool is
used. Otherwise the model decides. With ``evolve`` each assessed image's detected categories
are measured on synthetic levels of that image (as in ``experience build``) and appended;
every 25 new records of a key refit it (``pool.add_records``).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence

import numpy as np
from pydantic import JsonValue

from agentiqa_cli.agent.advice import Advice
from agentiqa_cli.experience import measure
from agentiqa_cli.experience.pool import EVOLVE_BATCH, Pool, Record, add_records
from agentiqa_cli.imaging.load import LoadedImage
from agentiqa_cli.records import Mode, ToolScore
from agentiqa_cli.tools.cards import CardSet
from agentiqa_cli.tools.runner import ToolRunner

TOP = 3


def cosine_top(
    profile: Sequence[float], records: Sequence[Record], k: int = TOP
) -> list[tuple[float, Record]]:
    v = np.asarray(profile, dtype=float)
    nv = float(np.linalg.norm(v))
    scored = []
    for r in records:
        u = np.asarray(r.profile, dtype=float)
        nu = float(np.linalg.norm(u))
        if nv == 0 or nu == 0 or u.shape != v.shape:
            continue
        scored.append((float(v @ u / (nv * nu)), r))
    scored.sort(key=lambda t: -t[0])
    return scored[:k]


class PoolAdvisor:
    def __init__(
        self,
        pool: Pool,
        offered: Sequence[str],
        cards: CardSet | None = None,
        runner: ToolRunner | None = None,
        evolve: bool = False,
        batch: int = EVOLVE_BATCH,
    ):
        """``offered``: the tools the agent may select here (advice naming others is
        ignored). ``cards`` and ``runner`` are needed only to ``evolve``."""
        self.pool = pool
        self.offered = set(offered)
        self.cards = cards
        self.runner = runner
        self.evolve = evolve
        self.batch = batch
        self._lock = threading.Lock()  # one evolution write at a time from this process

    def advise(
        self, category: str, full_reference: bool, evidence: Sequence[ToolScore]
    ) -> Advice | None:
        mode = "FR" if full_reference else "NR"
        entry = self.pool.entry(mode, category)
        if entry is None:
            return None
        if entry.significant and entry.best in self.offered:
            return Advice(
                entry.best,
                "coarse",
                {"d": entry.d, "se": entry.se, "records": entry.records, "nu": entry.nu},
            )
        readings = {s.tool: s.raw for s in evidence if s.raw is not None}
        if not readings:
            return None
        prof = measure.profile(readings, self.pool.meta.standardize)
        near = cosine_top(prof, self.pool.fine(mode, category))
        votes = Counter(r.best for _, r in near if r.best is not None)
        if not votes:
            return None
        tool, n = votes.most_common(1)[0]
        if n < 2 or tool not in self.offered:
            return None
        neighbours: list[JsonValue] = [
            {"source": r.source, "kind": r.kind, "best": r.best, "cosine": round(c, 4)}
            for c, r in near
        ]
        return Advice(tool, "fine", {"neighbours": neighbours, "d": entry.d, "se": entry.se})

    def learn(
        self, image: LoadedImage, categories: Sequence[str], full_reference: bool
    ) -> dict[str, JsonValue] | None:
        if not self.evolve or self.cards is None or self.runner is None:
            return None
        mode: Mode = "FR" if full_reference else "NR"
        keys = [c for c in dict.fromkeys(categories) if self.pool.entry(mode, c) is not None]
        if not keys:
            return None
        tools = {c: self.pool.entries[f"{mode}|{c}"].tools for c in keys}
        union = list(dict.fromkeys(t for ts in tools.values() for t in ts))
        meta = self.pool.meta
        series = measure.measure(
            image.pixels, str(image.path), measure.kinds_of(keys), self.runner,
            self.cards.resolve(union), seed=meta.seed, size=meta.size,
        )  # fmt: skip
        records = [measure.record(s, mode, tools[s.category], meta) for s in series]
        with self._lock:
            refitted = add_records(self.pool.path, records, self.batch)
        return {
            "records": len(records),
            "categories": list(keys),
            "refitted": [f"{m}/{c}" for m, c in refitted],
        }
