"""The terminal env: a Harbor task (Terminal-Bench 2.x) in a container of its image, graded by its tests.

Docker only: the task's files live in the container's own filesystem (``/app``), which the local
backend cannot give. See docs/terminal.md.
"""

from __future__ import annotations

import asyncio
import functools
import posixpath
import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from agentgym.env import Env
from agentgym.errors import EnvError, SandboxError, ToolError
from agentgym.policies.base import Policy
from agentgym.sandboxes import Destroy, Limits, SandboxSpec, engine
from agentgym.tools import cut, tool
from agentgym.types import Message, StepResult, Task

from .config import NetworkMode, VerifierEnvironmentMode
from .images import TaskImage, image_for
from .policies import Oracle, SubmitAtOnce
from .reset import WorkdirReset
from .task import HarborTask, load_task, load_tasks
from .verifier import Finished, TerminalVerifier, changed_system_paths

DESTROY = Destroy()
"""The recycler with ``reuse=False``: every container is destroyed after its episode."""
MAX_KEPT = 8
"""Reset containers kept per task image, for the next episodes of the task (a GRPO group's)."""
DEFAULT_AGENT_TIMEOUT = 900.0
"""An episode's wall time when ``[agent].timeout_sec`` is not set."""
MAX_BASH_SECONDS = 900.0
SHELL_DIR = "/tmp/.agentgym-shell"
_RUN = f"""umask 0
cd "$(cat {SHELL_DIR}/cwd)" 2>/dev/null || cd /
. {SHELL_DIR}/env 2>/dev/null
trap 'pwd > {SHELL_DIR}/cwd; export -p > {SHELL_DIR}/env' EXIT
. {SHELL_DIR}/command
"""
"""One ``bash`` call: the last call's directory and exported variables back, the command, then both saved
(on ``exit`` too). The command is sourced from a file, so no argument length limits it. ``umask 0``: what
the agent makes, the verifier's root (which has no file-permission override) may change too."""


@functools.cache
def _task(path: str) -> HarborTask:
    return load_task(Path(path))


def harbor_task(task: Task) -> HarborTask:
    """The Harbor task folder a :class:`~agentgym.types.Task` of this env stands for (``data["path"]``)."""
    path = task.data.get("path")
    if not isinstance(path, str):
        raise EnvError(f"task {task.id} is not a terminal task (no data['path'] naming a Harbor task folder)")
    return _task(path)


def as_task(harbor: HarborTask) -> Task:
    return Task(id=harbor.name, prompt=harbor.instruction, data={"path": str(harbor.path)})


def limits_for(harbor: HarborTask, *, network: bool = False) -> Limits:
    """The container's limits from ``[environment]``: cpus, memory, storage (each tmpfs and any one file),
    a lifetime that outlasts the agent and the tests, and the network only when the task asks for it
    (``network_mode = "public"``, harbor's default) and ``network`` allows it: Docker's bridge network
    reaches this machine's own addresses, which the task's code must not see unless the user says so."""
    environment = harbor.config.environment
    defaults = Limits()
    agent = harbor.config.agent.timeout_sec or DEFAULT_AGENT_TIMEOUT
    return Limits(
        cpus=float(environment.cpus or defaults.cpus),
        memory_mb=environment.memory_mb or 2048,
        disk_mb=environment.storage_mb or 1024,
        pids=512,
        network=network and environment.network_mode == NetworkMode.PUBLIC,
        writable_root=True,
        wall_seconds=max(defaults.wall_seconds, 2 * (agent + harbor.config.verifier.timeout_sec + 300)),
        output_bytes=1 << 20,
    )


