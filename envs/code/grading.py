"""Grades a code submission so that nothing the submission can reach decides its grade.

Two sandboxes take part, and the submission runs in only one of them:

- the **submission's** sandbox defines the submitted function and, for each call, returns what it
  returned (or raised) as plain data (:mod:`~agentgym.envs.code.submission`);
- the **grader's** sandbox runs the task's tests with a ``candidate`` that forwards each call, and
  rebuilds each reply with :func:`~agentgym.envs.code.plain.decode`
  (:mod:`~agentgym.envs.code.grader`): every comparison, and the per-test record, happen there.

This host process relays: it asks the grader for its next call, sends the call's arguments to the
submission, and hands the reply back unread (the grader parses it). A submission can therefore only
choose its function's results, as plain values; it never sees the tests, the grader's nonce or the
report. docs/threat-model.md says what this defends and what it does not.

Neither sandbox is ever lent to a model afterwards; each role has a warm pool of its own, one of
the sandbox runtime's shared pools (``acquire(..., verifier=ROLE)``, shut down with the runtime). A
submission's sandbox saw the tests' arguments: it is wiped and goes back to the submissions' pool.
A grader's sandbox holds the hidden tests, but its session only ever runs the grader's server,
which forks a child per verification and kills it after (:mod:`~agentgym.envs.code.grader`): it
goes back to the graders' pool as it is (the pool's recycler is ``Keep``), without a wipe, and is
destroyed when it failed or has grown old. With a provider object (``CodeEnv(sandbox_backend=pool)``)
both come from it and are destroyed after use. So a verification costs what it did when one sandbox
did it all (one wipe, besides the episode's own), plus two round trips to warm sandboxes per
candidate call, a fraction of a millisecond each.
"""

from __future__ import annotations

import asyncio
import base64
import json
import marshal
import secrets
import time
import weakref
from collections.abc import Awaitable
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from importlib.util import MAGIC_NUMBER
from typing import Any

from agentgym.errors import DataError, SandboxError
from agentgym.sandboxes import (
    Lease,
    Limits,
    PythonResult,
    Sandbox,
    SandboxLease,
    SandboxPool,
    SandboxProvider,
    SandboxRuntime,
    shared_pool,
)

from .grader import FRAME_RESULTS_BYTES
from .inprocess_grading import verify_inprocess
from .testplan import TaskError, TestPlan, plan

LIMITS = Limits(output_bytes=1 << 20)
"""Limits of the verifier's sandboxes: the defaults, with room for a reply of up to a MiB."""
FRAME_SLACK = 8 << 10  # room in a sandbox's output for a frame's marker and the grader's results
MIN_GRADER_SECONDS = 2.0  # left to the tests after a hung call, so the rest can fail with a reason
ENGINE_GRACE_SECONDS = 2.0
"""How long the grader's sandbox must outlive a broken submission sandbox for the break to count as the
submission's: an engine going down stops both, but not in the same millisecond (CI saw the grader answer
a ping just after the submission's sandbox went with a restarting engine)."""
HOST_SLACK = 5.0  # host-side timeout past the grader's own, which normally fires first
GRADING_MODES = ("isolated", "inprocess")
"""How a submission may be graded: see :func:`verify` and docs/threat-model.md, "Grading modes"."""
SUBMISSIONS, GRADERS = "code-submission", "code-grader"  # the roles' pools (``acquire(..., verifier=ROLE)``)

_servers: weakref.WeakSet[object] = weakref.WeakSet()
"""Grader sandboxes whose session runs the server: the sandboxes themselves, which outlive each lease on
them (the graders' pool takes them back as they are, :class:`~agentgym.sandboxes.Keep`)."""


def _lent(sandbox: Sandbox) -> object:
    """What a lease lends (the same sandbox at every loan), else ``sandbox`` itself (from no pool)."""
    return sandbox.held if isinstance(sandbox, Lease) else sandbox

