"""Grading a terminal episode as Harbor does, in the agent's own container, hardened against the agent.

Harbor copies ``tests/`` to ``/tests``, runs ``bash /tests/test.sh`` in the container the agent used and
reads ``/logs/verifier/reward.json`` (named rewards), else ``reward.txt`` (one number). The agent had
that container for the whole episode, so before the tests run (:func:`grade`):

1. ``docker diff`` (asked of the engine: nothing runs in the container for it) must show no change
   since the episode began under the paths the verifier runs from (:data:`SYSTEM_PATHS`: the system's
   binaries and libraries, the loader's preload files, root's home): a replaced ``bash``, ``python3``,
   ``sh`` or ``timeout`` grades 0, naming the path, before root runs anything there;
2. every process of the agent's uid is killed (``kill -9`` by root, in shell builtins run by
   ``/bin/sh``, again until ``/proc`` lists none), and the diff is checked again (a process may have
   written until it was killed): nothing left behind changes what the tests read while they run (unless
   the env was made with ``agent_processes="keep"``, for tasks graded on a server the agent leaves
   running; those processes still cannot write the reward or signal the tests, which are root's);
3. ``/tests`` and ``/logs`` are removed and made anew, empty, owned by root, and ``tests/`` is copied in;
4. ``test.sh`` runs as root under ``timeout`` of ``verifier.timeout_sec``, in a process tree of its own
   started through the engine (``docker exec``, not the agent's supervisor), with a fixed environment:
   ``PATH``, ``HOME=/root`` and the task's ``[verifier].env``, nothing of the agent's shell. Root here
   holds the container's capabilities only (switching user, signalling; no file-permission override:
   the engine refuses a privileged exec in a container with ``no-new-privileges``), so it writes what
   root owns and what the agent left writable to all (the agent's shell runs with ``umask 0``).

The reward is read as harbor reads it; a missing, empty or unreadable file, or a value that is not a
finite number, is a reward of 0 with the reason in ``info["verifier"]``, never an error.
"""

from __future__ import annotations

import io
import json
import math
import tarfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from agentgym.errors import SandboxError
from agentgym.rewards.verifier import Episode
from agentgym.sandboxes import CODE_USER, Endpoint, engine
from agentgym.types import Reward

from .task import HarborTask

PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc/ld.so.preload",
                "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/ld.so.cache", "/etc/alternatives", "/opt", "/root")
"""Where the verifier's programs and their libraries live (with ``/etc/alternatives``, which ``python3``
may resolve through, and ``/root``, the verifier's ``$HOME``, whose user site-packages Python reads)."""
KILL_ROUNDS = 20
REWARD_BYTES = 1 << 16
OUTPUT_TAIL = 2000


def list_pids(uid_test: str) -> str:
    """A shell loop printing the pids whose uid (``$uid``) passes ``uid_test``, the listing shell's left out,
    in shell builtins only: it runs before the tests' programs are checked."""
    return ("for d in /proc/[0-9]*; do p=${d#/proc/}; [ \"$p\" = $$ ] && continue; while read -r key uid rest; "
            f"do if [ \"$key\" = Uid: ]; then {uid_test} && echo \"$p\"; break; fi; done 2>/dev/null "
            "< \"$d/status\"; done 2>/dev/null; true")


_LIST_AGENT = list_pids(f'[ "$uid" = {CODE_USER[0]} ]')
"""The pids of the agent's uid."""


@dataclass(frozen=True)
class Finished:
    """What the verifier needs of an episode: the task and the container the agent used (``None`` when the
    episode holds none any more, graded 0)."""

    task: HarborTask
    container: str | None
    endpoint: Endpoint | None
    workdir: str
    fresh_diff: frozenset[str] = frozenset()
    """``docker diff`` paths when the episode began (the engine's own: ``/usr/sbin/docker-init``)."""
    kill_agent: bool = True
    """Step 2's kill; off for tasks graded on a server the agent leaves running (``agent_processes="keep"``)."""
    discard: Callable[[], Awaitable[None]] | None = None
    """Destroys ``container`` once graded, when it is a copy made for the tests (separate mode)."""
    why_none: str = "the episode holds no container to grade"
    """Why ``container`` is None."""


