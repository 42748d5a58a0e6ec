"""Run outputs: the results CSV (resumable) and the JSONL trace."""
