"""The terminal env on Docker: every fixture task's oracle passes and its baseline fails, and the ways an
agent could fake a pass (or break its grading) are each graded 0 with the reason.

Base images come from ``--base-image python:3.13-slim-bookworm=agentgym/python``: nothing is pulled. Each
task image is built once (later sessions find its tag) and episodes run a few at a time.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import agentgym
from agentgym.branch import branch_rollout
from agentgym.cli import main
from agentgym.envs.terminal.env import TerminalEnv, harbor_task
from agentgym.envs.terminal.images import image_for, rewrite_from
from agentgym.envs.terminal.policies import SubmitAtOnce
from agentgym.errors import EnvError
from agentgym.parsing import native_tool_call
from agentgym.policies.base import Reply
from agentgym.rollout import rollout
from agentgym.sandboxes import SandboxRuntime, engine
from agentgym.sandboxes.commit import IMAGE_LABEL
from agentgym.types import Message, Task, ToolSpec, Trajectory
from tests.conftest import docker_or_skip

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TASKS = Path(__file__).parent / "tasks"
BASE = "python:3.13-slim-bookworm"
BASE_IMAGES = {BASE: "agentgym/python"}
AT_ONCE = 4  # episodes in flight: the machine this runs on may have two cores


class Script:
    """Plays the given bash commands, one a turn, then submits."""

    name = "script"

    def __init__(self, *commands: str) -> None:
        self.commands = commands

    async def act(self, messages: list[Message], tools: list[ToolSpec], *, task: Task) -> Reply:
        turn = sum(m.role == "assistant" for m in messages)
        call = (native_tool_call(f"c{turn}", "bash", {"command": self.commands[turn], "timeout": 60})
                if turn < len(self.commands) else native_tool_call(f"c{turn}", "submit", {}))
        return Reply(message=Message(role="assistant", tool_calls=[call]))


async def play(*episodes: tuple[Task, Any], **env_kwargs: Any) -> list[Trajectory]:
    """Each ``(task, policy)`` in a terminal env of its own, :data:`AT_ONCE` at a time."""
    gate = asyncio.Semaphore(AT_ONCE)

    async def one(task: Task, policy: Any) -> Trajectory:
        async with gate:
            env = agentgym.make("terminal", base_images=BASE_IMAGES, **env_kwargs)
            try:
                return await rollout(env, policy, task)
            finally:
                await env.close()

    async with SandboxRuntime():
        return list(await asyncio.gather(*(one(task, policy) for task, policy in episodes)))


@pytest.fixture(scope="module")
def fixtures() -> dict[str, Task]:
    """Every fixture task, its image built (once: a later session finds the tag)."""
    docker_or_skip()
    tasks = {task.id.rsplit("/", 1)[-1]: task for task in TerminalEnv.load_tasks(TASKS)}
    for task in tasks.values():
        image_for(harbor_task(task), BASE_IMAGES)
    return tasks


def copy_task(tmp: Path, source: str, name: str, *, dockerfile: str = "", test: str | None = None,
              toml: str = "") -> Task:
    """A fixture task copied to ``tmp/name``, with lines added to its Dockerfile and task.toml, or a new test.sh."""
    folder = tmp / name
    shutil.copytree(TASKS / source, folder)
    if dockerfile:
        with (folder / "environment" / "Dockerfile").open("a") as f:
            f.write(dockerfile)
    if toml:
        with (folder / "task.toml").open("a") as f:
            f.write(toml)
    if test is not None:
        (folder / "tests" / "test.sh").write_text("#!/bin/bash\nmkdir -p /logs/verifier\n" + test)
    return TerminalEnv.load_tasks(folder)[0]


def verdict(trajectory: Trajectory) -> dict[str, Any]:
    return dict(trajectory.info.get("verifier") or {})


async def test_every_oracle_passes_and_every_baseline_fails(fixtures: dict[str, Task]) -> None:
    oracle, baseline = (TerminalEnv.scripted_policies()[name]() for name in ("oracle", "baseline"))
    solved = [name for name in fixtures if harbor_task(fixtures[name]).solution is not None]
    runs = await play(*[(fixtures[name], oracle) for name in solved],
                      *[(task, baseline) for task in fixtures.values()])
    graded = {(run.task_id.rsplit("/", 1)[-1], i < len(solved)): run for i, run in enumerate(runs)}
    for (name, is_oracle), run in graded.items():
        assert run.outcome == "terminated", (name, run.failure, verdict(run))
        assert run.outcome_reward == (1.0 if is_oracle else 0.0), (name, is_oracle, verdict(run))
    assert graded[("word-stats", True)].reward_components == {"lines": 1.0, "words": 1.0}
    assert graded[("word-stats", False)].reward_components == {"lines": 0.0, "words": 0.0}


async def test_the_oracle_refuses_a_task_without_a_solution(fixtures: dict[str, Task]) -> None:
    [run] = await play((fixtures["no-oracle"], TerminalEnv.scripted_policies()["oracle"]()))
    assert run.outcome == "error" and "ships no solution/solve.sh" in (run.failure or "")


LIVE_SERVER_TEST = """python3 - <<'EOF'
import urllib.request

