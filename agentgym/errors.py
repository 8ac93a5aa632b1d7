"""One hierarchy for everything agentgym raises::

    AgentgymError
    ├── ToolError           a tool failed in a way the model should read and may recover from
    ├── EnvError            an environment was misused or misconfigured (unknown id, step before reset)
    ├── SandboxError        a sandbox could not be created, died, or broke its protocol
    │   └── SandboxTimeout  a command or the sandbox's wall-time limit ran out
    ├── PolicyError         a policy could not produce an action (API error after retries)
    └── DataError           task data or a run's files are missing, unusable or malformed

``ToolError`` goes back to the model as a tool observation; everything else ends the episode as a
recorded failure with its reason, and never the batch.
"""


class AgentgymError(Exception):
    """Base of every error agentgym raises on purpose."""


class ToolError(AgentgymError):
    """Raise inside a tool to send the message back to the model as the tool's result."""


class EnvError(AgentgymError):
    """An environment was misused or could not be built."""


class SandboxError(AgentgymError):
    """A sandbox could not be created, crashed, or broke the agent protocol."""


class SandboxTimeout(SandboxError):
    """A command, or the sandbox's whole wall-time budget, ran out."""


class PolicyError(AgentgymError):
    """A policy could not produce an action, even after retries.

    Attributes:
        retries: Retries spent on the call that failed; the episode's usage counts them.
        fatal: No later call can succeed either (missing or refused credentials, an unknown model),
            so a run should stop instead of failing every episode the same way.
    """

    def __init__(self, message: str, *, retries: int = 0, fatal: bool = False) -> None:
        super().__init__(message)
        self.retries = retries
        self.fatal = fatal


class DataError(AgentgymError):
    """Task data, or a file a run reads or writes, is missing, unusable or malformed."""


def reason_line(text: str, limit: int = 200) -> str:
    """A failure reason as one line of at most ``limit`` characters that still says what happened.

    Messages lead with where (``PolicyError: openai/gpt-4o: litellm.APIConnectionError: ...``) and
    end with what (``Connection error.``, ``No such file or directory``), so a long one keeps its
    start and its end and loses the middle.
    """
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    head = limit // 2
    return f"{line[:head]} … {line[-(limit - head - 3):]}"