class TerminalVerifier:
    """Scores a terminal episode with its task's ``tests/test.sh`` (see the module docstring)."""

    async def score(self, episode: Episode) -> Reward:
        import asyncio

        state = episode.state
        assert isinstance(state, Finished)
        if state.container is None:
            return failed(state.why_none)
        try:
            return await asyncio.to_thread(grade, state)
        finally:
            if state.discard is not None:
                await state.discard()


def failed(reason: str, **info: Any) -> Reward:
    return Reward(value=0.0, info={"verifier": {"reason": reason, **info}})


def grade(state: Finished) -> Reward:
    """Kill, check, reset and run the task's tests in the container, then read the reward (blocking)."""
    import docker

    assert state.container is not None
    try:
        if tampered := changed_system_paths(state):  # before anything runs in the container as root
            return tampered
        agent = _root(state, _LIST_AGENT)[1].split()
        if state.kill_agent and (survivors := stop_agent(state)):
            return failed(f"processes of the agent survived {KILL_ROUNDS} rounds of kill -9: {survivors[:5]}")
        if tampered := changed_system_paths(state):  # again: a process may have written until it was killed
            return tampered
        _root(state, "rm -rf /tests /logs && mkdir -p /tests /logs/verifier && chmod 755 /tests /logs /logs/verifier")
        _client(state).api.put_archive(state.container, "/tests", _tar(state.task))
        timed_out, exit_code, seconds = run_tests(state)
        output = _root(state, f"tail -c {OUTPUT_TAIL} /logs/verifier/test-stdout.txt 2>/dev/null; true")[1]
        run = {"exit_code": exit_code, "timed_out": timed_out, "seconds": round(seconds, 2), "output_tail": output,
               "agent_processes": f"{len(agent)} {'killed' if state.kill_agent else 'left running'}",
               "container": "separate" if state.discard is not None else "shared"}
        return read_reward(state, run)
    except (docker.errors.DockerException, SandboxError) as e:
        return failed(f"the container could not be graded (it may be gone): {e}")


def changed_system_paths(state: Finished) -> Reward | None:
    """A 0 naming the first path under :data:`SYSTEM_PATHS` that ``docker diff`` shows changed since the
    episode began, or None. Asked of the engine: nothing in the container runs for it."""
    assert state.container is not None
    tampered = [p for p in engine.changed_paths(state.container, state.endpoint) if p not in state.fresh_diff
                and any(p == s or p.startswith(s + "/") for s in SYSTEM_PATHS)]
    if not tampered:
        return None
    named = [p for p in tampered if not any(q.startswith(p + "/") for q in tampered)]
    return failed(f"the agent changed {named[0]} (a path the verifier runs from); not graded", changed=named[:20])


def stop_agent(state: Finished) -> list[str]:
    """Kill every process of the agent's uid, as root (which the agent cannot signal back), until none is
    left; the pids still there after the last round."""
    left: list[str] = []
    for _ in range(KILL_ROUNDS):
        left = _root(state, _LIST_AGENT)[1].split()
        if not left:
            return []
        _root(state, f"kill -9 {' '.join(left)} 2>/dev/null; true")
        time.sleep(0.05)
    return left


