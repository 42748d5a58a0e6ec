"""agentiqa: batch image quality assessment with an agentic VLM over IQA tools."""

__version__ = "0.1.0"
