"""Domain errors. The CLI turns each into one red line and its documented exit code."""


class AgentIQAError(Exception):
    """Base class; ``exit_code`` is what the CLI exits with."""

    exit_code = 2


class ConfigError(AgentIQAError):
    """Bad flag value, bad config file, bad YAML card or prompt, unknown tool."""


class UnknownToolError(ConfigError):
    pass


class MissingExtraError(ConfigError):
    """What was asked for needs an optional part of the install (``pip install
    'agentiqa[EXTRA]'``) that is not there: a usage error, named once, never a traceback."""

    def __init__(self, what: str, extra: str, hint: str = ""):
        self.extra = extra
        super().__init__(
            f"{what} needs the {extra} extra, which is not installed: "
            f"pip install 'agentiqa[{extra}]'{hint}"
        )


class ImageError(AgentIQAError):
    """One input could not be decoded; becomes an error row, never ends a batch."""

    exit_code = 3


class ToolUnavailableError(AgentIQAError):
    """A tool cannot run here (weights missing and not downloadable, missing reference)."""

    exit_code = 3


class VLMError(AgentIQAError):
    """A VLM request failed after retries, or its reply broke the contract."""

    exit_code = 3


class VLMUnreachableError(VLMError):
    pass


class OutputWriteError(AgentIQAError):
    """Writing the results (or the trace) failed mid-run (disk full): the rows written
    before are complete; the run stops."""

    exit_code = 3


class ReaderGone(OutputWriteError):
    """stdout was the run's only output (``-o -``) and its reader closed it (``| head``):
    no further row can be delivered, so the run stops, with exit 0 as a finished run."""

    exit_code = 0
