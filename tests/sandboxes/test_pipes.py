"""The host's one non-blocking pipe writer (used by the lent Python session and the browser's direct pipe)."""

from __future__ import annotations

import asyncio
import os

from agentgym.sandboxes.pipes import PipeWriter
from agentgym.sandboxes.supervisor.wire import read_available


def pipe() -> tuple[int, int]:
    read_end, write_end = os.pipe()
    for fd in (read_end, write_end):
        os.set_blocking(fd, False)
    return read_end, write_end


async def read_all(fd: int, size: int) -> bytes:
    """Read ``size`` bytes as they come, a little at a time (a slow reader)."""
    got = bytearray()
    while len(got) < size:
        chunk = read_available(fd, 4096)
        if chunk:
            got += chunk
        else:
            assert chunk is None, "the pipe closed early"
            await asyncio.sleep(0)
    return bytes(got)


async def test_what_the_pipe_cannot_take_is_queued_and_arrives_whole_and_in_order() -> None:
    read_end, write_end = pipe()
    writer = PipeWriter(write_end)
    first, second = os.urandom(300_000), os.urandom(200_000)  # far more than a pipe's 64 KiB
    writer.write(first)
    assert writer.pending > 0  # the rest waits for the reader; this call did not block
    writer.write(second)
    assert await read_all(read_end, len(first) + len(second)) == first + second
    assert writer.pending == 0
    writer.close()
    assert read_available(read_end) == b""  # closing the writer closed its end
    os.close(read_end)


async def test_a_reader_that_is_gone_calls_on_broken_once_and_later_writes_do_nothing() -> None:
    read_end, write_end = pipe()
    broken: list[int] = []
    writer = PipeWriter(write_end, on_broken=lambda: broken.append(1))
    os.close(read_end)
    writer.write(b"x")
    assert broken == [1] and writer.pending == 0
    writer.close()
    writer.write(b"y")  # closed: ignored, no error
    assert broken == [1]


async def test_flush_blocking_sends_the_queue_before_the_relay_stops() -> None:
    read_end, write_end = pipe()
    writer = PipeWriter(write_end)
    data = os.urandom(100_000)
    writer.write(data)
    assert writer.pending
    reader = asyncio.create_task(asyncio.to_thread(blocking_read, read_end, len(data)))
    await asyncio.sleep(0)
    writer.flush_blocking()
    assert await reader == data and writer.pending == 0
    writer.close()
    os.close(read_end)


def blocking_read(fd: int, size: int) -> bytes:
    os.set_blocking(fd, True)
    got = bytearray()
    while len(got) < size:
        got += os.read(fd, size - len(got))
    return bytes(got)
