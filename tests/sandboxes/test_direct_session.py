"""Python calls on a direct session (agentgym.sandboxes.direct_session): the host talks to the session itself, the
supervisor only starts and restarts sessions; what the session's code does to its own pipes is bounded."""

from __future__ import annotations

import asyncio

import pytest

from agentgym.errors import SandboxError
from agentgym.sandboxes.pool import SandboxPool
from agentgym.sandboxes.supervised import SupervisedSandbox
from agentgym.sandboxes.supervisor.wire import QUIET_WAIT, cut_traceback, parse_reply, plain_reply, reply_limit
from tests.sandboxes.conftest import SMALL

# The session's own reply pipe: the one write-only FIFO among its descriptors besides stdout and stderr.
FIND_REPLY_PIPE = """
import fcntl, os, stat
def reply_pipe():
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            writes_only = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY
            if fd > 2 and stat.S_ISFIFO(os.fstat(fd).st_mode) and writes_only:
                return fd
        except OSError:
            pass
"""


def supervisor_requests(sandbox: SupervisedSandbox) -> int:
    """How many requests the host has sent the supervisor so far."""
    return sandbox.client._next_id


async def test_python_calls_do_not_go_through_the_supervisor(sandbox: SupervisedSandbox) -> None:
    assert sandbox.session_socket is not None
    await sandbox.run_python("x = 1")
    before = supervisor_requests(sandbox)
    for i in range(50):
        result = await sandbox.run_python(f"x += 1\nprint(x, {i})")
        assert result.output == f"{i + 2} {i}\n" and not result.restarted
    assert supervisor_requests(sandbox) == before


@pytest.mark.parametrize("forged", [b"xxxxxxxxxx{}", b"9999999999", b"0000000002{}0000000002{}", plain_reply(2),
                                    plain_reply(2) * 2, plain_reply(1)])
@pytest.mark.parametrize("path", ["direct", "through the supervisor"])
async def test_a_session_that_writes_its_own_replies_is_restarted(sandbox: SupervisedSandbox, forged: bytes,
                                                                  path: str) -> None:
    if path == "through the supervisor":
        sandbox._drop_session()
        sandbox.session_socket = None
    await sandbox.run_python(FIND_REPLY_PIPE + "kept = 'from before'")  # call 1: the forged replies are call 2's
    result = await sandbox.run_python(f"import time\nos.write(reply_pipe(), {forged!r})\ntime.sleep(0.3)")
    if not result.restarted:  # a well-formed forged reply ends the call early; the real one then has an old number
        result = await sandbox.run_python("print('after')")
    assert result.restarted
    assert "was not its own" in (result.error or "")
    again = await sandbox.run_python("print(globals().get('kept'))")
    assert again.output == "None\n" and not again.restarted  # a new session, working


async def test_code_longer_than_a_pipe_runs(sandbox: SupervisedSandbox) -> None:
    blob = "z" * 1_000_000
    result = await sandbox.run_python(f"s = {blob!r}\nprint(len(s))")
    assert result.output == "1000000\n" and result.error is None


async def test_output_that_never_stops_is_capped_and_timed_out(sandbox: SupervisedSandbox) -> None:
    result = await sandbox.run_python("while True:\n    print('x' * 1000)", timeout=1.0)
    assert result.timed_out and result.restarted and result.truncated
    assert len(result.output) == SMALL.output_bytes
    assert (await sandbox.run_python("print(2)")).output == "2\n"


async def test_a_short_timeout_after_a_slow_call_is_kept(sandbox: SupervisedSandbox) -> None:
    """The watchdog left set for a slow call with a long timeout must not stretch the next call's."""
    slow = await sandbox.run_python(f"import time\ntime.sleep({20 * QUIET_WAIT})\nprint('slow')", timeout=60)
    assert slow.output == "slow\n" and not slow.timed_out
    started = asyncio.get_running_loop().time()
    stuck = await sandbox.run_python("while True:\n    pass", timeout=0.5)
    assert stuck.timed_out and stuck.restarted
    assert asyncio.get_running_loop().time() - started < 10  # not the 60 s the slow call was allowed


async def test_a_huge_exception_comes_back_cut(sandbox: SupervisedSandbox) -> None:
    result = await sandbox.run_python("raise ValueError('v' * 5_000_000)")
    assert not result.restarted and result.error is not None
    assert result.error.endswith(f"[the traceback is cut at {SMALL.output_bytes} characters]\n")
    assert (await sandbox.run_python("print(3)")).output == "3\n"


async def test_the_session_holds_no_socket(sandbox: SupervisedSandbox) -> None:
    result = await sandbox.run_python(
        "import os\nprint(sorted(os.readlink(f'/proc/self/fd/{n}').split(':')[0] for n in os.listdir('/proc/self/fd')"
        " if os.path.exists(f'/proc/self/fd/{n}')))"
    )
    assert "socket" not in result.output and "pipe" in result.output


