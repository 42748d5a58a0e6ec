"""The quality gate and exit codes, documented in --help and the README.

0  every input processed and the gate passed
1  the quality gate failed (an image below --fail-under, or the mean below --fail-mean-under)
2  usage or configuration error (bad flag, unknown tool, bad YAML)
3  some inputs could not be processed (their rows say why); takes precedence over 1
4  internal error (a bug: --debug shows the traceback)

With a gate set, an image processed without a score (an error row, or no tool could run)
fails it: a gate cannot pass what it could not measure (exit 3 still takes precedence).
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import fmean

from agentiqa_cli.records import Result

EXIT_OK, EXIT_GATE, EXIT_USAGE, EXIT_INPUT, EXIT_INTERNAL = 0, 1, 2, 3, 4
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)


@dataclass
class GateReport:
    processed: int
    errors: int
    mean: float | None
    below: list[str]
    unscored: list[str]
    fail_under: float | None
    fail_mean_under: float | None

    @property
    def gate_failed(self) -> bool:
        mean_low = (
            self.fail_mean_under is not None
            and self.mean is not None
            and self.mean < self.fail_mean_under
        )
        gated = self.fail_under is not None or self.fail_mean_under is not None
        return bool(self.below) or mean_low or (gated and bool(self.unscored))

    @property
    def exit_code(self) -> int:
        if self.errors:
            return EXIT_INPUT
        return EXIT_GATE if self.gate_failed else EXIT_OK


def evaluate_gate(
    results: list[Result], fail_under: float | None, fail_mean_under: float | None
) -> GateReport:
    scored = [r for r in results if r.status == "ok" and r.score is not None]
    mean = fmean(r.score for r in scored if r.score is not None) if scored else None
    below = [
        r.image
        for r in scored
        if fail_under is not None and r.score is not None and r.score < fail_under
    ]
    unscored = [r.image for r in results if r.status != "ok" or r.score is None]
    return GateReport(
        processed=len(results),
        errors=sum(r.status == "error" for r in results),
        mean=mean,
        below=below,
        unscored=unscored,
        fail_under=fail_under,
        fail_mean_under=fail_mean_under,
    )
