"""The level cut-offs docs/commands.md states are the ones the code applies."""

from __future__ import annotations

import re
from pathlib import Path

from agentiqa_cli.evaluate.tiers import DEFAULT_CUTS
from agentiqa_cli.records import LEVELS, level_of
from agentiqa_cli.report.table import cutoffs

COMMANDS = Path(__file__).resolve().parent.parent / "docs" / "commands.md"


def test_the_docs_state_each_levels_score_range() -> None:
    text = COMMANDS.read_text()
    outputs = text[text.index("## Outputs") : text.index("## Bad input")]
    rows = dict(re.findall(r"^\| (\w+) \| ([^|]+?) \| \d \|$", outputs, flags=re.M))
    assert rows == cutoffs()  # the report's summary states the same ranges
    for i, level in enumerate(LEVELS):  # and level_of agrees at each edge
        lo, hi = i + 0.5, i + 1.5
        assert level_of(hi - 1e-9) == level and (i == 4 or level_of(hi) == LEVELS[i + 1])
        assert i == 0 or level_of(lo) == level
    assert DEFAULT_CUTS == (1.5, 2.5, 3.5, 4.5)  # "evaluate's tiers use the same cut points"