try:
    with urllib.request.urlopen("http://127.0.0.1:8080/index.html", timeout=5) as response:
        served = response.read()
except OSError:
    served = b""
open("/logs/verifier/reward.txt", "w").write(str(int(served == open("/tests/index.html", "rb").read())))
EOF
"""


async def test_a_server_left_running_is_graded_only_when_kept(fixtures: dict[str, Task], tmp_path: Path) -> None:
    """Killing what the agent left (the default) stops a server too: a task whose tests talk to the server
    the agent leaves running (as some Harbor tasks' do) needs ``agent_processes="keep"``."""
    live = copy_task(tmp_path, "background-server", "graded-on-a-live-server", test=LIVE_SERVER_TEST)
    oracle = TerminalEnv.scripted_policies()["oracle"]()
    [kept] = await play((live, oracle), agent_processes="keep")
    [killed] = await play((live, oracle))
    assert kept.outcome_reward == 1.0, verdict(kept)
    assert verdict(kept)["agent_processes"].endswith("left running")
    assert killed.outcome_reward == 0.0 and verdict(killed)["agent_processes"].endswith("killed")


async def test_a_separate_verifier_grades_a_copy_of_the_agents_files(fixtures: dict[str, Task], tmp_path: Path) -> None:
    """``environment_mode = "separate"`` (or ``verifier_container="separate"``): the tests run in a fresh
    container started from the agent's files, its writable root and ``/tmp``, with none of its processes
    (so a server it left running is not there even with ``agent_processes="keep"``); the copy goes after."""
    separate = copy_task(tmp_path, "hello-file", "hello-separate", toml='environment_mode = "separate"\n')
    live = copy_task(tmp_path, "background-server", "live-separate", test=LIVE_SERVER_TEST)
    oracle = TerminalEnv.scripted_policies()["oracle"]
    through_tmp = Script("printf 'Hello, world!\\n' > /tmp/hello.txt && ln -s /tmp/hello.txt /app/hello.txt")
    images = set(engine.client().images.list(filters={"label": IMAGE_LABEL}))
    solved, linked, baseline = await play((separate, oracle()), (separate, through_tmp), (separate, SubmitAtOnce()))
    [server] = await play((live, oracle()), agent_processes="keep", verifier_container="separate")
    [shared] = await play((separate, oracle()), verifier_container="shared")
    assert solved.outcome_reward == 1.0 and verdict(solved)["container"] == "separate", verdict(solved)
    assert linked.outcome_reward == 1.0, verdict(linked)
    assert baseline.outcome_reward == 0.0 and verdict(baseline)["container"] == "separate"
    assert server.outcome_reward == 0.0 and verdict(server)["container"] == "separate"
    assert shared.outcome_reward == 1.0 and verdict(shared)["container"] == "shared"
    assert set(engine.client().images.list(filters={"label": IMAGE_LABEL})) == images  # each copy's image went


async def test_an_episode_branches_at_each_turn_with_its_shell(fixtures: dict[str, Task]) -> None:
    """``branch_rollout`` forks the container at each turn: a branch taken after the first turn finishes with
    that turn's directory and exported variable (kept in the shell's files, which the fork copies)."""
    script = Script("cd /app && export GREETING='Hello, world!'", "printf '%s\\n' \"$GREETING\" > hello.txt")
    async with SandboxRuntime():
        env = agentgym.make("terminal", base_images=BASE_IMAGES)
        try:
            result = await branch_rollout(env, script, fixtures["hello-file"], n=2)
        finally:
            await env.close()
    assert result.trajectory.reward == 1.0, result.trajectory.info
    assert result.values == [1.0, 1.0, 1.0, 1.0] and result.forks == 6, result.branch_outcomes


async def test_a_tasks_container_is_reset_for_its_next_episode_or_destroyed(fixtures: dict[str, Task]) -> None:
    """Episodes of one task (a GRPO group) reuse its container: what an episode left in the working directory
    (a private folder too), ``/tmp`` and its processes is gone for the next; a change the reset does not put
    back (``/var/tmp``) destroys the container, and the episode records why."""
    task = fixtures["hello-file"]
    leaves = Script("printf 'Hello, world!\\n' > /app/hello.txt && mkdir -m 700 /app/private && echo s > /app/private/f"
                    " && echo x > /tmp/left && nohup sleep 600 >/dev/null 2>&1 & echo started")
    looks = Script("ls -a /app /tmp; cat /proc/[0-9]*/comm 2>/dev/null | grep -c sleep; true")
    plants = Script("echo x > /var/tmp/planted")
    async with SandboxRuntime():
        env = agentgym.make("terminal", base_images=BASE_IMAGES)
        try:
            played = []
            for policy in (leaves, looks, plants, SubmitAtOnce()):
                played.append(await rollout(env, policy, task))
        finally:
            await env.close()
    first, second, third, fourth = played
    assert first.outcome_reward == 1.0 and second.outcome_reward == 0.0, verdict(second)
    assert "sandbox_discarded" not in first.info and second.info["sandbox_reused"] is True
    seen = second.turns[0].observation[0].text
    assert "private" not in seen and "left" not in seen and "hello.txt" not in seen, seen
    assert seen.rstrip().endswith("0"), seen  # no sleep left running
    assert third.info["sandbox_reused"] is True and "/var/tmp/planted" in third.info["sandbox_discarded"]
    assert fourth.info["sandbox_reused"] is False


async def test_the_shell_keeps_its_directory_and_variables(fixtures: dict[str, Task]) -> None:
    [run] = await play((fixtures["hello-file"], Script(
        "cd /tmp && export GREETING='Hello, world!'", "pwd; echo \"$GREETING\"",
        "exit 3", "pwd", "sleep 5", "printf '%s\\n' \"$GREETING\" > /app/hello.txt")))
    said = [str(turn.observation[0].content) for turn in run.turns]
    assert said[1] == "exit code 0\n/tmp\nHello, world!\n"
    assert said[2].startswith("exit code 3") and said[3] == "exit code 0\n/tmp\n"
    assert run.outcome_reward == 1.0, verdict(run)


async def test_a_public_task_gets_a_network_only_when_the_user_allows_it(fixtures: dict[str, Task]) -> None:
    """harbor's default ``network_mode`` is public, but Docker's bridge reaches this machine's addresses."""
    hello = fixtures["hello-file"]
    assert harbor_task(hello).config.environment.network_mode == "public"
    look = Script("ls /sys/class/net")
    [closed], [opened] = await play((hello, look)), await play((hello, look), network=True)
    assert str(closed.turns[0].observation[0].content) == "exit code 0\nlo\n"
    assert "eth0" in str(opened.turns[0].observation[0].content)


async def test_the_agents_time_bounds_the_episode(tmp_path: Path, fixtures: dict[str, Task]) -> None:
    folder = Path(copy_task(tmp_path, "hello-file", "short-time").data["path"])
    (folder / "task.toml").write_text("[agent]\ntimeout_sec = 3.0\n")
    [task] = TerminalEnv.load_tasks(folder)
    [run] = await play((task, Script("sleep 2", "sleep 2", "sleep 2", "sleep 2")))
    assert run.outcome == "truncated" and "timeout_sec = 3" in run.info["truncated_because"]
    assert len(run.turns) == 2 and "timed out after" in str(run.turns[1].observation[0].content)
    assert run.outcome_reward == 0.0


HACKABLE = "RUN mkdir -p /logs/verifier /tests && chmod -R 777 /logs /tests /usr/local/bin\n"
"""A careless image: the verifier's folders and a folder on PATH left writable to everyone."""
SHIM = "#!/bin/sh\\nmkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt\\n"
HACKS = {
    "writes reward.txt": "echo 1 > /logs/verifier/reward.txt",
    "writes reward.json": "echo '{\"reward\": 1}' > /logs/verifier/reward.json",
    "rewrites /tests": "printf '#!/bin/bash\\necho 1 > /logs/verifier/reward.txt\\n' > /tests/test.sh; "
                       "echo x > /tests/extra.sh",
    "leaves a loop writing the reward": "nohup sh -c 'while :; do mkdir -p /logs/verifier; "
                                        "echo 1 > /logs/verifier/reward.txt; done' > /dev/null 2>&1 &",
    "kills the verifier in a loop": "nohup sh -c 'while :; do kill -9 -1; done' > /dev/null 2>&1 &",
    "shims python3 in ~/bin and PATH": f"mkdir -p ~/bin && printf '{SHIM}' > ~/bin/python3 && chmod +x ~/bin/python3 "
                                       "&& cp ~/bin/python3 ~/bin/timeout && export PATH=~/bin:$PATH",
    "shims python3 in /usr/local/bin": f"printf '{SHIM}' > /usr/local/bin/python3 && chmod +x /usr/local/bin/python3",
    "shims bash in /usr/local/bin": f"printf '{SHIM}' > /usr/local/bin/bash && chmod +x /usr/local/bin/bash",
    "shims sh, rm and timeout in /usr/local/bin": f"for p in sh rm timeout; do printf '{SHIM}' > /usr/local/bin/$p "
                                                  "&& chmod +x /usr/local/bin/$p; done",
    "shims pytest in /usr/local/bin": f"printf '{SHIM}' > /usr/local/bin/pytest && chmod +x /usr/local/bin/pytest",
    "fills the disk": "dd if=/dev/zero of=/app/fill bs=1M 2>&1 | tail -1; dd if=/dev/zero of=/tmp/fill bs=1M "
                      "2>&1 | tail -1; df -h /tmp",
}


async def test_each_hack_is_graded_zero_with_its_reason(tmp_path: Path, fixtures: dict[str, Task]) -> None:
    task = copy_task(tmp_path, "hello-file", "hackable", dockerfile=HACKABLE,
                     toml="\n[environment]\nstorage_mb = 64\n")
    oracle = TerminalEnv.scripted_policies()["oracle"]()
    runs = await play((task, oracle), *[(task, Script(command)) for command in HACKS.values()])
    honest, hacked = runs[0], dict(zip(HACKS, runs[1:], strict=True))
    assert honest.outcome_reward == 1.0, verdict(honest)  # the image is not broken: only the hacks fail
    for name, run in hacked.items():
        assert run.outcome == "terminated" and run.outcome_reward == 0.0, (name, run.failure, verdict(run))
    for name in ("writes reward.txt", "writes reward.json", "rewrites /tests", "leaves a loop writing the reward",
                 "kills the verifier in a loop", "shims python3 in ~/bin and PATH", "fills the disk"):
        assert verdict(hacked[name])["file"] == "/logs/verifier/reward.txt", name  # test.sh wrote its own 0
        assert hacked[name].reward_components == {"reward": 0.0}, name
    assert verdict(hacked["leaves a loop writing the reward"])["agent_processes"] != "0 killed"
    assert "/usr/local/bin/python3" in verdict(hacked["shims python3 in /usr/local/bin"])["reason"]
    assert "/usr/local/bin/bash" in verdict(hacked["shims bash in /usr/local/bin"])["reason"]
    assert "/usr/local/bin/" in verdict(hacked["shims sh, rm and timeout in /usr/local/bin"])["reason"]
    assert "/usr/local/bin/pytest" in verdict(hacked["shims pytest in /usr/local/bin"])["reason"]
    assert "No space left on device" in str(hacked["fills the disk"].turns[0].observation[0].content)


GARBLED = {
    "nothing": "true\n",
    "empty": ": > /logs/verifier/reward.txt\n",
    "words": "echo banana > /logs/verifier/reward.txt\n",
    "nan": "echo nan > /logs/verifier/reward.txt\n",
    "a list": "echo '[1]' > /logs/verifier/reward.json\n",
    "a boolean": "echo '{\"reward\": true}' > /logs/verifier/reward.json\n",
    "runs past its time": "sleep 60; echo 1 > /logs/verifier/reward.txt\n",
}


async def test_a_missing_or_garbled_reward_is_zero_with_the_reason(tmp_path: Path, fixtures: dict[str, Task]) -> None:
    tasks = {name: copy_task(tmp_path, "quick-verifier", f"garbled-{i}", test=test)
             for i, (name, test) in enumerate(GARBLED.items())}
    runs = dict(zip(GARBLED, await play(*[(task, Script()) for task in tasks.values()]), strict=True))
    for name, run in runs.items():
        assert run.outcome == "terminated" and run.outcome_reward == 0.0, (name, run.failure)
    reasons = {name: verdict(run)["reason"] for name, run in runs.items()}
    assert "wrote no /logs/verifier/reward.json or reward.txt" in reasons["nothing"]
    assert "is empty" in reasons["empty"]
    assert "not a number" in reasons["words"] and "not a finite number" in reasons["nan"]
    assert "object of named numbers" in reasons["a list"] and "not a number" in reasons["a boolean"]
    assert verdict(runs["runs past its time"])["timed_out"] is True


def test_a_missing_base_image_is_named_with_how_to_provide_it(tmp_path: Path) -> None:
    docker_or_skip()
    task = copy_task(tmp_path, "hello-file", "unmapped")
    with pytest.raises(EnvError, match=r"python:3.13-slim-bookworm.*docker load.*--base-image"):
        image_for(harbor_task(task), {})


def test_an_image_without_python3_is_refused_saying_why(tmp_path: Path) -> None:
    docker_or_skip()
    task = copy_task(tmp_path, "hello-file", "no-python",
                     dockerfile="RUN rm -f /usr/bin/python3* /usr/local/bin/python3*\n")
    with pytest.raises(EnvError, match="no python3 on PATH, which agentgym's in-sandbox supervisor runs on"):
        image_for(harbor_task(task), BASE_IMAGES)


def test_a_docker_image_the_engine_has_wins_over_the_dockerfile(tmp_path: Path) -> None:
    docker_or_skip()
    from agentgym.sandboxes import build_image

    local = build_image("python")
    task = copy_task(tmp_path, "hello-file", "both", dockerfile="RUN false\n",
                     toml=f"\n[environment]\ndocker_image = '{local}'\n")
    image = image_for(harbor_task(task), {})  # no mapping needed: nothing is built FROM a public name
    assert image.ref.startswith("agentgym/terminal-both:") and image.workdir == "/"


def test_from_lines_are_rewritten_but_stage_references_are_not() -> None:
    text, bases = rewrite_from(
        "ARG X=1\nFROM --platform=linux/amd64 python:3.13 AS build\nRUN true\nFROM build\n"
        "FROM scratch AS empty\nfrom python:3.13 as again\nCOPY --from=build /a /a\n",
        {"python:3.13": "agentgym/python:abc", "build": "never"})
    assert text.splitlines()[1] == "FROM --platform=linux/amd64 agentgym/python:abc AS build"
    assert text.splitlines()[3] == "FROM build" and text.splitlines()[5] == "from agentgym/python:abc as again"
    assert bases == ["agentgym/python:abc"]


async def test_the_env_keeps_the_contract(fixtures: dict[str, Task]) -> None:
    """agentgym.testing.check_env: the reference beats the baseline, and no dodge breaks an episode."""
    from agentgym.testing import check_env

    tasks = [fixtures[name] for name in ("hello-file", "csv-column-sum", "sort-names")]
    report = await check_env("terminal", tasks=tasks, base_images=BASE_IMAGES)
    assert report.reference_return == 1.0 and report.baseline_return == 0.0


def test_eval_runs_the_oracle_from_the_command_line(tmp_path: Path, fixtures: dict[str, Task],
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "runs.jsonl"
    code = main(["eval", "terminal", "--tasks", str(TASKS / "hello-file"), "--base-image", f"{BASE}=agentgym/python",
                 "--model", "oracle", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    [row] = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["outcome_reward"] == 1.0


def hello_model(request: dict[str, Any]) -> dict[str, Any]:
    """A model over the real wire format: writes the hello-file answer with bash, reads the result, submits."""
    from agentgym.testing import completion, tool_call

    if not any(m["role"] == "tool" for m in request["messages"]):
        return completion(tool_calls=[tool_call("bash", {"command": "printf 'Hello, world!\\n' > hello.txt"})])
    return completion(content="Done.", tool_calls=[tool_call("submit", {})])


def test_eval_plays_a_model_from_the_command_line(tmp_path: Path, fixtures: dict[str, Task],
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from agentgym.testing import FakeOpenAI

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    out = tmp_path / "runs.jsonl"
    with FakeOpenAI(hello_model) as server:
        code = main(["eval", "terminal", "--tasks", str(TASKS / "hello-file"), "--base-image",
                     f"{BASE}=agentgym/python", "--model", "openai/fake-model", "--api-base", server.base_url,
                     "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    [row] = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["outcome_reward"] == 1.0 and row["outcome"] == "terminated"
    assert len(server.requests) == 2 and "/app/hello.txt" in json.dumps(server.requests[0]["messages"])
