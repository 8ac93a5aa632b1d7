"""The tau2-style airline port: model errors as observations, a DB-state verifier, a simulated customer
(scripted, or an LLM over HTTP), and evaluation from the command line by ``module:Class`` and by an id
registered in an imported module."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from agentgym import Message, ToolCall
from agentgym.testing import FakeOpenAI, check_env, completion
from agentgym.types import read_jsonl

from .airline import DB, TASKS, AirlineEnv

ROOT = Path(__file__).resolve().parents[2]


def call(name: str, **arguments: Any) -> Message:
    return Message(role="assistant", tool_calls=[ToolCall(id="c", name=name, arguments=json.dumps(arguments))])


async def test_model_mistakes_come_back_as_observations_and_the_db_decides() -> None:
    env = AirlineEnv()
    await env.reset(TASKS[0])
    assert [t.name for t in env.tools] == [
        "get_user_details", "get_reservation_details", "search_direct_flight",  # from the mixin
        "update_reservation_flight", "cancel_reservation", "transfer_to_human_agents",
    ]
    missing = await env.step(call("get_reservation_details", reservation_id="NOPE00"))
    assert missing.observation[0].text == "Error: ValueError: reservation NOPE00 not found"
    full = await env.step(call("update_reservation_flight", reservation_id="4WQ150", flight_number="HAT083"))
    assert "HAT083 is full" in full.observation[0].text and full.info["tool_errors"] == ["tool_raised"]
    moved = await env.step(call("update_reservation_flight", reservation_id="4WQ150", flight_number="HAT227"))
    assert moved.observation[0].text == "reservation 4WQ150 is now on HAT227" and not moved.terminated
    assert DB["reservations"]["4WQ150"]["flight"] == "HAT170"  # the template is never touched
    done = await env.step(call("transfer_to_human_agents", summary="moved the flight"))
    assert done.terminated and done.info["reward"]["components"] == {"db": 1.0}
    assert env.trajectory is not None and env.trajectory.final_answer == "moved the flight"
    await env.reset(TASKS[1])
    wrong = await env.step(call("cancel_reservation", reservation_id="4WQ150"))  # someone else's booking
    assert not wrong.info.get("tool_errors")
    ended = await env.step(call("transfer_to_human_agents", summary="cancelled"))
    assert ended.info["reward"]["components"] == {"db": 0.0}
    await env.close()


async def test_the_contract_holds_with_the_scripted_customer() -> None:
    report = await check_env(AirlineEnv)
    assert (report.reference_return, report.baseline_return) == (1.0, 1 / 3)  # only "refuse" needs no action


def agentgym(*args: str, isolated: bool = False) -> subprocess.CompletedProcess[str]:
    """The CLI in a child process run from the repository root; ``isolated`` keeps the root off sys.path."""
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_API_KEY": "sk-test"}
    flags = ["-I"] if isolated else []
    return subprocess.run([sys.executable, *flags, "-m", "agentgym.cli", *args], cwd=ROOT, env=env, text=True,
                          capture_output=True, timeout=600)


def test_cli_evaluates_an_env_named_by_module_and_class(tmp_path: Path) -> None:
    out = tmp_path / "airline.jsonl"
    done = agentgym("eval", "tests.contract.airline:AirlineEnv", "--model", "reference", "--out", str(out),
                    isolated=True)  # the CLI itself puts the working directory on sys.path
    assert done.returncode == 0, done.stderr
    summary = json.loads(out.with_suffix(".summary.json").read_text())
    assert (summary["episodes"], summary["successes"], summary["outcomes"]) == (3, 3, {"terminated": 3})
    runs = {t.task_id: t for t in read_jsonl(out)}
    assert runs["change"].env == "tests.contract.airline:AirlineEnv"
    assert runs["change"].final_answer == "All done. Is there anything else?"
    customer = [m.text for m in runs["change"].all_messages() if m.role == "user"]
    assert customer == [TASKS[0].prompt, TASKS[0].data["user_turns"][0]]
    refused = agentgym("eval", "tests.contract.airline:AirlineEnv", "--model", "reference", "--tasks", "x.jsonl")
    assert refused.returncode == 2 and "AirlineEnv reads no task files" in refused.stderr
    missing = agentgym("eval", "tests.contract.nowhere:AirlineEnv", "--model", "reference")
    assert missing.returncode == 2 and "cannot load 'tests.contract.nowhere:AirlineEnv'" in missing.stderr


def customer(request: dict[str, Any]) -> dict[str, Any]:
    """An LLM customer: gives the details its instructions hold when asked, ends the chat when served."""
    system, last = request["messages"][0]["content"], request["messages"][-1]["content"]
    assert request["messages"][-1]["role"] == "user" and "tool" not in {m["role"] for m in request["messages"]}
    if "anything else" in last or "cannot help" in last:
        return completion("###STOP###", prompt_tokens=40, completion_tokens=3)
    instructions = re.search(r"Your instructions:\n(.*)", system, re.DOTALL)
    assert instructions is not None
    return completion(instructions.group(1).strip(), prompt_tokens=50, completion_tokens=20)


def test_cli_runs_a_registered_env_with_an_llm_customer_and_counts_its_usage_apart(tmp_path: Path) -> None:
    out = tmp_path / "airline-llm.jsonl"
    with FakeOpenAI(customer, faults=["429"]) as server:
        done = agentgym("eval", "tests/Airline-v0", "--import", "tests.contract.airline", "--model", "reference",
                        "--env-arg", "user_model=openai/fake-customer", "--env-arg", f"user_api_base={server.base_url}",
                        "--concurrency", "1", "--out", str(out))
    assert done.returncode == 0, done.stderr
    summary = json.loads(out.with_suffix(".summary.json").read_text())
    assert summary["successes"] == 3
    # the agent is scripted (no tokens); the customer made 2 calls per task (details, then stop) plus a retry
    assert (summary["prompt_tokens"], summary["cost_usd"]) == (0, 0.0)
    assert summary["usage_by_role"]["user"] == {"prompt_tokens": 3 * 90, "completion_tokens": 3 * 23,
                                                "cost_usd": 0.0, "retries": 1,
                                                "unpriced_calls": 6}  # the fake customer model has no price
    assert "user usage" in done.stdout
    assert server.served == {"429": 1, "ok": 6}