async def test_a_wipe_hands_over_the_new_session_and_the_old_handle_reaches_none(backend: str) -> None:
    pool = SandboxPool(backend, "python", SMALL, size=1, max_size=1)
    try:
        first = await pool.acquire()
        await first.run_python("secret = 42")
        await first.close()
        second = await pool.acquire()
        assert second is not first and second.id == first.id  # the same container, recycled
        before = supervisor_requests(second)
        result = await second.run_python("print(globals().get('secret'))")
        assert result.output == "None\n"
        assert supervisor_requests(second) == before  # the session came with the wipe's reply
        with pytest.raises(SandboxError, match="closed"):
            await first.run_python("print(secret)")
        await second.close()
    finally:
        await pool.shutdown()


async def test_a_call_cancelled_by_its_caller_leaves_nothing_for_the_next(sandbox: SupervisedSandbox) -> None:
    await sandbox.run_python("kept = 1")
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(sandbox.run_python("import time\ntime.sleep(1)\nprint('late')"), 0.3)
    await asyncio.sleep(1.2)  # the cut-off code would have answered by now
    result = await sandbox.run_python("print(globals().get('kept'))")
    assert result.output == "None\n" and result.restarted and result.error is None
    assert (await sandbox.run_python("print(4)")).output == "4\n"


async def test_the_session_pipes_are_not_inherited_by_what_this_process_starts(sandbox: SupervisedSandbox) -> None:
    import os

    await sandbox.run_python("print(1)")
    session = sandbox._session
    assert session is not None
    for fd in (session.code_in, session.replies, session.stdout, session.stderr):
        assert not os.get_inheritable(fd)


@pytest.mark.parametrize("path", ["direct", "through the supervisor"])
async def test_code_with_a_lone_surrogate_is_the_codes_own_error(sandbox: SupervisedSandbox, path: str) -> None:
    # JSON lets a model send "\ud800"; no Python can run it, and the session lives on either way
    if path == "through the supervisor":
        sandbox._drop_session()
        sandbox.session_socket = None
    await sandbox.run_python("kept = 5")
    result = await sandbox.run_python("x = '\ud800'\nprint(1)")
    assert result.error is not None and "UnicodeDecodeError" in result.error and not result.restarted
    assert (await sandbox.run_python("print(kept)")).output == "5\n"


FRAME = """
def frame(body):
    return b"%010d" % len(body) + body
"""


@pytest.mark.parametrize("path", ["direct", "through the supervisor"])
async def test_a_deeply_nested_reply_is_garbled_at_once(sandbox: SupervisedSandbox, path: str) -> None:
    """A well-formed JSON frame that nests past any parser's recursion ends the call as garbled at once
    (it used to raise RecursionError in the host's reader and hang the call until its timeout)."""
    if path == "through the supervisor":
        sandbox._drop_session()
        sandbox.session_socket = None
    await sandbox.run_python(FIND_REPLY_PIPE + FRAME)
    started = asyncio.get_running_loop().time()
    result = await sandbox.run_python("import time\nos.write(reply_pipe(), frame(b'[' * 100000 + b']' * 100000))\n"
                                      "time.sleep(30)", timeout=60)
    assert result.restarted and "was not its own" in (result.error or "")
    assert asyncio.get_running_loop().time() - started < 10


async def test_every_field_of_a_forged_reply_is_bounded(sandbox: SupervisedSandbox) -> None:
    """A forged reply of this call's number: one whose error is past the bound as JSON (12 times the cap,
    which the host used to take whole, or a little over the cap) is refused; within it, it is at most
    about the cap long."""
    cap = SMALL.output_bytes
    for error, refused in (("\U0001f600" * cap, True), ("v" * (cap + 5000), True), ("v" * (cap + 2000), False)):
        await sandbox.run_python(FIND_REPLY_PIPE + FRAME + "import json, time")
        assert sandbox._session is not None
        call = sandbox._session._calls + 1
        body = f"json.dumps({{'call': {call}, 'error': {error[:1]!r} * {len(error)}, 'broken': False}})"
        result = await sandbox.run_python(f"os.write(reply_pipe(), frame({body}.encode()))\ntime.sleep(5)")
        if refused:
            assert result.restarted and "was not its own" in (result.error or "")
        else:
            assert result.error == error and len(error) <= cap + 4096


def test_a_reply_costs_one_linear_scan_at_most_the_bound() -> None:
    """The host's parse of a reply: only the shape a session writes, and its cost grows with the bound,
    not with what the frame nests (a million brackets are refused without being parsed)."""
    assert parse_reply(plain_reply(7)[10:]) == {"call": 7, "error": None, "broken": False}
    assert parse_reply(b'{"call": 3, "error": "Traceback\\n", "broken": true}') == {
        "call": 3, "error": "Traceback\n", "broken": True}
    for forged in (b'{"call": 3, "error": [' + b"[" * 10**6 + b"]" * 10**6 + b'], "broken": false}',
                   b'{"call": 3, "error": "a", "x": [' + b"[]," * 10**5 + b'[]], "error": "b", "broken": false}',
                   b'{"call": 3, "error": null, "broken": false, "more": 1}',
                   b'{"call": -3, "error": null, "broken": false}',
                   b'{"call": 3, "error": "\xff", "broken": false}', b"[]"):
        assert parse_reply(forged) is None, forged[:60]
    assert reply_limit(SMALL.output_bytes) <= SMALL.output_bytes + 4096
    assert len(cut_traceback("\U0001f600" * SMALL.output_bytes, SMALL.output_bytes)) < SMALL.output_bytes
