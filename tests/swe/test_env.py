"""The SWE env end to end on a tiny repository image built from a Dockerfile: tools, grading, kept sandboxes reused."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest

from agentgym.envs.swe.env import SWEEnv
from agentgym.envs.swe.images import image_for
from agentgym.envs.swe.policies import EmptyPatch, GoldPatch
from agentgym.envs.swe.tasks import SWETask
from agentgym.envs.swe.verifier import evaluate_patch
from agentgym.errors import EnvError, SandboxError
from agentgym.parsing import native_tool_call
from agentgym.policies.base import Reply
from agentgym.rollout import rollout
from agentgym.sandboxes import Limits, discarded, engine, shutdown_containers
from agentgym.types import Message

from . import repo
from .fixtures import base_commit, src_base_commit  # noqa: F401  (the session fixtures)

pytestmark = [pytest.mark.docker, pytest.mark.slow]


class Script:
    """Calls the given tools in order, then submits."""

    name = "script"

    def __init__(self, *steps: tuple[str, dict]) -> None:
        self.steps = [*steps, ("submit", {})]

    async def act(self, messages, tools, *, task):
        turn = sum(m.role == "assistant" for m in messages)
        name, arguments = self.steps[min(turn, len(self.steps) - 1)]
        return Reply(message=Message(role="assistant", tool_calls=[native_tool_call(f"c{turn}", name, arguments)]))


def applies(patch: str) -> tuple[str, dict]:
    return ("bash", {"command": f"cat > /tmp/p.diff <<'EOF'\n{patch}EOF\ngit apply /tmp/p.diff"})


@pytest.fixture
def task(base_commit):  # noqa: F811
    return SWETask.model_validate(repo.task_row(base_commit)).to_task()


def containers_of(task) -> list:
    image = image_for(SWETask.of(task))
    return engine.client().containers.list(all=True, filters={"ancestor": image})


async def play(policy, task, **kwargs):
    async with SWEEnv(**kwargs) as env:
        return await rollout(env, policy, task)


def test_reference_resolves_baseline_and_a_wrong_patch_do_not(task) -> None:
    async def main():
        try:
            return [await play(p, task) for p in (GoldPatch(), EmptyPatch(), Script(applies(repo.WRONG)))]
        finally:
            await shutdown_containers()

    gold, empty, wrong = asyncio.run(main())
    assert gold.outcome == "terminated" and gold.reward == 1.0
    assert set(gold.info["swe"]["tests"].values()) == {"PASSED"}
    assert gold.reward_components == {"resolved": 1.0, "tests_fraction": 1.0, "patch_similarity": 1.0, "gated": 1.0}
    assert empty.reward == 0.0 and empty.info["swe"]["patch"] == ""
    assert empty.reward_components["patch_similarity"] == -1
    assert empty.info["swe"]["tests"]["tests/test_calc.py::test_add"] == "FAILED"
    assert wrong.reward == 0.0 and wrong.info["swe"]["patch_applied"] is True
    assert 0 < wrong.reward_components["patch_similarity"] < 1
    assert not containers_of(task)


def test_verdicts_on_real_logs_equal_swebench_s(task, tmp_path) -> None:
    from swebench.harness.grading import get_eval_report

    from agentgym.envs.swe.grading import swebench_spec

    swe = SWETask.of(task)
    image = image_for(swe)
    patches = {"gold": repo.GOLD, "empty": "", "wrong": repo.WRONG, "bad": repo.BAD, "hangs": repo.HANGS}

    async def main():
        return {name: await evaluate_patch(swe, patch, image=image, timeout=5 if name == "hangs" else 300)
                for name, patch in patches.items()}

    grades = asyncio.run(main())
    for name, graded in grades.items():
        path = tmp_path / f"{name}.log"
        path.write_text(graded.log)
        theirs = get_eval_report(swebench_spec(swe), {"instance_id": swe.instance_id, "model_patch": patches[name],
                                                      "model_name_or_path": "m"}, str(path), True)[swe.instance_id]
        assert graded.resolved == theirs["resolved"], name
        if "tests_status" in theirs:
            assert graded.fail_to_pass == theirs["tests_status"]["FAIL_TO_PASS"], name
    assert [n for n, g in grades.items() if g.resolved] == ["gold"]
    assert grades["bad"].applied is False and "does not apply" in grades["bad"].reason
    assert "timeout" in grades["hangs"].reason and grades["hangs"].applied is True
    assert not containers_of(task)


def test_failures_end_as_recorded_outcomes_with_reasons(task) -> None:
    cheat = Script(
        ("str_replace", {"path": "tests/test_calc.py", "old_str": "assert add(2, 3) == 5", "new_str": "assert True"}),
        ("bash", {"command": "printf '\\n\\ndef test_add_negative():\\n    assert True\\n' >> tests/test_calc.py"}),
        ("run_tests", {}),
    )

    async def main():
        try:
            return (await play(cheat, task), await play(Script(applies(repo.BAD)), task),
                    await play(Script(applies(repo.HANGS)), task, test_timeout=3))
        finally:
            await shutdown_containers()

    cheated, bad, hung = asyncio.run(main())
    # The edited tests passed in the model's own sandbox, yet the grade runs the task's tests.
    assert "exit code 0: 4 passed" in cheated.turns[2].observation[0].text
    assert "tests/test_calc.py" in cheated.info["swe"]["patch"]
    assert cheated.outcome == "terminated" and cheated.reward == 0.0
    assert cheated.info["swe"]["tests"]["tests/test_calc.py::test_add"] == "FAILED"
    assert "FAIL_TO_PASS still failing" in cheated.info["swe"]["reason"]
    # `git apply` refused it in the model's sandbox: the patch is empty, and the tests fail.
    assert bad.reward == 0.0 and "patch failed" in bad.turns[0].observation[0].text
    assert hung.outcome == "terminated" and hung.reward == 0.0 and "timeout" in hung.info["swe"]["reason"]
    assert not containers_of(task)


def test_tools(task) -> None:
    async def main():
        async with SWEEnv() as env:
            await env.reset(task)
            out = {}
            out["view_range"] = await env.view("calc/__init__.py", start_line=2, end_line=2)
            out["listing"] = await env.view(".")
            for name, call in {
                "missing": env.str_replace("calc/__init__.py", "return a / b", "x"),
                "twice": env.str_replace("tests/test_calc.py", "def test_", "def check_"),
                "exists": env.create("calc/__init__.py", "x"),
                "bad_range": env.view("calc/__init__.py", start_line=50),
                "no_file": env.view("nope.py"),
            }.items():
                try:
                    await call
                except Exception as e:  # ToolError is what the test expects
                    out[name] = f"{type(e).__name__}: {e}"
            out["edit"] = await env.str_replace("calc/__init__.py", "return a - b", "return a + b")
            out["create"] = await env.create("calc/extra.py", "X = 1\n")
            out["long"] = await env.bash("python3 -c \"print('x' * 100000)\"")
            out["slow"] = await env.bash("sleep 5", timeout=1)
            connect = "import socket; socket.create_connection(('192.0.2.1', 80), 5)"  # reserved: no one answers
            out["network"] = await env.bash(f'python3 -c "{connect}"')
            out["secrets"] = await env.bash("env; ls /var/run/docker.sock")
            # the row's hidden parts: the test patch's new test (named in FAIL_TO_PASS), the lists' field names
            out["hidden"] = await env.bash("grep -rlE 'test_add_negative|FAIL_TO_PASS|PASS_TO_PASS' / "
                                           "--exclude-dir=proc --exclude-dir=sys 2>/dev/null; true")
            out["tests"] = await env.run_tests(["tests/test_calc.py::test_add"])
            out["submit"] = await env.submit()
            out["patch"] = env.patch
        await shutdown_containers()
        return out

    out = asyncio.run(main())
    assert out["view_range"] == "     2\t    return a - b"
    assert "/testbed/calc/__init__.py" in out["listing"] and ".git" not in out["listing"]
    assert out["missing"].startswith("ToolError: old_str does not occur in calc/__init__.py")
    assert "occurs 3 times" in out["twice"] and "lines 4, 8, 12" in out["twice"]
    assert "already exists" in out["exists"] and "has 10 lines" in out["bad_range"]
    assert "does not exist" in out["no_file"]
    assert "return a + b" in out["edit"] and out["create"].startswith("Created calc/extra.py")
    assert "characters cut" in out["long"] and len(out["long"]) < 17000
    assert "timed out after 1 s" in out["slow"]
    assert "exit code 1" in out["network"] and "Network is unreachable" in out["network"]
    assert "No such file" in out["secrets"] and "HOME=/work" in out["secrets"] and "OPENAI" not in out["secrets"]
    assert out["hidden"] == "exit code 0\n(no output)", out["hidden"]
    assert "1 passed" in out["tests"]
    assert "2 file(s)" in out["submit"]
    assert "+    return a + b" in out["patch"] and "new file mode" in out["patch"] and "+X = 1" in out["patch"]


FILTER = "[filter \"x\"]\n\tsmudge = touch /var/tmp/pwned && cat\n"
"""A git filter in the model's $HOME: were it run by the reset's checkout, docker diff would show /var/tmp/pwned."""


def test_reuse_resets_to_base_and_discards_what_it_cannot_vouch_for(task) -> None:
    leaves = Script(("bash", {"command": "echo secret > calc/leak.py && echo x > .pytest_cache_x; "
                              "nohup sleep 600 >/dev/null 2>&1 & echo started"}))
    looks = Script(("bash", {"command": "ls calc; git status --porcelain; ps -e 2>/dev/null | grep -c sleep; true"}))

    async def main():
        try:
            first = await play(leaves, task)
            second = await play(looks, task)
            third = await play(Script(("bash", {"command": "echo x > /var/tmp/planted"})), task)
            fourth = await play(Script(("bash", {"command": "git config core.pager cat"})), task)
            fifth = await play(EmptyPatch(), task)
            await play(Script(("create", {"path": "/work/.gitconfig", "file_text": FILTER}),
                              ("bash", {"command": "echo '* filter=x' > .gitattributes; echo x >> calc/__init__.py"})),
                       task)
            sixth = await play(Script(("bash", {"command": "ls; ls -a $HOME"})), task)
            return first, second, third, fourth, fifth, sixth, discarded()
        finally:
            await shutdown_containers()

    first, second, third, fourth, fifth, sixth, dropped = asyncio.run(main())
    assert second.info["sandbox_reused"] is True and "sandbox_discarded" not in first.info
    seen = second.turns[0].observation[0].text
    assert "leak.py" not in seen and ".pytest_cache_x" not in seen
    assert third.info["sandbox_discarded"].startswith("docker diff shows changes outside the work tree")
    assert "/var/tmp/planted" in third.info["sandbox_discarded"]
    assert fourth.info["sandbox_reused"] is False and "/testbed/.git/config" in fourth.info["sandbox_discarded"]
    assert fifth.info["sandbox_reused"] is False and len(dropped) == 2
    # the git filter the model set up in its $HOME did not run in the reset (the sandbox was kept)
    assert sixth.info["sandbox_reused"] is True and len(dropped) == 2
    listing = sixth.turns[0].observation[0].text
    assert ".gitconfig" not in listing and "gitattributes" not in listing
    assert not containers_of(task)


SHM = "import ctypes; c = ctypes.CDLL(None); print(c.shmget(4242, 4096, 0o1600), c.msgget(4243, 0o1600), " \
      "c.semget(4244, 1, 0o1600))"
CHANNELS = {
    "reflogs": ("echo leaked-reflog >> .git/logs/HEAD; mkdir -p .git/logs/refs/x && echo leaked-reflog > "
                ".git/logs/refs/x/y", "cat .git/logs/HEAD; ls -R .git/logs"),
    "SysV IPC": (f'python3 -c "{SHM}"', "cat /proc/sysvipc/shm /proc/sysvipc/msg /proc/sysvipc/sem"),
    "tracked files' times": ("touch -d '2001-02-03 04:05:06' src/calc/__init__.py tests/helpers.py src",
                             "ls -la --time-style=full-iso src src/calc tests"),
    "extended attributes": ("python3 -c \"import os; [os.setxattr(p, 'user.leak', b'x') for p in "
                            "('src/calc/__init__.py', 'src')]\"",
                            "python3 -c \"import os; print([os.listxattr(p) for p in "
                            "('src/calc/__init__.py', 'src')])\""),
    "modes git does not model": ("chmod 0604 src/calc/__init__.py && chmod 0701 src/calc tests",
                                 "stat -c 'mode %a %n' src/calc/__init__.py src/calc tests"),
    "ignored folder from the start": ("echo leaked-ignored > build/cache.txt; echo leaked-ignored > build/new.txt",
                                      "ls -la build; cat build/*"),
}
"""Channel -> (what an episode leaves there, what the next looks at): nothing of the first may show."""
TRACES = ("leaked-reflog", "refs/x", " 4242 ", " 4243 ", " 4244 ", "2001-02-03", "leaked-ignored", "new.txt",
          "user.leak", "mode 604 ", "mode 701 ")


def test_reuse_carries_nothing_to_the_next_episode(src_base_commit) -> None:  # noqa: F811
    task = SWETask.model_validate(repo.task_row(src_base_commit, layout="src")).to_task()

    async def main():
        out = {}
        try:
            async with SWEEnv() as env:
                for name, (leave, look) in CHANNELS.items():
                    await env.reset(task)
                    planted = await env.bash(leave)
                    await env.release_sandbox()
                    discarded = env.trajectory.info.get("sandbox_discarded")
                    await env.reset(task)
                    seen = await env.bash(look)
                    out[name] = (planted, discarded, env.trajectory.info["sandbox_reused"], seen)
                    await env.release_sandbox()
        finally:
            await shutdown_containers()
        return out

    out = asyncio.run(main())
    for name, (planted, why_not, reused, seen) in out.items():
        assert planted.startswith("exit code 0"), (name, planted)
        assert not [t for t in TRACES if t in seen], (name, seen)
        if name == "ignored folder from the start":  # cannot be put back: the container is not reused
            assert why_not.startswith("an ignored path that was there at start changed") and not reused
        else:  # put back: the container is reused
            assert why_not is None and reused, (name, why_not)
    assert "-1" not in out["SysV IPC"][0].split("\n", 1)[1]  # the three objects were made
    assert not containers_of(task)


INODES = "git ls-files -z | xargs -0 stat -c '%i %n'"
"""Each tracked file's inode (what ``ls -i`` shows), and its name."""


