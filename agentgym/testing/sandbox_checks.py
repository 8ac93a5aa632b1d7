"""The sandbox contract as a function: :func:`check_sandbox` runs every check on fresh sandboxes of a backend.

It is what every backend (``docker``, ``local``, or one you write) must pass for an env author to rely
on it: exit codes and output, the working directory, a persistent Python session that survives
exceptions, timeouts and code that breaks its own process, binary file round trips, refusal of
devices and FIFOs, background jobs, ``fork`` (forks see the files made before it and none of each
other's edits after it), and an idempotent ``close``. The project's own test suite
(``tests/sandboxes/test_conformance.py``) calls it once per check and backend.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from agentgym.errors import SandboxError
from agentgym.sandboxes.contract import ExecResult, Limits, PythonResult, Sandbox

SMALL = Limits(cpus=1.0, memory_mb=256, pids=64, disk_mb=32, wall_seconds=300, exec_timeout=20, output_bytes=8192)
"""Limits the checks run under by default: small, so that a limit that does not hold shows."""

Check = Callable[[Sandbox], Awaitable[None]]
SandboxFactory = Callable[[], Awaitable[Sandbox]]


class SandboxCheckError(AssertionError):
    """A backend broke the sandbox contract; the message names the check."""


def _expect(condition: bool, what: str) -> None:
    if not condition:
        raise AssertionError(what)


async def _raises(error: type[BaseException], action: Awaitable[Any], match: str | None = None) -> None:
    try:
        await action
    except error as e:
        _expect(match is None or re.search(match, str(e)) is not None, f"{error.__name__} {e!r} does not say {match!r}")
        return
    raise AssertionError(f"expected {error.__name__}")


async def meets_the_protocol(sandbox: Sandbox) -> None:
    _expect(isinstance(sandbox, Sandbox), f"{type(sandbox).__name__} does not meet the Sandbox protocol")
    _expect(bool(sandbox.id), "the sandbox has no id")
    _expect(await sandbox.is_alive(), "a new sandbox is not alive")


async def exec_output_and_exit_codes(sandbox: Sandbox) -> None:
    result = await sandbox.exec("echo out; echo err >&2; exit 3")
    _expect(result == ExecResult(exit_code=3, stdout="out\n", stderr="err\n"), f"exec gave {result!r}")
    _expect((await sandbox.exec("true")).exit_code == 0, "true did not exit 0")
    _expect((await sandbox.exec("no-such-command")).exit_code == 127, "a missing command did not exit 127")
    _expect((await sandbox.exec("kill -9 $$")).exit_code == 128 + 9, "a killed shell did not exit 137")


async def exec_working_directory(sandbox: Sandbox) -> None:
    pwd = (await sandbox.exec("pwd")).stdout
    _expect(pwd == "/work\n" or sandbox.id.startswith("local-"), f"commands run in {pwd!r}, not /work")
    await sandbox.exec("mkdir -p sub && echo hi > sub/f")
    _expect((await sandbox.exec("cat f", cwd="sub")).stdout == "hi\n", "cwd= is not honoured")


async def python_session_keeps_state(sandbox: Sandbox) -> None:
    first = await sandbox.run_python("x = 20\ndef f(y):\n    return x + y")
    _expect(first == PythonResult(), f"a silent statement gave {first!r}")
    result = await sandbox.run_python("import sys\nprint(f(22))\nprint('warn', file=sys.stderr)")
    _expect(result.output == "42\nwarn\n", f"the session lost its state or output: {result!r}")
    _expect(result.error is None and not result.restarted, f"a good run reported trouble: {result!r}")


async def python_exception_gives_traceback_and_session_lives(sandbox: Sandbox) -> None:
    await sandbox.run_python("kept = 1")
    result = await sandbox.run_python("print('before')\ndef g():\n    raise ValueError('boom')\ng()")
    _expect(result.output == "before\n", f"output before the exception was lost: {result!r}")
    error = result.error or ""
    _expect("ValueError: boom" in error and 'File "<python>", line 4' in error, f"no usable traceback: {error!r}")
    _expect("agent" not in error, "the traceback shows frames of the in-sandbox agent")
    _expect(not result.restarted, "an exception restarted the session")
    _expect((await sandbox.run_python("print(kept)")).output == "1\n", "an exception lost the session's state")
    syntax = await sandbox.run_python("def (")
    _expect(syntax.error is not None and "SyntaxError" in syntax.error, f"no SyntaxError reported: {syntax!r}")


async def files_round_trip_binary(sandbox: Sandbox) -> None:
    blob = bytes(range(256)) * 1000
    await sandbox.write_file("deep/dir/blob.bin", blob)
    _expect(await sandbox.read_file("deep/dir/blob.bin") == blob, "a binary file did not round-trip")
    size = (await sandbox.exec("wc -c < deep/dir/blob.bin")).stdout.strip()
    _expect(size == str(len(blob)), f"the written file has {size} bytes, not {len(blob)}")
    await sandbox.write_file("/tmp/text.txt", "héllo")
    read_back = await sandbox.run_python("print(open('/tmp/text.txt', encoding='utf-8').read())")
    _expect(read_back.output == "héllo\n", f"text is not written as UTF-8: {read_back!r}")
    await _raises(FileNotFoundError, sandbox.read_file("missing.txt"))


async def files_refuse_devices_and_fifos(sandbox: Sandbox) -> None:
    await sandbox.exec("mkfifo pipe")
    for path in ("pipe", "/dev/zero"):  # would block the agent, or never end
        await _raises(OSError, sandbox.read_file(path), match="not a regular file")
    await _raises(OSError, sandbox.write_file("pipe", b"x"))
    _expect((await sandbox.exec("echo fine")).stdout == "fine\n", "the sandbox broke after refusing a FIFO")


async def exec_timeout_kills_and_sandbox_still_works(sandbox: Sandbox) -> None:
    started = time.monotonic()
    result = await sandbox.exec("echo begun; sleep 60", timeout=1)
    _expect(time.monotonic() - started < 5, "a 1 s timeout did not stop a 60 s command")
    _expect(result.timed_out and result.exit_code == 124 and result.stdout == "begun\n", f"timeout gave {result!r}")
    _expect((await sandbox.exec("echo alive")).stdout == "alive\n", "the sandbox broke after a timeout")


async def python_timeout_restarts_session(sandbox: Sandbox) -> None:
    await sandbox.run_python("lost = 1")
    started = time.monotonic()
    result = await sandbox.run_python("print('spinning')\nwhile True:\n    pass", timeout=1)
    _expect(time.monotonic() - started < 5, "a 1 s timeout did not stop an endless loop")
    _expect(result.timed_out and result.restarted and result.output == "spinning\n", f"timeout gave {result!r}")
    after = await sandbox.run_python("print('lost' in globals())")
    _expect(after.output == "False\n" and not after.restarted, f"the session was not restarted cleanly: {after!r}")


async def python_survives_code_that_breaks_its_process(sandbox: Sandbox) -> None:
    for code in ("import os\nos._exit(3)", "import os\nos.close(1)\nos.close(2)"):
        result = await sandbox.run_python(code)
        _expect(result.restarted and bool(result.error), f"{code!r} was not reported as a crash: {result!r}")
        _expect((await sandbox.run_python("print('back')")).output == "back\n", f"no session after {code!r}")


async def background_jobs(sandbox: Sandbox) -> None:
    detached = await sandbox.exec("nohup sleep 30 >/dev/null 2>&1 & echo $! > pid")
    _expect(detached.exit_code == 0, f"starting a background job failed: {detached!r}")
    running = await sandbox.exec("kill -0 $(cat pid) && echo running")
    _expect(running.stdout == "running\n", "a detached job did not outlive its command")
    started = time.monotonic()
    holding = await sandbox.exec("sleep 30 & echo left")  # holds the output pipe: killed when the shell ends
    _expect(holding.stdout == "left\n" and time.monotonic() - started < 3, "a job holding stdout blocked exec")


async def fork_copies_files_and_forks_are_independent(sandbox: Sandbox) -> None:
    await sandbox.write_file("repo/a.py", "x = 1\n")
    made = await sandbox.exec(
        "mkdir -p repo/pkg && echo old > repo/pkg/m.py && ln -s a.py repo/link && chmod 640 repo/a.py"
        " && echo tmp > ${TMPDIR:-/tmp}/scratch && rm repo/pkg/m.py && echo new > repo/pkg/n.py"
    )
    _expect(made.exit_code == 0, f"setting up files failed: {made!r}")
    await sandbox.run_python("session_state = 1")
    forks = await sandbox.fork(2)
    try:
        ids = {sandbox.id, *(f.id for f in forks)}
        _expect(len(forks) == 2 and len(ids) == 3, "fork(2) did not give 2 new sandboxes")
        for box in forks:
            _expect(isinstance(box, Sandbox), f"a fork ({type(box).__name__}) does not meet the Sandbox protocol")
            seen = await box.exec(
                "cat repo/a.py repo/pkg/n.py ${TMPDIR:-/tmp}/scratch; readlink repo/link; stat -c %a repo/a.py;"
                " test -e repo/pkg/m.py && echo deleted file came back"
            )
            _expect(seen.stdout == "x = 1\nnew\ntmp\na.py\n640\n", f"a fork lacks earlier edits: {seen!r}")
            fresh = await box.run_python("print('session_state' in globals())")
            _expect(fresh.output == "False\n", f"a fork's Python session is not fresh: {fresh!r}")
        await sandbox.write_file("repo/a.py", "x = 'parent'\n")
        await forks[0].write_file("repo/a.py", "x = 'fork 0'\n")
        await forks[0].exec("echo mine > repo/only0 && rm repo/pkg/n.py")
        await forks[1].exec("echo mine > ${TMPDIR:-/tmp}/only1")
        views = [await box.exec("cat repo/a.py; ls repo repo/pkg ${TMPDIR:-/tmp} | grep -c only; ls repo/pkg")
                 for box in (sandbox, *forks)]
        expected = ["x = 'parent'\n0\nn.py\n", "x = 'fork 0'\n1\n", "x = 1\n1\nn.py\n"]
        got = [v.stdout for v in views]
        _expect(got == expected, f"edits after the fork leak between sandboxes (parent, fork 0, fork 1): {got!r}")
    finally:
        for box in forks:
            await box.close()
    _expect(await sandbox.is_alive(), "the sandbox died when it was forked")
    await _raises(ValueError, sandbox.fork(0))


async def close_is_idempotent(sandbox: Sandbox) -> None:
    await sandbox.close()
    await sandbox.close()
    _expect(not await sandbox.is_alive(), "a closed sandbox is alive")
    await _raises(SandboxError, sandbox.exec("true"))
    await _raises(SandboxError, sandbox.fork(1))


SANDBOX_CHECKS: dict[str, Check] = {check.__name__: check for check in (
    meets_the_protocol,
    exec_output_and_exit_codes,
    exec_working_directory,
    python_session_keeps_state,
    python_exception_gives_traceback_and_session_lives,
    files_round_trip_binary,
    files_refuse_devices_and_fifos,
    exec_timeout_kills_and_sandbox_still_works,
    python_timeout_restarts_session,
    python_survives_code_that_breaks_its_process,
    background_jobs,
    fork_copies_files_and_forks_are_independent,
    close_is_idempotent,
)}
"""Every check of the contract, by name, in the order :func:`check_sandbox` runs them."""


async def check_sandbox(
    backend: str | SandboxFactory,
    *,
    image: str = "python",
    limits: Limits = SMALL,
    checks: Iterable[str] | None = None,
) -> list[str]:
    """Run the sandbox contract's checks, each on a fresh sandbox that is closed afterwards.

    Args:
        backend: ``"docker"`` or ``"local"``, or an async factory returning a fresh sandbox of your
            own backend.
        image: The image for a named backend.
        limits: The limits for a named backend (:data:`SMALL` by default).
        checks: Names from :data:`SANDBOX_CHECKS` to run; all of them by default.

    Returns:
        The names of the checks that ran, all of which passed.

    Raises:
        SandboxCheckError: the first check that failed, with the backend, the check's name and why.
        KeyError: an unknown check name.
    """
    names = list(SANDBOX_CHECKS) if checks is None else list(checks)
    unknown = [n for n in names if n not in SANDBOX_CHECKS]
    if unknown:
        raise KeyError(f"unknown sandbox checks {unknown}; known: {', '.join(SANDBOX_CHECKS)}")
    if isinstance(backend, str):
        from agentgym.sandboxes.backends import resolve_backend, start

        resolved = await resolve_backend(backend)

        async def fresh() -> Sandbox:
            return await start(resolved, image, limits)

        factory: SandboxFactory = fresh
        label = resolved
    else:
        factory, label = backend, getattr(backend, "__name__", "custom")
    for name in names:
        sandbox = await factory()
        try:
            await SANDBOX_CHECKS[name](sandbox)
        except AssertionError as e:
            raise SandboxCheckError(f"{label} sandbox fails {name}: {e}") from e
        finally:
            await sandbox.close()
    return names
