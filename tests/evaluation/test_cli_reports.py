"""The CLI says what it is doing: cheap credential checks, causes kept, time accounted, progress in logs.

Hosted models are :class:`FakeOpenAI` over real HTTP; commands whose point is what a fresh process
imports or prints run as subprocesses, the rest in this process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agentgym.credentials import PROVIDER_KEYS
from agentgym.errors import reason_line
from agentgym.evaluation import evaluate
from agentgym.evaluation.metrics import summarize
from agentgym.testing import FakeOpenAI, completion, tool_call
from agentgym.types import Trajectory, read_jsonl

from .counter_model import counter_model
from .helpers import COUNTER, policy_for, run_cli

ROOT = Path(__file__).resolve().parents[2]


def agentgym_process(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -X importtime -m agentgym.cli ARGS``: stderr also lists every module the process imported."""
    environ = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    environ.update({"PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True", **(env or {})})
    return subprocess.run([sys.executable, "-X", "importtime", "-m", "agentgym.cli", *args], cwd=cwd, env=environ,
                          text=True, capture_output=True, timeout=600)


def imported(stderr: str) -> set[str]:
    """Top-level packages named in ``-X importtime`` lines (``import time: self | cumulative | name``)."""
    return {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in stderr.splitlines()
            if line.startswith("import time:")}


def messages(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if not line.startswith("import time:")]


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    import agentgym

    code, out, _ = run_cli(capsys, "--version")
    assert code == 0 and out.strip() == f"agentgym {agentgym.__version__}"


def test_envs_lists_plain_text_aligned_for_long_ids(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "long_id_envs.py").write_text(
        "import agentgym\nfrom agentgym import Env\n\n\n"
        "class Marked(Env):\n"
        '    """Uses :class:`~agentgym.users.SimulatedUser` and :func:`agentgym.make`, with ``say``\n'
        '    on two lines.\n\n    Not this paragraph."""\n\n\n'
        'agentgym.register("someone/a-much-longer-environment-id-v0", Marked)\n')
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "envs", "--import", "long_id_envs")
    assert code == 0, err
    lines = out.splitlines()
    assert "someone/a-much-longer-environment-id-v0  Uses SimulatedUser and agentgym.make, with say on two lines." \
        in lines
    assert not any(mark in out for mark in ("``", ":class:", ":func:", ":data:", "Not this paragraph"))
    column = len("someone/a-much-longer-environment-id-v0  ")
    for name_line, detail_line in zip(lines[::2], lines[1::2], strict=True):  # every description at one column
        assert name_line[column - 2:column] == "  " and name_line[column] != " ", name_line
        assert detail_line[:column].strip() == "" and detail_line[column:].startswith("tools: "), detail_line