class TerminalEnv(Env):
    """Do a task in a Linux container with a shell and file tools; its own tests grade the container.

    Each episode gets a container of the task's image (:mod:`~agentgym.envs.terminal.images`), new or
    reset after an earlier episode of the task (:mod:`~agentgym.envs.terminal.reset`); the
    agent's commands run there as an unprivileged uid that may write the image's working directory. The
    episode ends on ``submit``, when turns run out, or when ``[agent].timeout_sec`` has passed;
    :class:`~agentgym.envs.terminal.verifier.TerminalVerifier` then grades that same container.
    """

    max_turns = 200
    text_ends_episode = False
    verifier = TerminalVerifier()

    def __init__(self, *, tasks: str | Path | None = None, base_images: Mapping[str, str] | None = None,
                 agent_processes: Literal["kill", "keep"] = "kill", network: bool = False,
                 verifier_container: Literal["task", "shared", "separate"] = "task", reuse: bool = True,
                 **kwargs: Any) -> None:
        """
        Args:
            tasks: A Harbor task folder, or a folder of them (:func:`~agentgym.envs.terminal.task.load_tasks`).
            base_images: Public image name → local image, for ``FROM`` lines and ``docker_image``s that the
                engine does not have (``{"python:3.13-slim-bookworm": "agentgym/python"}``).
            agent_processes: ``kill``: every process the agent left is killed before the tests run;
                ``keep``: left running, for tasks whose tests talk to a server the agent started.
            network: Give a task whose ``network_mode`` is ``public`` (harbor's default) Docker's bridge
                network; off by default, so no task's code reaches this machine's addresses unasked.
            verifier_container: Where the tests run: ``task``, as ``[verifier].environment_mode`` says
                (the agent's container unless it says ``separate``); ``shared``, the agent's container;
                ``separate``, a fresh container started from a copy of the agent's files (its writable
                root and its ``/tmp``; no process of the agent's), destroyed after.
            reuse: Keep a container after its episode for the task's next one, reset and checked
                (:class:`~agentgym.envs.terminal.reset.WorkdirReset`; one that fails a check is
                destroyed); ``False``: destroy every container after its episode.
            **kwargs: ``max_turns``, ``sandbox_backend`` (``"auto"`` or ``"docker"``), ``runtime``... as for
                :class:`~agentgym.env.Env`.
        """
        super().__init__(**kwargs)
        if self.sandbox_backend not in ("auto", "docker"):
            raise EnvError(f"the terminal env runs on Docker only (a task's files live in its container's own "
                           f"filesystem); sandbox_backend={self.sandbox_backend!r} cannot be used")
        self.tasks_path = tasks
        self.base_images = dict(base_images or {})
        if agent_processes not in ("kill", "keep"):
            raise EnvError(f"agent_processes={agent_processes!r}: use 'kill' or 'keep'")
        self.agent_processes = agent_processes
        self.network = network
        if verifier_container not in ("task", "shared", "separate"):
            raise EnvError(f"verifier_container={verifier_container!r}: use 'task', 'shared' or 'separate'")
        self.verifier_container = verifier_container
        self.reuse = reuse
        self.image: TaskImage | None = None
        self.deadline = 0.0
        self.fresh_diff: frozenset[str] = frozenset()

    def tasks(self) -> Sequence[Task]:
        return self.load_tasks(self.tasks_path) if self.tasks_path else []

    @classmethod
    def load_tasks(cls, path: str | Path) -> list[Task]:
        """A Harbor task folder, or a folder of them."""
        return [as_task(harbor) for harbor in load_tasks(path)]

    def system_prompt(self, task: Task) -> str:
        return ("You are working in a Linux container through a shell. Do the task with the tools, check "
                "your work, and call submit when it is done: the container is then graded as you leave it.")

    # ----------------------------------------------------------------- the episode's sandbox
    async def sandbox_for(self, task: Task) -> SandboxSpec:
        """A container of the task's image: one an earlier episode of the task left, reset and checked
        (:class:`~agentgym.envs.terminal.reset.WorkdirReset`), or a new one; with ``reuse=False`` always a
        new one, destroyed after the episode."""
        harbor = harbor_task(task)
        self.image = await asyncio.to_thread(image_for, harbor, self.base_images)
        recycler, kept = (WorkdirReset(self.image.workdir), MAX_KEPT) if self.reuse else (DESTROY, 1)
        return SandboxSpec(kind="container", image=self.image.ref, limits=limits_for(harbor, network=self.network),
                           recycler=recycler, max_kept=kept)

    async def setup(self, task: Task) -> None:
        assert self.image is not None
        harbor = harbor_task(task)
        self.deadline = time.monotonic() + (harbor.config.agent.timeout_sec or DEFAULT_AGENT_TIMEOUT)
        await self.sandbox.write_file(f"{SHELL_DIR}/run", _RUN)
        await self.sandbox.write_file(f"{SHELL_DIR}/cwd", self.image.workdir + "\n")
        await self.sandbox.write_file(f"{SHELL_DIR}/env", "")
        self.fresh_diff = frozenset(await asyncio.to_thread(engine.changed_paths, self.sandbox.id))
        assert self.trajectory is not None
        self.trajectory.info["sandbox_reused"] = self.lease.reused

    async def final_state(self) -> Finished:
        """The container for the verifier: the agent's, or in separate mode a fork of it (:meth:`separate`)."""
        assert self.task is not None and self.image is not None
        harbor = harbor_task(self.task)
        if not self.has_sandbox:
            return Finished(harbor, None, None, self.image.workdir)
        agent = Finished(harbor, self.sandbox.id, getattr(self.sandbox, "endpoint", None), self.image.workdir,
                         self.fresh_diff, self.agent_processes == "kill")
        if not self.separate(harbor) or await asyncio.to_thread(changed_system_paths, agent) is not None:
            return agent  # a changed system path is graded 0 in the agent's container, before any copy
        try:
            (copy,) = await self.sandbox.fork(1)
        except SandboxError as e:
            return Finished(harbor, None, None, self.image.workdir, why_none=f"copying the agent's container "
                            f"for the tests failed: {e}")
        return Finished(harbor, copy.id, getattr(copy, "endpoint", None), self.image.workdir,
                        frozenset(await asyncio.to_thread(engine.changed_paths, copy.id)), True, copy.close)

    def separate(self, harbor: HarborTask) -> bool:
        """Whether the tests run in a container of their own, started from the agent's files."""
        if self.verifier_container != "task":
            return self.verifier_container == "separate"
        return harbor.config.verifier.environment_mode == VerifierEnvironmentMode.SEPARATE

    async def step(self, action: Message | Mapping[str, Any]) -> StepResult:
        """A turn; past ``[agent].timeout_sec`` the episode ends there, truncated, and is graded."""
        result = await super().step(action)
        if result.terminated or result.truncated or time.monotonic() < self.deadline:
            return result
        assert self.trajectory is not None and self.task is not None
        self.trajectory.info["truncated_because"] = (
            f"the agent's time ran out ([agent].timeout_sec = {self._agent_timeout():g} s)")
        reward = await self.end("truncated")
        return result.model_copy(update={"truncated": True, "info": {**result.info, "reward": reward.model_dump()}})

    def _agent_timeout(self) -> float:
        assert self.task is not None
        return harbor_task(self.task).config.agent.timeout_sec or DEFAULT_AGENT_TIMEOUT

    # ----------------------------------------------------------------- tools
    @tool
    async def bash(self, command: str, timeout: float = 120.0) -> str:
        """Run a bash command and return its exit code and output (long output is cut in the middle).

        The shell keeps its state between calls: the current directory and exported variables carry
        over. A background job whose output is redirected (`nohup server > log 2>&1 &`) keeps running.

        Args:
            command: Bash commands, as you would type them.
            timeout: Seconds before the command is killed (at most 900, and no later than the task's time).
        """
        _no_nul(command, "a command")
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise ToolError("the task's time is up; call submit")
        seconds = min(max(timeout, 1.0), MAX_BASH_SECONDS, left)
        await self.sandbox.write_file(f"{SHELL_DIR}/command", command + "\n")
        done = await self.sandbox.exec(f"exec bash {SHELL_DIR}/run", timeout=seconds)
        parts = [cut(done.output) or "(no output)"]
        if done.truncated:
            parts.append("[the sandbox kept only the first part of the output]")
        if done.timed_out:
            parts.append(f"[timed out after {seconds:g} s: the command was killed, the shell's state not saved]")
        return f"exit code {done.exit_code}\n" + "\n".join(parts)

    @tool
    async def view(self, path: str) -> str:
        """Show a text file with line numbers, or list a directory.

        Args:
            path: A file or directory, absolute or relative to the shell's current directory.
        """
        full = await self._path(path)
        if (await self.sandbox.exec(f"test -d {shlex.quote(full)}")).exit_code == 0:
            done = await self.sandbox.exec(f"ls -la {shlex.quote(full)}")
            return cut(done.output)
        text = await self._read(full)
        numbered = "\n".join(f"{n:6}\t{line}" for n, line in enumerate(text.splitlines(), start=1))
        return cut(numbered) or f"({path} is empty)"

    @tool
    async def write(self, path: str, content: str) -> str:
        """Write a file (created, or replaced whole; parent directories are made).

        Args:
            path: The file, absolute or relative to the shell's current directory.
            content: Its whole new content.
        """
        full = await self._path(path)
        try:
            await self.sandbox.write_file(full, content)
        except ConnectionError:
            raise  # the sandbox, not the model
        except OSError as e:
            raise ToolError(f"cannot write {full}: {e.strerror or e}") from None
        return f"Wrote {full} ({len(content)} characters)."

    @tool
    async def edit(self, path: str, old: str, new: str) -> str:
        """Replace the one occurrence of `old` in a file with `new`.

        Args:
            path: The file, absolute or relative to the shell's current directory.
            old: The exact text to replace, which must occur exactly once.
            new: The text to put in its place.
        """
        full = await self._path(path)
        text = await self._read(full)
        count = text.count(old) if old else 0
        if count != 1:
            raise ToolError(f"old occurs {count} times in {full}; it must occur exactly once (nothing was changed)")
        await self.sandbox.write_file(full, text.replace(old, new, 1))
        return f"Edited {full}."

    @tool(final=True)
    async def submit(self) -> str:
        """End the episode: the container is graded by the task's tests as it is now."""
        return "Submitted."

    # ----------------------------------------------------------------- helpers
    async def _path(self, path: str) -> str:
        if not path.strip():
            raise ToolError("path is empty")
        _no_nul(path, "a path")
        if posixpath.isabs(path):
            return posixpath.normpath(path)
        cwd = (await self.sandbox.read_file(f"{SHELL_DIR}/cwd")).decode("utf-8", "replace").strip() or "/"
        return posixpath.normpath(posixpath.join(cwd, path))

    async def _read(self, full: str) -> str:
        try:
            data = await self.sandbox.read_file(full)
        except FileNotFoundError:
            raise ToolError(f"{full} does not exist") from None
        except OSError as e:
            raise ToolError(f"cannot read {full}: {e.strerror or e}") from None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolError(f"{full} is not a UTF-8 text file") from None

    @classmethod
    def scripted_policies(cls) -> dict[str, Callable[[], Policy]]:
        """``oracle`` (also ``reference``): the task's ``solution/solve.sh``; ``baseline``: submits at once."""
        return {"oracle": Oracle, "reference": Oracle, "baseline": SubmitAtOnce}


def _no_nul(text: str, what: str) -> None:
    if "\0" in text:
        raise ToolError(f"{what} cannot hold a NUL byte")