# Defines a module inside a sandbox, so the grader's and the server's ``import`` work: from its code
# compiled here when the sandbox's Python reads this one's bytecode (the same magic number), else from its
# source. A submission's sandbox is fresh for every verification, and compiling the two modules there
# cost more CPU than the rest of a HumanEval verification's relaying.
_INSTALL = """
import base64 as _base64, json as _json, marshal as _marshal, sys as _sys, types as _types
from _frozen_importlib_external import MAGIC_NUMBER as _MAGIC
def _agentgym_install(name, source, magic, code):
    module = _types.ModuleType(name)
    compiled = _marshal.loads(_base64.b64decode(code)) if magic == _MAGIC else compile(source, name + ".py", "exec")
    exec(compiled, module.__dict__)
    _sys.modules[name] = module
    return module
"""


def _install(name: str, module: str) -> str:
    """The call that defines ``module`` (of this package) as ``name`` in a sandbox's session."""
    return f"_agentgym_install({name!r}, {_source(module)!r}, {MAGIC_NUMBER!r}, {_compiled(module)!r})"


@dataclass
class Report:
    """What the tests said about a submission.

    Attributes:
        loaded: The submission defined its function.
        error: Why it did not, or why the tests did not finish; None when they did.
        tests: One ``{"test", "passed", "error"?}`` per test statement, and per other statement that failed.
        calls: Requests relayed to the submission (calls, and operations on what they returned).
        timed_out: Time ran out: the submission's, or the tests' own.
        tries: Gradings made: 2 when the first ran out of time (see :func:`verify`).
        grading: The mode that graded it: ``isolated`` (two sandboxes, calls relayed) or ``inprocess``
            (one interpreter, as plain Python; docs/threat-model.md, "Grading modes").
    """

    loaded: bool
    error: str | None = None
    tests: list[dict[str, Any]] = field(default_factory=list)
    calls: int = 0
    timed_out: bool = False
    tries: int = 1
    grading: str = "isolated"

    @property
    def passed(self) -> int:
        return sum(bool(t["passed"]) for t in self.tests)

    @property
    def total(self) -> int:
        return len(self.tests)

    @property
    def all_passed(self) -> bool:
        return self.loaded and self.error is None and self.total > 0 and self.passed == self.total


async def verify(
    data: dict[str, Any], solution: str, *, sandbox: str | SandboxProvider, image: str, timeout: float,
    runtime: SandboxRuntime | None = None, grading: str = "isolated",
) -> Report:
    """Run the task's tests (``data``: HumanEval fields) against ``solution`` within ``timeout`` seconds.

    With a backend name, the sandboxes come from ``runtime``'s shared pools (default: the current runtime).
    ``grading`` is the mode (:data:`GRADING_MODES`): ``isolated`` runs the submission and the tests in
    two sandboxes; ``inprocess`` runs them in one interpreter, as plain Python would, with tampering
    detected (:mod:`~agentgym.envs.code.inprocess_grading`).

    Time limits are wall-clock, which a busy host eats into: a grading that ran out of time is run
    once more, in fresh sandboxes, and the second report stands (a hung submission costs twice its
    time limit, and still fails).

    Raises:
        DataError: The task's tests cannot grade anything (no ``check``, no test in it) or crash
            before any test ran; the message says why.
        SandboxError: A sandbox could not be had, the grader's broke (its engine gone, say), or the
            grader failed before any call. The submission's sandbox failing alone is graded (see ``_grade``).
    """
    if grading not in GRADING_MODES:
        raise DataError(f"task {data.get('task_id')}: grading must be one of {', '.join(GRADING_MODES)}, "
                        f"got {grading!r}")
    try:
        test_plan = plan(data["test"], data["entry_point"], grading)
    except TaskError as e:
        raise DataError(f"task {data.get('task_id')}: {e}") from None
    own = VerifierSandboxes(sandbox, image, runtime) if isinstance(sandbox, str) else None
    once = _verify_once if grading == "isolated" else _verify_inprocess_once
    report = await once(data, solution, test_plan, sandbox, own, timeout)
    if report.timed_out:
        report = await once(data, solution, test_plan, sandbox, own, timeout)
        report.tries = 2
    report.grading = grading
    return report


async def _verify_inprocess_once(data: dict[str, Any], solution: str, test_plan: TestPlan,
                                 sandbox: str | SandboxProvider, own: VerifierSandboxes | None,
                                 timeout: float) -> Report:
    """One in-process grading, in a submission's sandbox (wiped after: it held the tests and the solution)."""
    box = await (own.submission() if own is not None else sandbox.acquire())  # type: ignore[union-attr]
    try:
        found = await verify_inprocess(data, solution, test_plan, box, timeout)
    finally:
        await _release(box, own, grader=False)
    return Report(loaded=found["loaded"], error=found["error"], tests=found["tests"], timed_out=found["timed_out"])