def run_tests(state: Finished) -> tuple[bool, int, float]:
    """``bash /tests/test.sh`` as root, detached, its output in ``/logs/verifier/test-stdout.txt``;
    ``(timed out, exit code, seconds)``."""
    verifier = state.task.config.verifier
    limit = verifier.timeout_sec
    environment = {"PATH": PATH, "HOME": "/root", "LANG": "C.UTF-8", **verifier.env}
    script = (f"exec timeout -k 5 {limit:g} bash /tests/test.sh > /logs/verifier/test-stdout.txt 2>&1")
    api = _client(state).api
    made = api.exec_create(state.container, ["/bin/sh", "-c", script], user="0", environment=environment,
                           workdir=state.workdir)
    started = time.monotonic()
    api.exec_start(made["Id"], detach=True)
    while True:
        seen = api.exec_inspect(made["Id"])
        if not seen["Running"] and seen["ExitCode"] is not None:
            break
        if time.monotonic() - started > limit + 30:  # timeout itself was stopped: the tests never finished
            return True, -1, time.monotonic() - started
        time.sleep(0.1)
    code = int(seen["ExitCode"])
    return code in (124, 137), code, time.monotonic() - started


def read_reward(state: Finished, run: dict[str, Any]) -> Reward:
    """Harbor's rule: ``reward.json`` (an object of named numbers) wins over ``reward.txt`` (one number).

    The value is the ``reward`` entry when there is one, else the only entry (as harbor's reports take
    it), else, where harbor names no single number, the mean of the entries.
    """
    for name in ("reward.json", "reward.txt"):
        path = f"/logs/verifier/{name}"
        code, text = _root(state, f"test -f {path} || exit 3; head -c {REWARD_BYTES} {path}")
        if code == 3:
            continue
        info = {**run, "file": path}
        if not text.strip():
            return failed(f"{path} is empty", **info)
        try:
            rewards = _parse(name, text)
        except ValueError as e:
            return failed(f"{path} is not a reward: {e}", **info)
        if "reward" in rewards:
            value = rewards["reward"]
        elif len(rewards) == 1:
            value = next(iter(rewards.values()))
        else:
            value = sum(rewards.values()) / len(rewards)
        return Reward(value=value, components=rewards, info={"verifier": info})
    return failed("the tests wrote no /logs/verifier/reward.json or reward.txt", **run)


def _parse(name: str, text: str) -> dict[str, float]:
    if name == "reward.txt":
        values = {"reward": _number(text.strip(), "reward.txt")}
    else:
        data = json.loads(text)
        if not isinstance(data, dict) or not data:
            raise ValueError("reward.json must be an object of named numbers")
        values = {str(key): _number(value, str(key)) for key, value in data.items()}
    return values


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"{what} is {value!r}, not a number")
    try:
        number = float(value)
    except ValueError:
        raise ValueError(f"{what} is {value!r}, not a number") from None
    if not math.isfinite(number):
        raise ValueError(f"{what} is {value!r}, not a finite number")
    return number


def _tar(task: HarborTask) -> bytes:
    """``tests/``, as a tar whose entries are root's (``put_archive`` keeps owners)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for path in sorted(task.tests_dir.rglob("*")):
            info = tar.gettarinfo(str(path), arcname=path.relative_to(task.tests_dir).as_posix())
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            if info.isreg():
                with path.open("rb") as f:
                    tar.addfile(info, f)
            else:
                tar.addfile(info)
    return out.getvalue()


def _client(state: Finished) -> Any:
    return engine.client(state.endpoint)


def _root(state: Finished, command: str) -> tuple[int, str]:
    assert state.container is not None
    return as_root(state.container, state.endpoint, command)


def as_root(container: str, endpoint: Endpoint | None, command: str) -> tuple[int, str]:
    """``command`` run by ``/bin/sh`` as root through the engine (not the agent's supervisor), with a clean
    environment; its exit code and stdout."""
    result = engine.client(endpoint).containers.get(container).exec_run(
        ["/bin/sh", "-c", command], user="0", environment={"PATH": PATH, "HOME": "/root", "LANG": "C.UTF-8"},
        workdir="/", demux=True)
    stdout, stderr = result.output or (None, None)
    said = (stdout or b"").decode("utf-8", "replace")
    if result.exit_code in (126, 127) and (stderr or stdout or b"").startswith(b"OCI runtime"):
        raise SandboxError(f"docker exec as root failed: {(stderr or stdout or b'').decode()[:300]}")
    return int(result.exit_code), said
