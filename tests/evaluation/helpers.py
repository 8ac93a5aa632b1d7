"""What the evaluation tests share: the Counter env registered, a policy for FakeOpenAI, the CLI in-process."""

from __future__ import annotations

import pytest

from agentgym import register
from agentgym.cli import main
from agentgym.policies import LiteLLMPolicy
from agentgym.testing import FakeOpenAI

from ..core.toy import Counter

COUNTER = "test/Counter-v0"
register(COUNTER, Counter)


#: Seconds a model call may take. The server shares this process (and, on a busy machine, the CPU):
#: much shorter, and a call that is not hanging also times out, and retries no longer match faults.
REQUEST_TIMEOUT = 4.0


def policy_for(server: FakeOpenAI, **kwargs: object) -> LiteLLMPolicy:
    """A policy talking to ``server`` with a key, a timeout that only a hang reaches, near-zero backoff."""
    options: dict[str, object] = {"api_key": "sk-test", "timeout": REQUEST_TIMEOUT, "backoff": 0.01,
                                  "backoff_max": 0.05}
    return LiteLLMPolicy("openai/fake-model", api_base=server.base_url, **{**options, **kwargs})  # type: ignore[arg-type]


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``agentgym ARGS`` in this process: exit status (argparse's own exits included), stdout, stderr."""
    try:
        code = main(list(args))
    except SystemExit as e:
        code = int(e.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err
