"""Test kit for agentgym and for env and backend authors.

- :class:`FakeOpenAI`: a local server speaking OpenAI's wire format, for runs with no API key;
- :func:`check_env`: the environment contract (reset/step/close, tool specs, reference beats
  baseline, idempotent close, no leaked sandbox), run on any ``Env`` subclass;
- :func:`check_sandbox`: the sandbox contract, run on any backend;
- :func:`agentgym.testing.dockerd.second_engine` (imported from there): a throw-away second Docker
  engine on this machine, for tests of sandboxes on other engines.
"""

from agentgym.testing.check_env import EnvCheckError, EnvReport, check_env
from agentgym.testing.fake_openai import FakeOpenAI, completion, tool_call
from agentgym.testing.sandbox_checks import SANDBOX_CHECKS, SandboxCheckError, check_sandbox

__all__ = [
    "SANDBOX_CHECKS",
    "EnvCheckError",
    "EnvReport",
    "FakeOpenAI",
    "SandboxCheckError",
    "check_env",
    "check_sandbox",
    "completion",
    "tool_call",
]
