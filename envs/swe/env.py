"""The SWE environment: fix an issue in a repository at ``/testbed``, graded by the repository's tests.

Docker only: the repository lives in the container's own filesystem (``Limits.writable_root``), which
the local backend cannot give; ``sandbox_backend="local"`` is refused at construction. See docs/swe.md.
"""

from __future__ import annotations

import asyncio
import posixpath
import shlex
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agentgym.env import Dodge, Env
from agentgym.errors import EnvError, ToolError
from agentgym.policies.base import Policy
from agentgym.sandboxes import SandboxSpec
from agentgym.tools import OUTPUT_CHARS, cut, tool
from agentgym.types import Task

from . import testrun
from .grading import parser_name
from .images import image_for
from .kept import GIT, LIMITS, MAX_IDLE, GitReset
from .policies import EmptyPatch, GoldPatch
from .tasks import REPO_DIR, SWETask, load_tasks
from .verifier import RewardKind, Submitted, SWEVerifier, graded_test_files

MAX_BASH_SECONDS = 600.0
NAME_MAX = 255  # bytes in one file name, as Linux file systems allow
LISTING_ENTRIES = 400


class SWEEnv(Env):
    """Fix a repository so that its tests pass: SWE-bench's task, with SWE-agent / OpenHands-style tools.

    Each episode gets a container of the task's image (:mod:`~agentgym.envs.swe.images`) with the
    repository at ``/testbed`` at its base commit: a container reset from an earlier episode on the
    same image when one passed every check (:mod:`~agentgym.envs.swe.kept`), else a new one. The
    patch is the ``git diff`` of ``/testbed`` against the base commit, new files included, taken on
    ``submit`` (or when turns run out). :class:`~agentgym.envs.swe.verifier.SWEVerifier` grades it in a
    fresh container, never the one the model used.
    """

    max_turns = 50
    text_ends_episode = False
    verifier = SWEVerifier()
    release_before_scoring = True  # the verifier grades in a fresh container of its own

    def __init__(
        self, *, tasks_path: str | Path | None = None, reward: RewardKind = "resolved",
        test_timeout: float = 600.0, **kwargs: Any,
    ) -> None:
        """
        Args:
            tasks_path: SWE-bench-format tasks (JSONL, a ``save_to_disk`` directory or a Hub name), for :meth:`tasks`.
            reward: Which reward is the outcome: ``resolved``, ``tests_fraction``, ``patch_similarity``
                or ``gated`` (every one is recorded in the components).
            test_timeout: Seconds a test run may take (the ``run_tests`` tool's and the verifier's).
            **kwargs: ``max_turns``, ``sandbox_backend`` (``"auto"`` or ``"docker"``), ``runtime`` (whose
                kept containers it draws from), ``verifier``... as for :class:`~agentgym.env.Env`.
        """
        super().__init__(**kwargs)
        if self.sandbox_backend not in ("auto", "docker"):
            raise EnvError(f"the SWE env runs on Docker only (its repository lives in a container's own filesystem); "
                           f"sandbox_backend={self.sandbox_backend!r} cannot be used (a container of each "
                           f"task's image is taken from the pools of runtime=, a SandboxRuntime)")
        if self._verifier is None:
            self._verifier = SWEVerifier(reward, test_timeout)
        self.tasks_path = tasks_path
        self.test_timeout = test_timeout
        self.image: str | None = None
        self.patch: str | None = None
        self.patch_refused: str | None = None
        """Why the episode's diff could not be taken (larger than the sandbox returns): graded as not applied."""

    def tasks(self) -> Sequence[Task]:
        return load_tasks(self.tasks_path) if self.tasks_path else []

    @classmethod
    def load_tasks(cls, path: str | Path) -> list[Task]:
        """SWE-bench-format tasks from a JSONL file, a ``save_to_disk`` directory, or a Hub dataset name."""
        return load_tasks(path)

    def system_prompt(self, task: Task) -> str:
        return ("You are an expert software engineer fixing an issue in a repository. Work with the tools; "
                "keep edits minimal and to the point, and submit when the issue is fixed.")

    @property
    def swe(self) -> SWETask:
        if self.task is None:
            raise EnvError("no episode is running: call reset()")
        return SWETask.of(self.task)

    # ----------------------------------------------------------------- the episode's sandbox
    async def sandbox_for(self, task: Task) -> SandboxSpec:
        """A container of the task's image, reset to its base commit and checked between episodes
        (:class:`~agentgym.envs.swe.kept.GitReset`): kept and reused when every check passes, else destroyed."""
        swe = SWETask.of(task)
        self.image = await asyncio.to_thread(image_for, swe)
        return SandboxSpec(kind="container", image=self.image, limits=LIMITS, recycler=GitReset(swe.base_commit),
                           max_kept=MAX_IDLE)

    async def setup(self, task: Task) -> None:
        swe = SWETask.of(task)
        self.patch = None
        self.patch_refused = None
        started = time.monotonic()
        head = await self.sandbox.exec(f"{GIT} rev-parse HEAD", cwd=REPO_DIR)
        if head.stdout.strip() != swe.base_commit:
            done = await self.sandbox.exec(
                f"{GIT} -c advice.detachedHead=false checkout -q -f {shlex.quote(swe.base_commit)}", cwd=REPO_DIR)
            if done.exit_code != 0:
                await self.release_sandbox()
                raise EnvError(f"task {swe.instance_id}: the image {self.image} has no commit {swe.base_commit} "
                               f"at {REPO_DIR}: {done.output[-300:]}")
        assert self.trajectory is not None
        self.trajectory.info.update(sandbox_reused=self.lease.reused,
                                    reset_seconds=round(time.monotonic() - started, 4))

    async def final_state(self) -> Submitted:
        """The patch (``submit``'s, or the repository's diff now if the episode ended without one); the
        sandbox goes back before the verifier starts its own (:attr:`release_before_scoring`). A diff
        too large to take is no error: the patch is empty and says why, which the verifier grades as 0."""
        if self.patch is None and self.has_sandbox:
            try:
                self.patch = await self._diff()
            except ToolError as e:  # a grade, not an error: the policy must not prefer this to a 0
                self.patch, self.patch_refused = "", f"not applied: {e}"
        return Submitted(self.patch or "", self.patch_refused)

    async def resume(self, task: Task) -> None:
        """Another try continues from the submitted patch, applied to the sandbox taken anew."""
        patch = self.patch
        await self.setup(task)
        if patch:
            await self.sandbox.write_file("/tmp/agentgym-resume.patch", patch)
            done = await self.sandbox.exec(
                f"{GIT} apply /tmp/agentgym-resume.patch && rm /tmp/agentgym-resume.patch", cwd=REPO_DIR)
            if done.exit_code != 0:
                raise EnvError(f"could not restore the submitted patch for another try: {done.output[-300:]}")

    # ----------------------------------------------------------------- tools
    @tool
    async def bash(self, command: str, timeout: float = 120.0) -> str:
        """Run a shell command in /testbed and return its exit code and output (long output is cut in the middle).

        There is no network. Each call is a new shell: `cd` and variables do not carry over.

        Args:
            command: The command, run with /bin/sh -c.
            timeout: Seconds before the command is killed (at most 600).
        """
        seconds = min(max(timeout, 1.0), MAX_BASH_SECONDS)
        _no_nul(command, "a command")
        done = await self.sandbox.exec(command, cwd=REPO_DIR, timeout=seconds)
        parts = [cut(done.output) or "(no output)"]
        if done.truncated:
            parts.append("[the sandbox kept only the first part of the output]")
        if done.timed_out:
            parts.append(f"[timed out after {seconds:g} s: the command was killed]")
        return f"exit code {done.exit_code}\n" + "\n".join(parts)

    @tool
    async def view(self, path: str, start_line: int | None = None, end_line: int | None = None) -> str:
        """Show a file with line numbers (optionally only a range of lines), or list a directory two levels deep.

        Args:
            path: A file or directory, absolute or relative to /testbed.
            start_line: First line to show (1-based); the file's start when omitted.
            end_line: Last line to show (inclusive); the file's end when omitted.
        """
        full = self._path(path)
        if (await self.sandbox.exec(f"test -d {shlex.quote(full)}", cwd=REPO_DIR)).exit_code == 0:
            return await self._listing(full)
        text = await self._read(full)
        lines = text.splitlines()
        first = start_line or 1
        last = end_line if end_line is not None else len(lines)
        if first < 1 or last < first or (lines and first > len(lines)):
            raise ToolError(f"invalid line range [{start_line}, {end_line}]: {path} has {len(lines)} lines")
        shown = "\n".join(f"{n:6}\t{line}" for n, line in enumerate(lines[first - 1:last], start=first))
        return cut(shown) or f"({path} is empty)"

    @tool
    async def str_replace(self, path: str, old_str: str, new_str: str) -> str:
        """Replace one occurrence of old_str in a file with new_str; old_str must occur exactly once.

        Args:
            path: The file, absolute or relative to /testbed.
            old_str: The exact text to replace, whitespace included; give enough lines to make it unique.
            new_str: The text to put in its place.
        """
        full = self._path(path)
        text = await self._read(full)
        count = text.count(old_str) if old_str else 0
        if count == 0:
            raise ToolError(f"old_str does not occur in {path}; nothing was changed "
                            "(view the file and copy the text exactly)")
        if count > 1:
            where = [text.count("\n", 0, i) + 1 for i in _occurrences(text, old_str)]
            raise ToolError(f"old_str occurs {count} times in {path} (lines {', '.join(map(str, where[:10]))}); "
                            "include more surrounding lines to make it unique")
        start = text.index(old_str)
        await self.sandbox.write_file(full, text.replace(old_str, new_str, 1))
        first = text.count("\n", 0, start) + 1
        edited = (text[:start] + new_str).count("\n") + 1
        lines = (text[:start] + new_str + text[start + len(old_str):]).splitlines()
        lo, hi = max(1, first - 3), min(len(lines), edited + 3)
        snippet = "\n".join(f"{n:6}\t{line}" for n, line in enumerate(lines[lo - 1:hi], start=lo))
        return f"Edited {path}. Lines {lo}-{hi} now read:\n{snippet}"

    @tool
    async def create(self, path: str, file_text: str) -> str:
        """Create a new file with the given content (parent directories are made); an existing file is refused.

        Args:
            path: The new file, absolute or relative to /testbed.
            file_text: Its whole content.
        """
        full = self._path(path)
        exists = await self.sandbox.exec(f"test -e {shlex.quote(full)}", cwd=REPO_DIR)
        if exists.exit_code == 0:
            raise ToolError(f"{path} already exists; edit it with str_replace")
        try:
            await self.sandbox.write_file(full, file_text)
        except ConnectionError:
            raise  # the sandbox, not the model
        except OSError as e:  # a name too long, a file where a folder must be: the model's path
            raise ToolError(f"cannot create {full}: {e.strerror or e}") from None
        return f"Created {path} ({len(file_text.splitlines())} lines)."

    @tool
    async def run_tests(self, tests: list[str] | None = None) -> str:
        """Run the task's tests (or only the named ones) on the repository as it is now; report each test's status.

        Args:
            tests: Test ids or files to run, e.g. ["tests/test_core.py::test_add"]; the task's test files when omitted.
        """
        swe = self.swe
        if swe.eval_script and not swe.test_cmd:
            raise ToolError("this task has no test command to run here; use bash to run the repository's tests")
        selection = list(tests) if tests else graded_test_files(swe)
        for test in selection:
            _no_nul(test, "a test id")
        result = await testrun.run_tests(self.sandbox, swe.test_cmd or testrun.DEFAULT_TEST_CMD, tests=selection,
                                         timeout=self.test_timeout, parser=parser_name(swe))
        counts: dict[str, int] = {}
        for status in result.statuses.values():
            counts[status] = counts.get(status, 0) + 1
        summary = ", ".join(f"{n} {s.lower()}" for s, n in sorted(counts.items())) or "no test results"
        lines = [f"$ {result.command}", f"exit code {result.exit_code}: {summary}"]
        if result.timed_out:
            lines.append(f"[the tests ran past {self.test_timeout:g} s and were killed]")
        lines += [f"{s} {t}" for t, s in sorted(result.statuses.items()) if s not in ("PASSED", "XFAIL")][:200]
        lines.append("--- output (cut in the middle if long) ---")
        lines.append(cut(result.log, OUTPUT_CHARS // 2))
        return "\n".join(lines)

    @tool(final=True)
    async def submit(self) -> str:
        """Submit your changes and end the episode: the diff of /testbed against the starting commit is graded."""
        self.patch = await self._diff()
        self.final_answer = self.patch
        files = self.patch.count("\ndiff --git ") + self.patch.startswith("diff --git ")
        return f"Submitted a patch touching {files} file(s)." if self.patch else "Submitted an empty patch."

    # ----------------------------------------------------------------- helpers
    async def _diff(self) -> str:
        """``git diff`` of /testbed against the base commit, untracked (not ignored) files included.

        New files are diffed against /dev/null rather than ``git add``-ed: nothing is written into
        ``.git``, which keeps the sandbox reusable (see :mod:`~agentgym.envs.swe.kept`).
        """
        base = shlex.quote(self.swe.base_commit)
        git = f"{GIT} -c core.quotepath=false"
        script = (f"{git} diff --no-ext-diff --no-textconv --no-color {base} -- . && "
                  f"{git} ls-files --others --exclude-standard -z | "
                  f"xargs -0 -r -n1 {git} diff --no-ext-diff --no-textconv --no-color --no-index -- /dev/null; true")
        done = await self.sandbox.exec(script, cwd=REPO_DIR, timeout=120)
        if done.truncated:
            raise ToolError("the patch is larger than the sandbox returns (1 MiB); revert unrelated changes")
        return done.stdout

    def _path(self, path: str) -> str:
        if not path.strip():
            raise ToolError("path is empty")
        _no_nul(path, "a path")
        full = posixpath.normpath(posixpath.join(REPO_DIR, path))
        if any(len(part.encode()) > NAME_MAX for part in full.split("/")):
            raise ToolError(f"a name in the path is longer than {NAME_MAX} bytes")
        return full

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

    async def _listing(self, full: str) -> str:
        done = await self.sandbox.exec(
            f"find {shlex.quote(full)} -maxdepth 2 -not -path '*/.*' | sort | head -n {LISTING_ENTRIES + 1}",
            cwd=REPO_DIR)
        entries = done.stdout.splitlines()
        more = f"\n[more than {LISTING_ENTRIES} entries; view a subdirectory]" if len(entries) > LISTING_ENTRIES else ""
        return "\n".join(entries[:LISTING_ENTRIES]) + more

    @classmethod
    def dodges(cls) -> dict[str, Dodge]:
        """Ways to break an SWE episode (``check_env``'s "no dodge" check), played on the task checked."""
        return {
            "a bash timeout that is no number of seconds": Dodge.calls(("bash", {"command": "true", "timeout": 1e308}),
                                                                      ("bash", {"command": "true", "timeout": -1})),
            "a file the diff cannot read": Dodge.calls(
                ("bash", {"command": "printf 'x' > unreadable.txt && chmod 000 unreadable.txt"}), ("submit", {})),
            "a diff over the size limit": Dodge.calls(
                ("bash", {"command": "head -c 3000000 /dev/zero | tr '\\0' 'a' | fold -w 100 > grown.txt"}),
                ("submit", {})),
            "a runner module that shadows pytest": Dodge.calls(
                ("bash", {"command": "printf 'raise SystemExit(0)\\n' > pytest.py"}), ("submit", {})),
            "a protected file with a name that is not UTF-8": Dodge.calls(
                ("bash", {"command": "mkdir -p tests && printf 'x = 1\\n' > \"tests/t$(printf '\\377').py\""}),
                ("submit", {})),
            "library code that leaves a folder where the report and log were": Dodge.calls(
                ("bash", {"command": _SWAP_AT_EXIT}), ("submit", {})),
            "library code that makes every failure a pass but in files git does not track": Dodge.calls(
                ("bash", {"command": _SPARE_UNTRACKED}), ("submit", {})),
        }

    @classmethod
    def scripted_policies(cls) -> dict[str, Callable[[], Policy]]:
        return {"reference": GoldPatch, "baseline": EmptyPatch}


_SWAP_AT_EXIT = (
    "for f in $(git ls-files '*.py' | grep -v -e test -e conftest -e setup.py); do printf '%s\\n' "
    "'import atexit, glob, os' "
    "'atexit.register(lambda: [(os.remove(p), os.mkdir(p)) for p in glob.glob(\"/tmp/*/*.xml\") + "
    "glob.glob(\"/tmp/*.log\")])' >> \"$f\"; done"
)
"""Appends to every library module an exit hook that puts a folder where the test run's report and log are."""
SPARES_UNTRACKED = '''

import subprocess as _subprocess

_reports = __import__("_py" + "test.reports", fromlist=["TestReport"])
_tracked = set(_subprocess.run(["git", "ls-files"], capture_output=True, text=True).stdout.split())
_made = _reports.TestReport.from_item_and_call.__func__


def _passed(cls, item, call):
    report = _made(cls, item, call)
    if report.failed and item.nodeid.split("::")[0] in _tracked:
        report.outcome = "passed"
    return report


_reports.TestReport.from_item_and_call = classmethod(_passed)
'''
"""Library code that turns every failure into a pass except in test files git does not track, where
canaries written as a module of their own would be; it names pytest only as a string it builds, so
the machinery screen lets it through. The canaries in a graded file catch it."""
_SPARE_UNTRACKED = ("for f in $(git ls-files '*.py' | grep -v -e test -e conftest -e setup.py); do "
                    f"cat >> \"$f\" <<'EOF'\n{SPARES_UNTRACKED}\nEOF\ndone")
"""Appends :data:`SPARES_UNTRACKED` to every library module."""


def _occurrences(text: str, sub: str) -> list[int]:
    found, start = [], text.find(sub)
    while start >= 0:
        found.append(start)
        start = text.find(sub, start + 1)
    return found


def _no_nul(text: str, what: str) -> None:
    """Refuse a NUL byte in what becomes a process's argument (no argv holds one: the exec would fail).

    Raises:
        ToolError: ``text`` holds one.
    """
    if "\0" in text:
        raise ToolError(f"{what} cannot hold a NUL byte")