def _inodes(output: str) -> dict[str, str]:
    return {name: inode for inode, name in (line.split(" ", 1) for line in output.splitlines()[1:] if " " in line)}


@pytest.mark.parametrize("layout", ["flat", "src"])
def test_reuse_gives_every_tracked_file_a_new_inode(layout: str, request: pytest.FixtureRequest) -> None:
    """``git reset`` rewrites only what an episode changed: the inodes of those files, and the old one of
    a file replaced by a copy of itself or a hard link to an equal file, would tell the next episode
    which. Every tracked file gets a new inode at each reset instead; a tracked folder replaced by a
    copy (whose inode cannot be put back) discards the container."""
    base = request.getfixturevalue("base_commit" if layout == "flat" else "src_base_commit")
    task = SWETask.model_validate(repo.task_row(base, layout=layout)).to_task()
    source = repo.SOURCE_PATH[layout]
    replace = f"cp -p {source} {source}.x && mv {source}.x {source} && ln -f tests/__init__.py tests/empty.py"
    if layout == "flat":  # two tracked files of equal content (empty) made one inode: git sees nothing to do
        replace += " && ln -f setup.cfg tests/__init__.py"

    async def main():
        try:
            async with SWEEnv() as env:
                await env.reset(task)
                before = await env.bash(INODES)
                replaced = await env.bash(f"{replace} && {INODES}")
                await env.release_sandbox()
                kept = env.trajectory.info.get("sandbox_discarded")
                await env.reset(task)
                after, reused = await env.bash(INODES), env.trajectory.info["sandbox_reused"]
                await env.bash("cp -a tests /tmp/t && rm -rf tests && cp -a /tmp/t tests && rm -rf /tmp/t")
                await env.release_sandbox()
                return before, replaced, kept, after, reused, env.trajectory.info.get("sandbox_discarded")
        finally:
            await shutdown_containers()

    before, replaced, kept, after, reused, dropped = asyncio.run(main())
    before, replaced, after = _inodes(before), _inodes(replaced), _inodes(after)
    assert before and set(before) == set(after), (before, after)
    assert replaced[source] != before[source]  # the episode's mark: one file's inode changed
    assert kept is None and reused, kept
    assert [name for name in before if after[name] in (before[name], replaced[name])] == []  # every one is new
    assert len(set(after.values())) == len(after)  # no two share one
    assert dropped is not None and "folders' inodes" in dropped and "tests" in dropped, dropped
    assert not containers_of(task)