@pytest.mark.parametrize("provider", sorted(PROVIDER_KEYS))
def test_provider_keys_are_the_variables_litellm_reads(provider: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentgym.llm import litellm_module

    for name in PROVIDER_KEYS[provider]:
        monkeypatch.delenv(name, raising=False)
    missing = litellm_module().validate_environment(f"{provider}/some-model")["missing_keys"]
    assert set(missing) == set(PROVIDER_KEYS[provider])


def test_a_bad_key_fails_in_the_check_without_importing_litellm(tmp_path: Path) -> None:
    with FakeOpenAI(counter_model, api_key="sk-right") as server:
        args = ("eval", "toy", "--model", "openai/fake-model", "--api-base", server.base_url, "--out", "run.jsonl")
        started = time.monotonic()
        refused = agentgym_process(*args, cwd=tmp_path, env={"OPENAI_API_KEY": "sk-wrong"})
        seconds = time.monotonic() - started
        missing = agentgym_process(*args, cwd=tmp_path)
    print(f"a refused key failed the whole command in {seconds:.1f} s")  # no assertion on time: a busy machine
    assert refused.returncode == 2 and messages(refused.stderr) == [
        f"agentgym: error: openai/fake-model: {server.base_url}/models refused the key "
        "(HTTP 401: Incorrect API key provided.)"]
    assert missing.returncode == 2 and messages(missing.stderr) == [
        "agentgym: error: openai/fake-model: no credentials for provider 'openai': set OPENAI_API_KEY in the "
        "environment"]
    for done in (refused, missing):
        assert "agentgym" in imported(done.stderr) and "litellm" not in imported(done.stderr)
    assert server.requests == [] and not (tmp_path / "run.jsonl").exists()


def test_judge_probe_checks_credentials_first(tmp_path: Path) -> None:
    missing = agentgym_process("judge", "probe", "--model", "openai/gpt-4o-mini", cwd=tmp_path)
    assert missing.returncode == 2 and messages(missing.stderr) == [
        "agentgym: error: openai/gpt-4o-mini: no credentials for provider 'openai': set OPENAI_API_KEY in the "
        "environment"]
    with FakeOpenAI(counter_model, api_key="sk-right") as server:
        refused = agentgym_process("judge", "probe", "--model", "openai/judge", "--api-base", server.base_url,
                                   "--api-key", "sk-wrong", cwd=tmp_path)
    assert refused.returncode == 2 and messages(refused.stderr)[-1].endswith("refused the key (HTTP 401: "
                                                                            "Incorrect API key provided.)")
    assert server.requests == []  # nothing was graded
    for done in (missing, refused):
        assert "litellm" not in imported(done.stderr)


def test_failure_reasons_keep_their_cause() -> None:
    where = "PolicyError: openai/gpt-4o: APIConnectionError: litellm.APIConnectionError: OpenAIException - "
    long_failure = where + "retrying " * 40 + "Connection error. (after 8 attempt(s))"
    summary = summarize([Trajectory(task_id=f"t{i}", env="e", outcome="error", failure=long_failure)
                         for i in range(2)], env="e", policy="p")
    [(reason, count)] = summary.failures.items()
    assert count == 2 and len(reason) <= 200
    assert reason.startswith("PolicyError: openai/gpt-4o: APIConnectionError") and reason.endswith(
        "Connection error. (after 8 attempt(s))")
    assert "Connection error" in summary.table()
    spawn = "SandboxError: could not start ['bwrap', " + "'--ro-bind', '/usr', " * 20 + "]: No such file or directory"
    assert reason_line(spawn).endswith("No such file or directory")
    assert reason_line("short\n  and  spaced") == "short and spaced"


def code_model(request: dict[str, Any]) -> dict[str, Any]:
    """Submits a stub at once: the episode's point here is its time, not its grade."""
    return completion(tool_calls=[tool_call("submit", {"code": "def f():\n    return 0\n"})])


async def test_time_waiting_on_the_model_is_told_apart_from_sandbox_use(tmp_path: Path) -> None:
    """An API that answers 503 three times: the sandbox is held meanwhile, and the summary says so."""
    from agentgym.envs.code.env import CodeEnv

    with FakeOpenAI(code_model, faults=["503", "503", "503"]) as server:
        summary, [episode] = await evaluate(
            "code", policy_for(server, backoff=0.2, backoff_max=0.4), tasks=CodeEnv().tasks()[:1],
            env_kwargs={"sandbox_backend": "local"}, out=tmp_path / "run.jsonl", progress=False)
    assert server.served == {"503": 3, "ok": 1} and episode.outcome == "terminated"
    assert episode.policy_seconds >= 0.3  # three backoffs of at least 0.1 s each (jitter can only add)
    assert 0 < summary.sandbox_seconds_waiting == min(episode.policy_seconds, episode.sandbox_seconds)
    assert summary.sandbox_seconds_waiting >= 0.3 and summary.policy_seconds == episode.policy_seconds
    assert f"{summary.sandbox_seconds_waiting:.1f} of them waiting on the model" in summary.table()
    assert read_jsonl(tmp_path / "run.jsonl")[0].policy_seconds == episode.policy_seconds


async def test_a_failed_call_s_wait_is_counted(tmp_path: Path) -> None:
    with FakeOpenAI(counter_model, fault_every=1, fault_cycle=["503"]) as server:
        summary, trajectories = await evaluate(
            COUNTER, policy_for(server, max_attempts=3, backoff=0.2, backoff_max=0.2), limit=1,
            out=tmp_path / "run.jsonl", progress=False)
    [failed] = trajectories
    assert failed.outcome == "error" and "ServiceUnavailable" in (failed.failure or "")
    assert failed.turns == [] and failed.policy_seconds >= 0.2 and summary.policy_seconds == failed.policy_seconds


async def test_progress_lines_go_to_a_log_at_a_steady_interval(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    def slow_counter(request: dict[str, Any]) -> dict[str, Any]:
        time.sleep(0.1)  # in the server's thread: the run lasts at least 9 calls x 0.1 s
        return counter_model(request)

    with FakeOpenAI(slow_counter) as server:
        await evaluate(COUNTER, policy_for(server), concurrency=1, out=tmp_path / "run.jsonl",
                       progress_interval=0.05)
    lines = capsys.readouterr().err.splitlines()  # stderr here is not a terminal: no bar, lines
    assert len(lines) >= 2 and all(line.startswith(f"{COUNTER} · openai/fake-model: ") for line in lines)
    counts = [int(line.split(": ")[1].split("/")[0]) for line in lines]
    assert counts == sorted(counts) and counts[0] < 3 and counts[-1] <= 3  # lines while it ran, none after
    assert all(line.split(", ")[2].endswith(" s") for line in lines)


def test_a_rerun_of_a_finished_run_prints_its_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run.jsonl"
    first = run_cli(capsys, "eval", "toy", "--model", "reference", "--out", str(out))
    assert first[0] == 0, first[2]
    kept = out.read_text()
    again = run_cli(capsys, "eval", "toy", "--model", "reference", "--out", str(out))
    assert again[0] == 0 and "already holds this run, every episode finished: nothing to play" in again[2]
    assert "success          3/3" in again[1] and out.read_text() == kept
    other = run_cli(capsys, "eval", "toy", "--model", "baseline", "--out", str(out))
    assert other[0] == 2 and "already holds trajectories" in other[2]  # another run's file is still refused
    more = run_cli(capsys, "eval", "toy", "--model", "reference", "--samples", "2", "--out", str(out))
    assert more[0] == 2 and "pass --resume" in more[2]  # unfinished work is not resumed unasked


@pytest.mark.parametrize("arg", ["user=openai/gpt-4o-mini", "feedback=3", "verifier=exact"])
def test_env_args_that_take_objects_are_refused_up_front(arg: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run.jsonl"
    code, _, err = run_cli(capsys, "eval", "toy", "--model", "reference", "--env-arg", arg, "--out", str(out))
    name = arg.partition("=")[0]
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith(f"agentgym: error: --env-arg {name}=...: {name} takes ") and not out.exists()


def test_a_custom_env_s_own_policy_is_named_on_the_cli(tmp_path: Path) -> None:
    for model in ("policy:examples.custom_env:Scripted", "scripted"):
        out = tmp_path / f"{model.replace(':', '_')}.jsonl"
        done = agentgym_process("eval", "examples.custom_env:Calculator", "--model", model, "--sandbox", "local",
                                "--out", str(out), cwd=ROOT)
        assert done.returncode == 0, messages(done.stderr)
        [episode] = read_jsonl(out)
        assert episode.success and episode.policy == "scripted"
    wrong = agentgym_process("eval", "examples.custom_env:Calculator", "--model", "policy:examples.custom_env:nope",
                             "--sandbox", "local", "--out", str(tmp_path / "x.jsonl"), cwd=ROOT)
    assert wrong.returncode == 2 and "--model policy:examples.custom_env:nope: cannot load it" in wrong.stderr
    assert json.loads((tmp_path / "scripted.summary.json").read_text())["successes"] == 1
