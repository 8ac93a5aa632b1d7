"""`agentgym eval` as a user runs it: a child process, a hosted model behind a faulty HTTP server."""

import json
import os
import subprocess
import sys

from agentgym.testing import FakeOpenAI
from agentgym.types import read_jsonl

from .humaneval_model import humaneval_model


def agentgym(*args: str, cwd) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_API_KEY": "sk-test"}
    return subprocess.run([sys.executable, "-m", "agentgym.cli", *args], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=600)


def test_eval_hosted_model_through_429_500_and_hangs(tmp_path):
    out = tmp_path / "run.jsonl"
    with FakeOpenAI(humaneval_model, fault_every=3, fault_cycle=["429", "500", "hang"], hang_seconds=60) as server:
        done = agentgym("eval", "code", "--model", "openai/fake-model", "--api-base", server.base_url,
                        "--limit", "12", "--concurrency", "4", "--sandbox", "local", "--request-timeout", "4",
                        "--out", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads(out.with_suffix(".summary.json").read_text())
    assert summary["episodes"] == 12 and summary["successes"] == 12
    assert summary["outcomes"] == {"terminated": 12}
    faults = sum(v for k, v in server.served.items() if k != "ok")
    assert faults >= 8 and summary["retries"] == faults
    assert summary["tool_errors"] == {"malformed_json": 4}  # tasks 0, 3, 6, 9
    assert summary["prompt_tokens"] > 0 and "success" in done.stdout
    assert len(read_jsonl(out)) == 12


def test_eval_reference_and_resume(tmp_path):
    out = tmp_path / "ref.jsonl"
    first = agentgym("eval", "code", "--model", "reference", "--sandbox", "local", "--limit", "3",
                     "--out", str(out), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    again = agentgym("eval", "code", "--model", "reference", "--sandbox", "local", "--limit", "5", "--resume",
                     "--out", str(out), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    runs = read_jsonl(out)
    assert sorted(t.task_id for t in runs) == [f"HumanEval/{i}" for i in range(5)]  # 3 kept, 2 played
    assert json.loads(out.with_suffix(".summary.json").read_text())["successes"] == 5
    listing = agentgym("envs", cwd=tmp_path)
    assert listing.returncode == 0 and "code" in listing.stdout and "reference" in listing.stdout
    unknown = agentgym("eval", "cod", "--model", "reference", cwd=tmp_path)
    assert unknown.returncode == 2 and "Did you mean 'code'" in unknown.stderr