def test_docker_only_is_said_clearly() -> None:
    with pytest.raises(EnvError, match="Docker only"):
        SWEEnv(sandbox_backend="local")
    from agentgym.sandboxes import local

    with pytest.raises(SandboxError, match=r"writable_root=True\).* needs the docker backend"):
        asyncio.run(local.create(Limits(writable_root=True)))


def test_eval_cli_reference_and_baseline(task, tmp_path) -> None:
    path = repo.write_tasks(tmp_path / "tasks.jsonl", [task.data])
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONPATH": os.getcwd()}
    results = {}
    for model in ("reference", "baseline"):
        out = tmp_path / f"{model}.jsonl"
        done = subprocess.run([sys.executable, "-m", "agentgym.cli", "eval", "swe", "--model", model, "--tasks",
                               str(path), "--out", str(out)], env=env, text=True, capture_output=True, timeout=600)
        assert done.returncode == 0, done.stderr
        results[model] = json.loads(out.with_suffix(".summary.json").read_text())
    assert results["reference"]["successes"] == 1 and results["baseline"]["successes"] == 0
    assert not containers_of(task)


def test_another_try_continues_from_the_submitted_patch(task) -> None:
    from agentgym.feedback import TryAgain

    half = Script(("str_replace", {"path": "calc/__init__.py", "old_str": "def slow():",
                                   "new_str": "def slow():  # tried"}))

    class ThenGold:
        name = "then-gold"

        async def act(self, messages, tools, *, task):
            tries = sum(m.role == "user" for m in messages)
            if tries < 2:
                return await half.act(messages, tools, task=task)
            turn = sum(m.role == "assistant" for m in messages)
            steps = [("view", {"path": "calc/__init__.py"}), applies(repo.GOLD), ("submit", {})]
            index = min(turn - 2, 2)
            return Reply(message=Message(role="assistant", tool_calls=[
                native_tool_call(f"c{turn}", *steps[index])]))

    async def main():
        try:
            async with SWEEnv(feedback=TryAgain(tries=2)) as env:
                return await rollout(env, ThenGold(), task)
        finally:
            await shutdown_containers()

    trajectory = asyncio.run(main())
    assert trajectory.attempts == [0.0, 1.0]
    assert "# tried" in trajectory.turns[2].observation[0].text  # the first try's edit is still there
    patch = trajectory.info["swe"]["patch"]
    assert "+def slow():  # tried" in patch and "+    return a + b" in patch


