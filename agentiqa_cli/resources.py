"""Where the shipped prompts and tool cards live (inside the package, or a user's folder)."""

from __future__ import annotations

from pathlib import Path

_DATA = Path(__file__).resolve().parent / "data"


def default_prompts_dir() -> Path:
    return _DATA / "prompts"


def default_cards_dir() -> Path:
    return _DATA / "tool_cards"
