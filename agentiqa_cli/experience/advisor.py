"""``PoolAdvisor``: the agent's ``ToolAdvisor`` over an experience pool (EvoIR-Agent §3.3).

The pool is keyed by (mode, degradation set). For the distortion set the agent found, the
levels are tried most specific first:

- coarse, the whole set: a key for exactly this set (records of coupled distortions) whose
  top two tools are significantly ordered (Wald test) names one tool for every category of
  the set, with no model call;
- coarse, per category: the same test on the category's own key;
- fine: otherwise the image's pattern profile (its standardised detector readings) is
  retrieved among the key's learnt pattern profiles (``profiles.py``: top-3 by cosine, then
  the MAD rule); a profile that holds the image names its tool;
- insight: what is left goes to the model's ``select``, shown the insight text of the
  set's key (or of each category's) — which tool the records favour, by how much, over how
  many records (``Entry.insight``, Eq. 11).

With ``evolve`` each assessed image's detected categories (and each pair of them the pool
keeps as a set) are measured on synthetic levels of that image (as in ``experience build``)
and appended; every 25 new records of a key refit
it and learn its profiles again (``pool.add_records``).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from pydantic import JsonValue

from agentiqa_cli.agent.advice import Advice, Insight
from agentiqa_cli.categories import category_of_type
from agentiqa_cli.experience import measure, profiles
from agentiqa_cli.experience.pool import EVOLVE_BATCH, Entry, Pool, add_records, set_key
from agentiqa_cli.imaging.load import LoadedImage
from agentiqa_cli.records import Mode, ToolScore
from agentiqa_cli.tools.cards import CardSet
from agentiqa_cli.tools.runner import ToolRunner


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
        self, categories: Sequence[str], full_reference: bool, evidence: Sequence[ToolScore]
    ) -> dict[str, Advice]:
        mode = "FR" if full_reference else "NR"
        cats = list(dict.fromkeys(categories))
        if len(cats) > 1:
            whole = self.pool.entry(mode, cats)
            if whole is not None and whole.significant and whole.best in self.offered:
                a = Advice(whole.best, "coarse", _coarse_detail(whole))
                return dict.fromkeys(cats, a)
        out: dict[str, Advice] = {}
        prof: list[float] | None = None
        for cat in cats:
            entry = self.pool.entry(mode, [cat])
            if entry is None:
                continue
            if entry.significant and entry.best in self.offered:
                out[cat] = Advice(entry.best, "coarse", _coarse_detail(entry))
                continue
            if not entry.profiles:
                continue
            if prof is None:
                readings = {s.tool: s.raw for s in evidence if s.raw is not None}
                if not readings:
                    continue
                prof = measure.profile(readings, self.pool.meta.standardize)
            found = profiles.match(prof, entry.profiles)
            if found is not None and found.best in self.offered:
                detail: dict[str, JsonValue] = {
                    "profile": found.text,
                    "members": found.members,
                    "d": entry.d,
                    "se": entry.se,
                }
                out[cat] = Advice(found.best, "fine", detail)
        return out

    def insights(self, categories: Sequence[str], full_reference: bool) -> list[Insight]:
        """The insight level for a set the model decides: the set's own key when the pool
        has one, else each category's."""
        mode = "FR" if full_reference else "NR"
        cats = list(dict.fromkeys(categories))
        whole = self.pool.entry(mode, cats) if len(cats) > 1 else None
        entries = [whole] if whole is not None else [self.pool.entry(mode, [c]) for c in cats]
        return [
            Insight(categories=list(e.degradations.split("+")), best=e.best, text=e.insight())
            for e in entries
            if e is not None and e.best in self.offered
        ]

    def learn(
        self, image: LoadedImage, categories: Sequence[str], full_reference: bool
    ) -> dict[str, JsonValue] | None:
        if not self.evolve or self.cards is None or self.runner is None:
            return None
        mode: Mode = "FR" if full_reference else "NR"
        found = list(dict.fromkeys(categories))
        keys = [c for c in found if self.pool.entry(mode, [c]) is not None]
        # pairs of the categories found that the pool keeps as a set (built --coupled)
        pairs = [k for k in measure.coupled_kinds(found)
                 if self.pool.entry(mode, _kind_set(k)) is not None]  # fmt: skip
        if not keys and not pairs:
            return None
        tools = {set_key([c]): self.pool.entries[f"{mode}|{set_key([c])}"].tools for c in keys}
        for k in pairs:
            key = set_key(_kind_set(k))
            tools[key] = self.pool.entries[f"{mode}|{key}"].tools
        union = list(dict.fromkeys(t for ts in tools.values() for t in ts))
        meta = self.pool.meta
        series = measure.measure(
            image.pixels, str(image.path), measure.kinds_of(keys) + pairs, self.runner,
            self.cards.resolve(union), seed=meta.seed, size=meta.size,
        )  # fmt: skip
        records = [measure.record(s, mode, tools[s.degradations], meta) for s in series]
        with self._lock:
            refitted = add_records(self.pool.path, records, self.batch)
        return {
            "records": len(records),
            "categories": [*keys, *(set_key(_kind_set(k)) for k in pairs)],
            "refitted": [f"{m}/{c}" for m, c in refitted],
        }


def _kind_set(kind: str) -> list[str]:
    """The categories of a (coupled) synthetic kind."""
    return [c for part in kind.split(measure.COUPLED) if (c := category_of_type(part))]


def _coarse_detail(e: Entry) -> dict[str, JsonValue]:
    return {"d": e.d, "se": e.se, "records": e.records, "nu": e.nu, "key": e.degradations}