def test_check_env(task) -> None:
    from agentgym.testing import check_env

    async def main():
        try:
            return await check_env("swe", tasks=[task])
        finally:
            await shutdown_containers()

    report = asyncio.run(main())
    assert report.env == "agentgym/swe-v0" and report.reference_return == 1.0 and report.baseline_return == 0.0
    assert {"a runner module that shadows pytest", "a protected file with a name that is not UTF-8",
            "library code that leaves a folder where the report and log were",
            "library code that makes every failure a pass but in files git does not track"} <= set(report.dodges)
    assert not containers_of(task)


def test_eval_cli_hosted_model(task, tmp_path) -> None:
    """A hosted model over the real wire format (FakeOpenAI): reads the issue, edits the file, submits."""
    from agentgym.testing import FakeOpenAI, completion, tool_call

    def model(request: dict) -> dict:
        done = [m for m in request["messages"] if m["role"] == "tool"]
        assert "add(2, 3) returns -1" in request["messages"][1]["content"]
        steps = [("view", {"path": "calc/__init__.py"}),
                 ("str_replace", {"path": "calc/__init__.py", "old_str": "return a - b", "new_str": "return a + b"}),
                 ("submit", {})]
        name, arguments = steps[min(len(done), 2)]
        return completion(tool_calls=[tool_call(name, arguments)])

    path = repo.write_tasks(tmp_path / "tasks.jsonl", [task.data])
    out = tmp_path / "hosted.jsonl"
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_API_KEY": "sk-test"}
    with FakeOpenAI(model) as server:
        done = subprocess.run([sys.executable, "-m", "agentgym.cli", "eval", "swe", "--model", "openai/fake",
                               "--api-base", server.base_url, "--tasks", str(path), "--out", str(out)],
                              env=env, text=True, capture_output=True, timeout=600)
    assert done.returncode == 0, done.stderr
    summary = json.loads(out.with_suffix(".summary.json").read_text())
    assert summary["successes"] == 1 and summary["prompt_tokens"] > 0
    assert not containers_of(task)


def test_a_diff_over_the_size_limit_at_the_end_is_graded_not_applied(task) -> None:
    """An episode that ends (out of turns) with a diff larger than the sandbox returns: a 0 with the
    reason, never an error (which TRL would leave out of the advantage, so a failing policy would prefer it)."""
    big = Script(("bash", {"command": "python3 -c \"print('x = 1  # padding' * 200000)\" > calc/big.py"}))

    async def main():
        try:
            return await play(big, task, max_turns=1)
        finally:
            await shutdown_containers()

    trajectory = asyncio.run(main())
    assert trajectory.outcome == "truncated" and trajectory.failure is None, trajectory.failure
    assert trajectory.reward == 0.0 and trajectory.info["swe"]["patch_applied"] is False
    assert trajectory.info["swe"]["reason"].startswith("not applied: the patch is larger than the sandbox returns")
    assert trajectory.reward_components["patch_similarity"] == -1