async def _verify_once(data: dict[str, Any], solution: str, test_plan: TestPlan, sandbox: str | SandboxProvider,
                       own: VerifierSandboxes | None, timeout: float) -> Report:
    if own is not None:
        pair = await _acquire_pair(own.submission(), own.grader(), own)
    else:
        pair = await _acquire_pair(sandbox.acquire(), sandbox.acquire(), own)  # type: ignore[union-attr]
    deadline = time.monotonic() + timeout  # from when both are ready: a cold start is not the submission's
    submission, tests = Submission(pair[0], data, solution), Tests(pair[1], data, test_plan)
    try:
        return await _grade(submission, tests, deadline)
    except DataError:
        raise
    except BaseException:
        tests.reusable = False  # e.g. cancelled mid-call: the grader's session may still be busy
        raise
    finally:
        await _release(submission.sandbox, own, grader=False)
        await _release(tests.sandbox, own, grader=True, reusable=tests.reusable)


async def _acquire_pair(
    submission: Awaitable[Sandbox], grader: Awaitable[Sandbox], own: VerifierSandboxes | None
) -> tuple[Sandbox, Sandbox]:
    """Both sandboxes at once; none is left lent out when one cannot be had or the caller is cancelled."""
    tasks = [asyncio.ensure_future(submission), asyncio.ensure_future(grader)]
    try:
        await asyncio.wait(tasks)
    except asyncio.CancelledError:
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks)
        raise
    finally:
        failure = next((t.exception() for t in tasks if not t.cancelled() and t.exception()), None)
        if failure is not None or any(t.cancelled() for t in tasks):
            for index, task in enumerate(tasks):
                if not task.cancelled() and task.exception() is None:
                    await _release(task.result(), own, grader=index == 1)
    if failure is not None:
        raise failure
    return tasks[0].result(), tasks[1].result()


async def _release(sandbox: Sandbox, own: VerifierSandboxes | None, *, grader: bool, reusable: bool = False) -> None:
    """A verifier's sandbox goes back to its role's pool, or is destroyed if it came from the caller's provider."""
    if own is None:  # never lent again: destroyed (or closed, if the provider's sandboxes cannot be)
        destroy = getattr(sandbox, "destroy", None)
        await (destroy() if destroy is not None else sandbox.close())
    elif grader:
        await own.keep_grader(sandbox, reusable=reusable)  # type: ignore[arg-type]
    else:
        await sandbox.close()


async def _grade(submission: Submission, tests: Tests, deadline: float) -> Report:
    """The tests' report, or ``SandboxError`` when the machinery broke rather than the submission.

    The submission may be able to break its own sandbox (where code shares the agent's uid, a local
    sandbox without root), so its sandbox failing alone fails the tests that needed it. The grader's
    sandbox runs nothing of the submission's: when it fails too (an engine restarted under both), or
    alone, the episode is an error to replay, never a grade.
    """
    loaded, event = await asyncio.gather(submission.load(deadline), tests.start(deadline))
    if "task_error" in event:
        raise DataError(f"task {tests.task_id}: {event['task_error']}")
    if loaded is not None:
        await _check_the_grader_outlives(submission, tests)
        return Report(loaded=False, error=loaded, timed_out=submission.timed_out)
    report = Report(loaded=True)
    while True:
        report.tests += event["results"]
        if "call" in event:
            event = await tests.pump(await submission.call(event["call"], deadline), deadline)
        elif "more" in event:
            event = await tests.pump(None, deadline)
        else:
            report.error = event.get("error")
            report.calls = submission.calls
            report.timed_out = submission.timed_out or tests.timed_out
            await _check_the_grader_outlives(submission, tests)
            return report


