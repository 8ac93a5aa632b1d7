"""A hosted model that cannot work fails the run at once, and what can be retried is counted truly.

Every request goes over real HTTP to :class:`FakeOpenAI`; the CLI runs in this process.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentgym.errors import PolicyError
from agentgym.evaluation import evaluate
from agentgym.policies import LiteLLMPolicy
from agentgym.testing import FakeOpenAI
from agentgym.types import read_jsonl

from ..core.toy import Counter
from .counter_model import counter_model
from .helpers import COUNTER, REQUEST_TIMEOUT, policy_for, run_cli


def eval_args(server: FakeOpenAI, out: Path, *extra: str) -> list[str]:
    return ["eval", COUNTER, "--model", "openai/fake-model", "--api-base", server.base_url,
            "--request-timeout", str(REQUEST_TIMEOUT), "--out", str(out), *extra]


def test_missing_api_key_is_one_error_before_the_first_episode(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    out = tmp_path / "run.jsonl"
    with FakeOpenAI(counter_model) as server:
        code, _, err = run_cli(capsys, *eval_args(server, out))
    assert code == 2
    assert err.strip().splitlines() == ["agentgym: error: openai/fake-model: no credentials for provider "
                                        "'openai': set OPENAI_API_KEY in the environment"]
    assert server.requests == [] and not out.exists()


def test_unknown_provider_is_one_error_before_the_first_episode(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    out = tmp_path / "run.jsonl"
    with FakeOpenAI(counter_model) as server:
        code, _, err = run_cli(capsys, "eval", COUNTER, "--model", "nonsense/model-x", "--api-base",
                               server.base_url, "--out", str(out))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "unknown model 'nonsense/model-x': litellm cannot tell its provider" in err
    assert server.requests == [] and not out.exists()
    code, _, err = run_cli(capsys, "eval", "toy", "--model", "gpt4", "--out", str(out))
    assert code == 2 and err.strip().endswith("or a scripted policy of toy: reference, baseline")


async def test_a_call_that_never_leaves_the_machine_is_not_retried(monkeypatch):
    """litellm calls a missing key a "500"; retrying it 8 times with backoff only wastes minutes."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    env = Counter()
    await env.reset(env.tasks()[0])
    with FakeOpenAI(counter_model) as server:
        policy = LiteLLMPolicy("openai/fake-model", api_base=server.base_url, backoff=5.0)
        with pytest.raises(PolicyError) as caught:
            await policy.act(env.trajectory.messages, env.tools, task=env.task)
    assert server.requests == []
    assert caught.value.fatal and caught.value.retries == 0
    assert "Missing credentials" in str(caught.value) and "after 1 attempt(s)" in str(caught.value)


@pytest.mark.parametrize("status", ["400", "401", "403", "404"])
async def test_4xx_is_not_retried(status):
    env = Counter()
    await env.reset(env.tasks()[0])
    with FakeOpenAI(counter_model, faults=[status]) as server:
        with pytest.raises(PolicyError) as caught:
            await policy_for(server).act(env.trajectory.messages, env.tools, task=env.task)
    assert server.served == {status: 1}
    assert caught.value.retries == 0
    assert caught.value.fatal == (status != "400")  # a refused key or no such model fails every call alike


async def test_retries_of_a_call_that_failed_are_counted(tmp_path):
    out = tmp_path / "run.jsonl"
    with FakeOpenAI(counter_model, faults=["500", "503", "500"]) as server:
        summary, (failed, played) = await evaluate(
            COUNTER, policy_for(server, max_attempts=3), tasks=Counter().tasks()[:2], concurrency=1,
            out=out, progress=False)
    assert failed.outcome == "error" and failed.failed_usage.retries == 2 and failed.usage.retries == 2
    assert played.outcome == "terminated"
    assert summary.retries == 2 == server.served["500"] + server.served["503"] - 1
    assert read_jsonl(out)[0].failed_usage.retries == 2
    assert json.loads(out.with_suffix(".summary.json").read_text())["retries"] == 2


def test_a_refused_key_fails_before_the_first_episode(tmp_path, capsys, monkeypatch):
    out = tmp_path / "run.jsonl"
    with FakeOpenAI(counter_model, api_key="sk-right") as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
        code, _, err = run_cli(capsys, *eval_args(server, out))
        assert code == 2 and err.strip().splitlines() == [
            f"agentgym: error: openai/fake-model: {server.base_url}/models refused the key "
            "(HTTP 401: Incorrect API key provided.)"]
        assert server.requests == [] and not out.exists()


def test_a_key_refused_mid_run_stops_it_and_resume_finishes_it(tmp_path, capsys, monkeypatch):
    """The key passed the check, then the provider refused it (revoked): the run stops at the first refusal."""
    out = tmp_path / "run.jsonl"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeOpenAI(counter_model, faults=["401"]) as server:
        code, _, err = run_cli(capsys, *eval_args(server, out, "--concurrency", "1"))
        assert code == 1 and len(err.strip().splitlines()) == 1
        assert "AuthenticationError" in err and "rerun with --resume" in err
        # One call, not retried; the run stopped: an episode starting meanwhile was cancelled.
        outcomes = [t.outcome for t in read_jsonl(out)]
        assert outcomes[0] == "error" and set(outcomes[1:]) <= {"cancelled"} and len(outcomes) <= 2
        assert list(server.served) == ["401"] and server.served["401"] == 1

        code, _, err = run_cli(capsys, *eval_args(server, out, "--resume"))
    assert code == 0, err
    summary = json.loads(out.with_suffix(".summary.json").read_text())
    assert summary["episodes"] == 3 and summary["successes"] == 3


def test_a_run_in_which_every_episode_errored_exits_1(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    out = tmp_path / "run.jsonl"
    with FakeOpenAI(counter_model, fault_every=1, fault_cycle=["400"]) as server:
        code, stdout, err = run_cli(capsys, *eval_args(server, out))
    assert code == 1
    assert server.served == {"400": 3}
    assert "every episode failed: PolicyError: openai/fake-model:" in err
    assert err.rstrip().endswith("maximum context length is 8192 tokens. (after 1 attempt(s))")  # the cause
    summary = json.loads(out.with_suffix(".summary.json").read_text())
    assert summary["outcomes"] == {"error": 3} and "error=3" in stdout
