"""The host side of the supervisor protocol under pressure: concurrent callers, cancelled calls."""

from __future__ import annotations

import asyncio

from agentgym.sandboxes.supervised import SupervisedSandbox


async def test_concurrent_callers_each_get_their_own_answer(sandbox: SupervisedSandbox) -> None:
    results = await asyncio.gather(
        *(sandbox.run_python(f"print({i} * 2)") for i in range(20)),
        *(sandbox.exec(f"echo {i}") for i in range(20)),
    )
    assert [r.output for r in results[:20]] == [f"{i * 2}\n" for i in range(20)]
    assert [r.stdout for r in results[20:]] == [f"{i}\n" for i in range(20)]  # type: ignore[union-attr]


async def test_a_cancelled_call_does_not_answer_the_next_one(sandbox: SupervisedSandbox) -> None:
    slow = asyncio.ensure_future(sandbox.exec("sleep 1; echo slow"))
    await asyncio.sleep(0.2)
    slow.cancel()
    after = await sandbox.exec("echo next")  # queued behind the slow one inside the supervisor
    assert after.stdout == "next\n"
    assert (await sandbox.run_python("print('and again')")).output == "and again\n"
