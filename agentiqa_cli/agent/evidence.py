"""How tool readings are shown to a model (and kept in the trace)."""

from __future__ import annotations

from typing import Any

from agentiqa_cli.records import ToolScore


def evidence_view(scores: list[ToolScore]) -> list[dict[str, Any]]:
    """Signal-detector readings as prompt variables: tool, raw reading, 1–5 quality."""
    return [
        {
            "tool": s.tool,
            "reading": f"{s.raw:.4g}",
            "raw": round(s.raw, 4),
            "norm": round(s.norm, 2),
        }
        for s in scores
        if s.ok and s.raw is not None and s.norm is not None
    ]