async def _check_the_grader_outlives(submission: Submission, tests: Tests) -> None:
    """When the submission's sandbox broke, grade only if the grader's is still up a moment later.

    Raises:
        SandboxError: The grader's sandbox went too (an engine restarted under both): not a grade.
    """
    if submission.broke is None:
        return
    for pause in (0.0, ENGINE_GRACE_SECONDS):
        await asyncio.sleep(pause)
        if not await tests.sandbox.is_alive():
            raise SandboxError(f"both verifier sandboxes failed: {submission.broke}") from submission.broke


class Submission:
    """The submitted function, in its sandbox: load it, then call it. Nothing it prints is trusted."""

    def __init__(self, sandbox: Sandbox, data: dict[str, Any], solution: str) -> None:
        self.sandbox = sandbox
        self.marker = "\x1e" + secrets.token_hex(8)  # finds replies among stray output; not a secret
        self.job = {
            "marker": self.marker,
            "prelude": "\n".join(line for line in data["prompt"].splitlines() if line.startswith(("import ", "from "))),
            "prompt": data["prompt"],
            "solution": solution,
            "entry_point": data["entry_point"],
            "reply_bytes": reply_bytes(sandbox),
        }
        self.gone: str | None = None  # why the function can no longer be called
        self.timed_out = False  # a call ran out of time
        self.calls = 0  # requests relayed
        self.broke: SandboxError | None = None  # the sandbox itself failed (the grader decides whose fault)

    async def load(self, deadline: float) -> str | None:
        """Define the function; None when it is defined, else why not."""
        code = (f"{_INSTALL}\n{_install('agentgym_plain', 'plain')}\n"
                f"_agentgym_server = {_install('agentgym_submission', 'submission')}"
                f".Server(_json.loads({json.dumps(self.job)!r}))\n")
        reply = await self._run(code, deadline, "while loading")
        if reply is None:
            return self.gone
        try:
            message = json.loads(reply)
        except (ValueError, RecursionError):
            message = None
        if message == {"loaded": True}:
            return None
        if isinstance(message, dict) and isinstance(message.get("error"), str):
            return message["error"][:2000]
        return f"the submission's sandbox sent a malformed reply while loading: {reply[:200]!r}"

    async def call(self, request: str, deadline: float) -> str:
        """The reply to one call (JSON text, parsed by the grader, never here)."""
        if self.gone is None and time.monotonic() >= deadline:
            self.timed_out = True
            self.gone = "the tests ran out of time before this call"
        if self.gone is None:
            self.calls += 1
            reply = await self._run(f"_agentgym_server.request({request!r})\n", deadline, "during a call")
            if reply is not None:
                return reply
        return json.dumps({"failed": self.gone})

    async def _run(self, code: str, deadline: float, when: str) -> str | None:
        """Run ``code``; its reply frame, or None with :attr:`gone` set."""
        seconds = max(0.001, deadline - time.monotonic())
        try:
            result = await self.sandbox.run_python(code, timeout=seconds)
        except SandboxError as e:
            self.gone = f"the submission's sandbox failed {when}: {e}"
            self.broke = e
            return None
        if result.timed_out:
            self.timed_out = True
            self.gone = f"the submission did not finish within the tests' {seconds:.3g} s ({when})"
        elif result.restarted:
            self.gone = f"the submission's process exited {when}: {_tail(result)}"
        elif result.truncated:
            self.gone = f"the submission printed more than its sandbox keeps {when}"
        else:
            frame = _frame(result.output, self.marker)
            if frame is not None:
                return frame
            return json.dumps({"failed": f"the submission sent no reply {when}: {_tail(result)}"})
        return None


