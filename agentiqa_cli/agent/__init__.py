"""The agent: planner → executor (detect, analyse, select, execute) → summarizer."""
