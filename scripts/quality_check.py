"""Quality target of the default no-reference score on synthetic distortions.

The fused score is the plain mean of the normalized (1-5) scores of the default NR set, with
the logistic parameters of their tool cards. On the photos bundled with scikit-image
(bench.synth.PHOTOS, 512 px long side) distorted by the eight kinds of
bench.synth.CHECK_KINDS at levels 1-5 (seed 0), it reports per kind, as eval-bench synth
does (bench.synth_eval):

  srcc_within  -SRCC(score, level) over clean + levels 1-5, per photo, averaged    (target: mean >= 0.85)
  srcc_pooled  the same over all photos of the kind at once
  rank_rate    clean photos scored above level 4-5 photos of *other* content       (target: >= 0.90)

and the false-alarm rate of the detectors' findings on the clean photos.

--loo refits every built-in card with one photo left out and scores that photo with
those parameters (leave-one-photo-out), to show how much the in-sample fit flatters.

    python scripts/quality_check.py [--kinds a,b] [--tools a,b] [--loo] [--work DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

from agentiqa_cli.bench.builtin_fit import TARGETS, Reading, fit_detector, read_items
from agentiqa_cli.bench.synth import CHECK_KINDS, PHOTOS, generate, sample_photos
from agentiqa_cli.bench.synth_eval import SynthRow, evaluate_synth
from agentiqa_cli.imaging.load import load_image
from agentiqa_cli.resources import default_cards_dir
from agentiqa_cli.tools.cards import CardSet, load_cards
from agentiqa_cli.tools.detectors import findings
from agentiqa_cli.tools.logistic import normalize

SIZE = 512
SEED = 0


def _norms(
    readings: list[Reading], cards: CardSet, tools: list[str], extra: dict[str, list[float]]
) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for t in tools:
        card = cards.get(t)
        raws = extra[t] if t in extra else [r.raw[card.metric] for r in readings]
        out[t] = [card.normalize(v) for v in raws]
    return out


def _loo_norms(
    readings: list[Reading], cards: CardSet, tools: list[str], extra: dict[str, list[float]]
) -> dict[str, list[float]]:
    """Normalized scores where each photo's builtin cards were fitted without that photo."""
    out = _norms(readings, cards, tools, extra)  # non-builtin tools keep their cards
    photos = sorted({r.photo for r in readings})
    for t in tools:
        card = cards.get(t)
        if card.backend != "builtin" or card.metric not in TARGETS:
            continue
        for p in photos:
            fit = fit_detector(
                card.metric, readings, card.lower_better, card.raw_range, exclude=[p]
            )
            for i, r in enumerate(readings):
                if r.photo == p:
                    out[t][i] = normalize(r.raw[card.metric], fit.params)
    return out


def _pyiqa_raw(tool: str, cards: CardSet, paths: list[Path]) -> list[float]:
    from agentiqa_cli.tools.runner import ToolRunner

    runner = ToolRunner(cards, "cpu")
    card = cards.get(tool)
    vals = []
    for p in paths:
        s = runner.run(card, load_image(p))
        if s.raw is None:
            raise SystemExit(f"{tool}: {s.error}")
        vals.append(s.raw)
    return vals


def report(
    title: str, rows: list[SynthRow], norms: dict[str, list[float]], tools: list[str]
) -> None:
    fused = list(np.mean([norms[t] for t in tools], axis=0))
    rep = evaluate_synth(rows, {"fused": fused, **{t: norms[t] for t in tools}})
    print(f"\n== {title}: fused = mean of {', '.join(tools)}")
    print(f"{'kind':12s} {'srcc_within':>11s} {'srcc_pooled':>11s} {'rank_rate':>9s}")
    m = rep.methods[0]
    for k in m.kinds:
        print(f"{k.kind:12s} {k.srcc_within:11.3f} {k.srcc_level:11.3f} {k.rank_rate:9.3f}")
    print(
        f"{'MEAN':12s} {m.mean_srcc_within:11.3f} {m.mean_srcc_level:11.3f} "
        f"{m.rank_rate:9.3f}  (rank over all kinds, {m.rank_pairs} pairs)"
    )
    clean = [s for s, r in zip(fused, rows, strict=True) if r.level == 0]
    print(f"fused on clean photos: min {min(clean):.2f}  mean {np.mean(clean):.2f}")
    print("single tools, mean srcc_within / rank_rate:")
    for t in rep.methods[1:]:
        print(f"  {t.method:16s} {t.mean_srcc_within:6.3f} {t.rank_rate:6.3f}")


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--kinds", default=",".join(CHECK_KINDS))
    default_nr = load_cards(default_cards_dir()).default_set(has_reference=False)
    ap.add_argument("--tools", default=",".join(c.name for c in default_nr))
    ap.add_argument("--cards", type=Path, default=default_cards_dir())
    ap.add_argument("--loo", action="store_true", help="also leave-one-photo-out refits")
    ap.add_argument("--work", type=Path, default=None, help="keep the synthetic images here")
    ap.add_argument("--size", type=int, default=SIZE, help="long side of the photos (cards: 512)")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument(
        "--photos", default=",".join(PHOTOS), help="skimage.data images (offline ones only)"
    )
    args = ap.parse_args()
    kinds = [k for k in args.kinds.split(",") if k]
    tools = [t for t in args.tools.split(",") if t]
    cards = load_cards(args.cards)

    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        clean = sample_photos(work / "clean", args.size, [n for n in args.photos.split(",") if n])
        items = generate(clean, work / "synth", kinds, range(1, 6), args.seed)
        readings = read_items(items)
        extra = {
            t: _pyiqa_raw(t, cards, [it.path for it in items])
            for t in tools
            if cards.get(t).backend != "builtin"
        }
    rows = [
        SynthRow(image=it.path, reference=it.clean, kind=it.kind, level=it.level) for it in items
    ]
    print(
        f"{len(items)} images: photos at {args.size} px, seed {args.seed}, kinds {', '.join(kinds)}"
    )
    report("cards as shipped", rows, _norms(readings, cards, tools, extra), tools)
    if args.loo:
        report("leave-one-photo-out refits", rows, _loo_norms(readings, cards, tools, extra), tools)

    clean_r = [r for r in readings if r.level == 0]
    alarms = [[f for f in findings(r.raw, cards) if f.severity != "none"] for r in clean_r]
    print(f"\nfalse alarms on the {len(clean_r)} clean photos (all detectors' findings):")
    for r, fs in zip(clean_r, alarms, strict=True):
        print(
            f"  {r.photo:12s} "
            + ("; ".join(f"{f.category}:{f.severity} ({f.reason})" for f in fs) or "-")
        )
    anyf = sum(bool(fs) for fs in alarms) / len(alarms)
    mod = sum(any(f.severity not in ("none", "slight") for f in fs) for fs in alarms) / len(alarms)
    print(f"any severity: {anyf:.0%}   moderate or worse: {mod:.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
