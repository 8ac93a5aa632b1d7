"""The sandbox contract, checked on every backend: what an env author may rely on.

The checks live in :mod:`agentgym.testing.sandbox_checks`, exported as ``agentgym.testing.check_sandbox``
so that a new backend can be held to the same contract; here each runs as its own test per backend.
"""

from __future__ import annotations

import pytest

from agentgym.testing import SANDBOX_CHECKS, SandboxCheckError, check_sandbox
from agentgym.testing.sandbox_checks import SMALL
from tests.conftest import docker_or_skip


@pytest.mark.parametrize("check", list(SANDBOX_CHECKS))
async def test_backend_meets_the_contract(backend: str, check: str) -> None:
    assert await check_sandbox(backend, checks=[check]) == [check]


@pytest.mark.parametrize("check", list(SANDBOX_CHECKS))
async def test_the_plain_twins_meet_the_contract(backend: str, check: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each fast path has a plain twin that must behave the same, so the same checks run on it: python
    calls through the supervisor instead of on the lent session's own pipes, and on Docker the attach
    stream instead of the direct socket (both what a remote engine gets, where no descriptor travels)."""
    from agentgym.sandboxes import docker, hosts
    from agentgym.sandboxes.backends import resolve_backend, start

    resolved = await resolve_backend(backend)
    if resolved == "docker":
        monkeypatch.setattr(docker, "_direct", {hosts.default(): False})  # this engine: the attach stream

    async def plain():  # type: ignore[no-untyped-def]
        box = await start(resolved, "python", SMALL)
        if box.session_socket is not None:  # the local backend lends its session on a socketpair: not this time
            box.session_socket.close()
            box.session_socket = None
        assert resolved == "local" or box.client.protocol.multiplexed
        return box

    assert await check_sandbox(plain, checks=[check]) == [check]


@pytest.mark.docker
async def test_the_oldest_python_promised_meets_the_contract() -> None:
    """The supervisor on the ``python-oldest`` image (Debian bullseye's Python 3.9): every check, one run."""
    docker_or_skip()
    assert await check_sandbox("docker", image="python-oldest") == list(SANDBOX_CHECKS)


async def test_a_backend_that_breaks_the_contract_is_named_with_the_check(backend: str) -> None:
    """A sandbox whose exec loses stderr fails exec_output_and_exit_codes, and the error says so."""
    from agentgym.sandboxes.backends import resolve_backend, start

    async def lossy():  # type: ignore[no-untyped-def]
        box = await start(await resolve_backend(backend), "python", SMALL)
        real_exec = box.exec

        async def exec_without_stderr(cmd: str, **kwargs):  # type: ignore[no-untyped-def]
            return (await real_exec(cmd, **kwargs)).model_copy(update={"stderr": ""})

        box.exec = exec_without_stderr  # type: ignore[method-assign]
        return box

    with pytest.raises(SandboxCheckError, match="fails exec_output_and_exit_codes"):
        await check_sandbox(lossy, checks=["exec_output_and_exit_codes"])
    with pytest.raises(KeyError, match="unknown sandbox checks"):
        await check_sandbox(backend, checks=["no_such_check"])


async def test_a_fork_that_copies_nothing_or_shares_breaks_the_contract(backend: str) -> None:
    """Forks that start empty, or that are one sandbox handed out twice, fail the fork check."""
    from agentgym.sandboxes.backends import resolve_backend, start

    resolved = await resolve_backend(backend)

    async def empty_forks():  # type: ignore[no-untyped-def]
        box = await start(resolved, "python", SMALL)

        async def fork(n: int = 1):  # type: ignore[no-untyped-def]
            return [await start(resolved, "python", SMALL) for _ in range(n)]

        box.fork = fork  # type: ignore[method-assign]
        return box

    async def shared_forks():  # type: ignore[no-untyped-def]
        box = await start(resolved, "python", SMALL)
        real_fork = box.fork

        async def fork(n: int = 1):  # type: ignore[no-untyped-def]
            [one] = await real_fork(1)
            return [one] * n

        box.fork = fork  # type: ignore[method-assign]
        return box

    for broken, why in ((empty_forks, "lacks earlier edits"), (shared_forks, "did not give 2 new sandboxes")):
        with pytest.raises(SandboxCheckError, match=f"fails fork_copies_files_and_forks_are_independent: .*{why}"):
            await check_sandbox(broken, checks=["fork_copies_files_and_forks_are_independent"])
