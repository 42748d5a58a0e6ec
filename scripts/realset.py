"""Build the real-image set (``make realset``) into .cache/realset/ from scripts/realset.yaml.

    python scripts/realset.py [--spec scripts/realset.yaml] [--cache .cache/realset]

Downloads the Debian packages the spec names (``apt-get download``, no root needed), unpacks
them (``dpkg-deb -x``), writes the clean working copies, manifest.json (source and licence per
image) and the distorted series of the unfitted photographs (synth/manifest.csv).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from agentiqa_cli.bench.realset import CleanRecord, RealsetSpec, build, load_spec
from agentiqa_cli.errors import AgentIQAError

ROOT = Path(__file__).resolve().parent.parent


def build_set(spec_path: Path, cache: Path, label: str) -> tuple[RealsetSpec, list[CleanRecord]]:
    """The spec and the clean images it builds into ``cache`` (fit_builtin_cards.py builds the
    fit set with it too); a bad spec or a failed download exits with its error's code."""
    try:
        spec = load_spec(spec_path)
        return spec, build(spec, cache)
    except AgentIQAError as e:
        print(f"{label}: {e}", file=sys.stderr)
        raise SystemExit(e.exit_code) from None


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--spec", type=Path, default=ROOT / "scripts" / "realset.yaml")
    ap.add_argument("--cache", type=Path, default=ROOT / ".cache" / "realset")
    args = ap.parse_args()
    spec, records = build_set(args.spec, args.cache, "realset")
    styles = Counter(s for r in records for s in r.styles)
    kinds = Counter(r.kind for r in records)
    n_synth = len(spec.distorted()) * len(spec.kinds) * len(spec.levels)
    print(
        f"realset in {args.cache}: {len(records)} clean images ({dict(kinds)}), "
        f"styles {dict(styles)}; {n_synth} distorted images in synth/"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
