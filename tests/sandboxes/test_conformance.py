"""The sandbox contract, checked on every backend: what an env author may rely on."""

from __future__ import annotations

import time

import pytest

from agentgym.errors import SandboxError
from agentgym.sandboxes import ExecResult, PythonResult, Sandbox
from agentgym.sandboxes.sandbox import AgentSandbox


async def test_meets_the_protocol(sandbox: AgentSandbox) -> None:
    assert isinstance(sandbox, Sandbox)
    assert sandbox.id
    assert await sandbox.is_alive()


async def test_exec_output_and_exit_codes(sandbox: AgentSandbox) -> None:
    result = await sandbox.exec("echo out; echo err >&2; exit 3")
    assert result == ExecResult(exit_code=3, stdout="out\n", stderr="err\n")
    assert (await sandbox.exec("true")).exit_code == 0
    assert (await sandbox.exec("no-such-command")).exit_code == 127
    assert (await sandbox.exec("kill -9 $$")).exit_code == 128 + 9


async def test_exec_working_directory(sandbox: AgentSandbox) -> None:
    assert (await sandbox.exec("pwd")).stdout == "/work\n" or sandbox.id.startswith("local-")
    await sandbox.exec("mkdir -p sub && echo hi > sub/f")
    assert (await sandbox.exec("cat f", cwd="sub")).stdout == "hi\n"


async def test_python_session_keeps_state(sandbox: AgentSandbox) -> None:
    assert await sandbox.run_python("x = 20\ndef f(y):\n    return x + y") == PythonResult()
    result = await sandbox.run_python("import sys\nprint(f(22))\nprint('warn', file=sys.stderr)")
    assert result.output == "42\nwarn\n"
    assert result.error is None and not result.restarted


async def test_python_exception_gives_traceback_and_session_lives(sandbox: AgentSandbox) -> None:
    await sandbox.run_python("kept = 1")
    result = await sandbox.run_python("print('before')\ndef g():\n    raise ValueError('boom')\ng()")
    assert result.output == "before\n"
    assert result.error is not None
    assert "ValueError: boom" in result.error and 'File "<python>", line 4' in result.error
    assert "agent" not in result.error  # no frames of the worker itself
    assert not result.restarted
    assert (await sandbox.run_python("print(kept)")).output == "1\n"
    syntax = await sandbox.run_python("def (")
    assert syntax.error is not None and "SyntaxError" in syntax.error


async def test_files_round_trip_binary(sandbox: AgentSandbox) -> None:
    blob = bytes(range(256)) * 1000
    await sandbox.write_file("deep/dir/blob.bin", blob)
    assert await sandbox.read_file("deep/dir/blob.bin") == blob
    assert (await sandbox.exec("wc -c < deep/dir/blob.bin")).stdout.strip() == str(len(blob))
    await sandbox.write_file("/tmp/text.txt", "héllo")
    read_back = await sandbox.run_python("print(open('/tmp/text.txt', encoding='utf-8').read())")
    assert read_back.output == "héllo\n"
    with pytest.raises(FileNotFoundError):
        await sandbox.read_file("missing.txt")


async def test_files_refuse_devices_and_fifos(sandbox: AgentSandbox) -> None:
    await sandbox.exec("mkfifo pipe")
    for path in ("pipe", "/dev/zero"):  # would block the agent, or never end
        with pytest.raises(OSError, match="not a regular file"):
            await sandbox.read_file(path)
    with pytest.raises(OSError):
        await sandbox.write_file("pipe", b"x")
    assert (await sandbox.exec("echo fine")).stdout == "fine\n"


async def test_exec_timeout_kills_and_sandbox_still_works(sandbox: AgentSandbox) -> None:
    started = time.monotonic()
    result = await sandbox.exec("echo begun; sleep 60", timeout=1)
    assert time.monotonic() - started < 5
    assert result.timed_out and result.exit_code == 124 and result.stdout == "begun\n"
    assert (await sandbox.exec("echo alive")).stdout == "alive\n"


async def test_python_timeout_restarts_session(sandbox: AgentSandbox) -> None:
    await sandbox.run_python("lost = 1")
    started = time.monotonic()
    result = await sandbox.run_python("print('spinning')\nwhile True:\n    pass", timeout=1)
    assert time.monotonic() - started < 5
    assert result.timed_out and result.restarted and result.output == "spinning\n"
    after = await sandbox.run_python("print('lost' in globals())")
    assert after.output == "False\n" and not after.restarted


@pytest.mark.parametrize("code", ["import os\nos._exit(3)", "import os\nos.close(1)\nos.close(2)"])
async def test_python_survives_code_that_breaks_its_process(sandbox: AgentSandbox, code: str) -> None:
    result = await sandbox.run_python(code)
    assert result.restarted and result.error
    assert (await sandbox.run_python("print('back')")).output == "back\n"


async def test_background_jobs(sandbox: AgentSandbox) -> None:
    detached = await sandbox.exec("nohup sleep 30 >/dev/null 2>&1 & echo $! > pid")
    assert detached.exit_code == 0
    assert (await sandbox.exec("kill -0 $(cat pid) && echo running")).stdout == "running\n"
    started = time.monotonic()
    holding = await sandbox.exec("sleep 30 & echo left")  # holds the output pipe: killed when the shell ends
    assert holding.stdout == "left\n" and time.monotonic() - started < 3


async def test_close_is_idempotent(sandbox: AgentSandbox) -> None:
    await sandbox.close()
    await sandbox.close()
    assert not await sandbox.is_alive()
    with pytest.raises(SandboxError):
        await sandbox.exec("true")
