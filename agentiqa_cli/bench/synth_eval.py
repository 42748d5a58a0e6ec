"""Synthetic-distortion check: does each method's score fall as the distortion level rises,
does it rank clean images above heavily distorted ones, and does it see distortions in
clean images that are not there?

Input is the manifest written by ``bench.synth.generate`` (CSV: ``image, reference, kind,
level``; level 0 = the clean image; paths relative to the manifest) and, per method, one
score per manifest row (None = failed) and optionally the distortions it reported.

Definitions (all "higher is better"):

- ``srcc_level`` of a kind = ``-SRCC(score, level)`` pooled over that kind's distorted
  images and the clean images of the same contents. 1 means the score falls strictly with
  the level. ``srcc_within`` is the same statistic computed per content and averaged, which
  removes the between-content spread that an NR score also carries. When the levels vary
  but the scores do not, the method did not react at all and the statistic is 0.
- ``rank_rate`` = over pairs (clean image a, image b at a heavy level — 4 or 5 by default —
  of *another* content), the fraction where ``score(a) > score(b)``; ties count one half.
- ``false_alarm_moderate`` / ``false_alarm_any`` = the fraction of clean images for which
  the method reported at least one distortion of severity moderate or worse / of any
  severity other than "none". Clean images whose findings are missing (None) are skipped.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from agentiqa_cli.bench.methods import Item
from agentiqa_cli.bench.metrics import spearman
from agentiqa_cli.bench.tables import read_csv
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.io.guard import whole_file
from agentiqa_cli.records import Finding

MODERATE_OR_WORSE = frozenset({"moderate", "severe", "extreme"})


class SynthRow(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    image: Path
    reference: Path | None = None
    kind: str = ""
    level: int

    @property
    def content(self) -> str:
        """Which clean picture this row derives from: its reference, or itself when clean."""
        return str(self.reference or self.image)


def load_manifest(path: Path) -> list[SynthRow]:
    table = read_csv(Path(path))
    base = Path(path).parent
    i_img, i_ref, i_kind, i_lvl = (table.col(c) for c in ("image", "reference", "kind", "level"))
    rows = []
    for line, row in table.rows:
        level = table.number(line, row, i_lvl, "level")
        if level != int(level) or level < 0:
            raise ConfigError(f"{path}:{line}: level must be a whole number >= 0, got {level}")
        ref = table.cell(row, i_ref)
        rows.append(
            SynthRow(
                image=base / table.cell(row, i_img),
                reference=base / ref if ref else None,
                kind=table.cell(row, i_kind),
                level=int(level),
            )
        )
    if not rows:
        raise ConfigError(f"{path}: no rows")
    return rows


def synth_items(rows: Sequence[SynthRow], with_reference: bool = True) -> list[Item]:
    """Items for the methods; a clean row is its own reference (FR tools then see a perfect
    copy, which is what "clean" means for them)."""
    items = []
    for r in rows:
        ref = (r.reference or (r.image if r.level == 0 else None)) if with_reference else None
        items.append(Item(image=r.image, reference=ref, key=str(r.image)))
    return items


class KindResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: str
    n: int  # distorted images of this kind
    failed: int
    contents: int
    srcc_level: float | None = None
    srcc_within: float | None = None
    rank_rate: float | None = None
    rank_pairs: int = 0


class SynthMethodResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    method: str
    n: int
    failed: int
    kinds: list[KindResult] = Field(default_factory=list)
    mean_srcc_level: float | None = None
    mean_srcc_within: float | None = None
    rank_rate: float | None = None
    rank_pairs: int = 0
    clean_checked: int = 0  # clean images with findings
    false_alarm_moderate: float | None = None
    false_alarm_any: float | None = None


class SynthReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    heavy_levels: list[int]
    methods: list[SynthMethodResult]


def _falls(levels: Sequence[float], scores: Sequence[float]) -> float | None:
    """-SRCC(score, level); 0 when the levels vary but the scores are all equal."""
    if len(levels) < 2 or len(set(levels)) < 2:
        return None
    if len(set(scores)) < 2:
        return 0.0
    r = spearman(scores, levels)
    return None if r is None else -r


def _rank_rate(
    clean: Sequence[tuple[str, float]], heavy: Sequence[tuple[str, float]]
) -> tuple[float | None, int]:
    if not clean or not heavy:
        return None, 0
    codes = {c: k for k, c in enumerate({c for c, _ in [*clean, *heavy]})}
    cc = np.array([codes[c] for c, _ in clean])
    hc = np.array([codes[c] for c, _ in heavy])
    ca = np.array([s for _, s in clean])
    ha = np.array([s for _, s in heavy])
    other = cc[:, None] != hc[None, :]
    wins = (ca[:, None] > ha[None, :]) + 0.5 * (ca[:, None] == ha[None, :])
    pairs = int(other.sum())
    return (float(wins[other].sum() / pairs) if pairs else None), pairs


def _mean(values: Sequence[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return float(np.mean(vals)) if vals else None


def _evaluate_method(
    name: str,
    rows: Sequence[SynthRow],
    scores: Sequence[float | None],
    findings: Sequence[Sequence[Finding] | None] | None,
    heavy: frozenset[int],
) -> SynthMethodResult:
    sc = np.array([np.nan if v is None else float(v) for v in scores], dtype=float)
    ok = np.isfinite(sc)
    clean_idx = [i for i, r in enumerate(rows) if r.level == 0]
    clean_scores = [(rows[i].content, float(sc[i])) for i in clean_idx if ok[i]]
    kinds_out = []
    for kind in sorted({r.kind for r in rows if r.level > 0}):
        dist_idx = [i for i, r in enumerate(rows) if r.level > 0 and r.kind == kind]
        contents = sorted({rows[i].content for i in dist_idx})
        mine = set(contents)
        valid = [i for i in clean_idx if rows[i].content in mine and ok[i]]
        valid += [i for i in dist_idx if ok[i]]
        pooled = _falls([rows[i].level for i in valid], [float(sc[i]) for i in valid])
        within = []
        for c in contents:
            of_c = [i for i in valid if rows[i].content == c]
            within.append(_falls([rows[i].level for i in of_c], [float(sc[i]) for i in of_c]))
        heavy_scores = [
            (rows[i].content, float(sc[i])) for i in dist_idx if ok[i] and rows[i].level in heavy
        ]
        rate, pairs = _rank_rate(clean_scores, heavy_scores)
        kinds_out.append(
            KindResult(
                kind=kind,
                n=len(dist_idx),
                failed=int(sum(not ok[i] for i in dist_idx)),
                contents=len(contents),
                srcc_level=pooled,
                srcc_within=_mean(within),
                rank_rate=rate,
                rank_pairs=pairs,
            )
        )
    all_heavy = [
        (r.content, float(sc[i])) for i, r in enumerate(rows) if r.level in heavy and ok[i]
    ]
    rate, pairs = _rank_rate(clean_scores, all_heavy)
    result = SynthMethodResult(
        method=name,
        n=len(rows),
        failed=int((~ok).sum()),
        kinds=kinds_out,
        mean_srcc_level=_mean([k.srcc_level for k in kinds_out]),
        mean_srcc_within=_mean([k.srcc_within for k in kinds_out]),
        rank_rate=rate,
        rank_pairs=pairs,
    )
    if findings is not None:
        checked = [fs for i in clean_idx if (fs := findings[i]) is not None]
        result.clean_checked = len(checked)
        if checked:
            moderate = sum(any(f.severity in MODERATE_OR_WORSE for f in fs) for fs in checked)
            anything = sum(any(f.severity != "none" for f in fs) for fs in checked)
            result.false_alarm_moderate = moderate / len(checked)
            result.false_alarm_any = anything / len(checked)
    return result


def evaluate_synth(
    rows: Sequence[SynthRow],
    predictions: Mapping[str, Sequence[float | None]],
    findings: Mapping[str, Sequence[Sequence[Finding] | None]] | None = None,
    heavy_levels: Sequence[int] = (4, 5),
) -> SynthReport:
    """One result per method; ``findings[method]`` (if given) is aligned with ``rows``."""
    for name, pred in predictions.items():
        if len(pred) != len(rows):
            raise ValueError(f"method {name}: {len(pred)} scores for {len(rows)} manifest rows")
    heavy = frozenset(heavy_levels)
    out = []
    for name, pred in predictions.items():
        fs = (findings or {}).get(name)
        if fs is not None and len(fs) != len(rows):
            raise ValueError(f"method {name}: {len(fs)} finding lists for {len(rows)} rows")
        out.append(_evaluate_method(name, rows, pred, fs, heavy))
    return SynthReport(heavy_levels=sorted(heavy), methods=out)


def _cell(v: float | None) -> str:
    return "" if v is None else f"{v:.4f}"


def write_synth_csv(report: SynthReport, path: Path) -> None:
    """One row per method × kind, plus a ``(all)`` row per method with the means."""
    cols = ["method", "kind", "n", "failed", "srcc_level", "srcc_within", "rank_rate",
            "rank_pairs", "false_alarm_moderate", "false_alarm_any"]  # fmt: skip
    with whole_file(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for m in report.methods:
            for k in m.kinds:
                w.writerow([m.method, k.kind, k.n, k.failed, _cell(k.srcc_level),
                            _cell(k.srcc_within), _cell(k.rank_rate), k.rank_pairs, "", ""])  # fmt: skip
            w.writerow([m.method, "(all)", m.n, m.failed, _cell(m.mean_srcc_level),
                        _cell(m.mean_srcc_within), _cell(m.rank_rate), m.rank_pairs,
                        _cell(m.false_alarm_moderate), _cell(m.false_alarm_any)])  # fmt: skip
