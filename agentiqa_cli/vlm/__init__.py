"""VLM backends. Each implements the one call in ``base.VLM``."""
