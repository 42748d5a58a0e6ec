"""Asking a role of a VLM: the role registry, prompts, output schemas, the Asker."""