class Tests:
    """The task's tests, run by the grader's server; each call answers with its next frame."""

    def __init__(self, sandbox: Sandbox, data: dict[str, Any], test_plan: TestPlan) -> None:
        self.sandbox = sandbox
        self.task_id = data.get("task_id")
        self.nonce = "\x1e" + secrets.token_hex(16)  # known here and in the grader only
        self.job = {"nonce": self.nonce, "prompt": data["prompt"], "entry_point": data["entry_point"],
                    "setup": test_plan.setup, "parameter": test_plan.parameter, "statements": test_plan.statements,
                    "request_bytes": sandbox.limits.output_bytes - FRAME_RESULTS_BYTES - FRAME_SLACK,
                    "reply_bytes": reply_bytes(sandbox)}
        self.started = False
        self.reusable = True  # the server answered every call as it should
        self.timed_out = False  # the tests ran out of time

    async def start(self, deadline: float) -> dict[str, Any]:
        """Start the tests (and the server, in a sandbox that has none yet); their first frame."""
        code = f"_agentgym_graders.start({json.dumps(self.job)!r}, {self._seconds(deadline)!r})\n"
        if _lent(self.sandbox) not in _servers:
            code = (f"{_INSTALL}\n{_install('agentgym_plain', 'plain')}\n"
                    f"_agentgym_graders = {_install('agentgym_grader', 'grader')}.Server()\n"
                    + code)
        event = await self._run(code, deadline)
        _servers.add(_lent(self.sandbox))
        self.started = True
        return event

    async def pump(self, reply: str | None, deadline: float) -> dict[str, Any]:
        """Hand the tests the submission's ``reply``; their next frame."""
        return await self._run(f"_agentgym_graders.pump({reply!r}, {self._seconds(deadline)!r})\n", deadline)

    @staticmethod
    def _seconds(deadline: float) -> float:
        return max(MIN_GRADER_SECONDS, deadline - time.monotonic())

    async def _run(self, code: str, deadline: float) -> dict[str, Any]:
        """One frame. Once the submission's values are in play, a grader whose session fails (its output,
        not its sandbox) ends the tests as failed."""
        seconds = self._seconds(deadline) + HOST_SLACK
        try:
            result = await self.sandbox.run_python(code, timeout=seconds)
        except SandboxError:  # the grader's sandbox or its engine broke: an error, not a grade
            self.reusable = False
            raise
        frame = _frame(result.output, self.nonce)
        if frame is not None and not result.error and not result.truncated:
            try:
                event = json.loads(frame)
            except (ValueError, RecursionError):
                event = None
            if isinstance(event, dict):
                self.timed_out = self.timed_out or bool(event.get("timed_out"))
                return event
        self.reusable = False
        self.timed_out = self.timed_out or result.timed_out
        why = "timed out" if result.timed_out else _tail(result)
        if not self.started:
            raise SandboxError(f"the grader did not start: {why}")
        return {"results": [], "error": f"the tests did not finish: {why}"}


def reply_bytes(sandbox: Sandbox) -> int:
    """The most one reply of the submission's may take: what its sandbox's output holds, less a frame's marker."""
    return sandbox.limits.output_bytes - FRAME_SLACK


def _frame(output: str, marker: str) -> str | None:
    """The text after the last ``marker`` in ``output``, up to the end of its line."""
    start = output.rfind(marker)
    if start < 0:
        return None
    start += len(marker)
    end = output.find("\n", start)
    return output[start:] if end < 0 else output[start:end]


def _tail(result: PythonResult) -> str:
    return ((result.error or "") + result.output)[-500:].strip() or "(no output)"


@cache
def _compiled(module: str) -> str:
    """``module``'s code, compiled here, as base64 of its ``marshal`` form."""
    return base64.b64encode(marshal.dumps(compile(_source(module), f"{module}.py", "exec"))).decode("ascii")


@cache
def _source(module: str) -> str:
    return resources.files(__package__).joinpath(f"{module}.py").read_text(encoding="utf-8")


class VerifierSandboxes:
    """The verifier's sandboxes for one backend and image, from the shared pools of their roles, apart
    from any model's.

    Submissions' sandboxes are wiped after each use (``close()``). Graders' go back as they are (their
    pool's recycler is :class:`~agentgym.sandboxes.Keep`, see the module docstring), and are destroyed
    when one failed.
    """

    def __init__(self, backend: str, image: str, runtime: SandboxRuntime | None = None) -> None:
        self.backend = backend
        self.image = image
        self.runtime = runtime

    async def submission(self) -> SandboxLease:
        return await (await self._pool(SUBMISSIONS)).acquire()

    async def grader(self) -> SandboxLease:
        return await (await self._pool(GRADERS, keep=True)).acquire()

    async def keep_grader(self, sandbox: SandboxLease, *, reusable: bool) -> None:
        await sandbox.release(reusable)

    async def _pool(self, role: str, *, keep: bool = False) -> SandboxPool:
        return await shared_pool(self.backend, image=self.image, limits=LIMITS, verifier=role, runtime=self.runtime,
                                 keep=keep)
