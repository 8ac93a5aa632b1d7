"""The tiny repositories' images and their base commits, built once per session."""

from __future__ import annotations

import asyncio

import pytest

from tests.conftest import docker_or_skip

from . import repo


def head_of(layout: str) -> str:
    """The base commit of the tiny repository of ``layout``, read from its image (built on first use)."""
    docker_or_skip()
    from agentgym.envs.swe.images import image_for
    from agentgym.envs.swe.kept import GIT, start_fresh
    from agentgym.envs.swe.tasks import SWETask

    image = image_for(SWETask.model_validate(repo.task_row("0" * 40, layout=layout)))

    async def head() -> str:
        sandbox = await start_fresh(image)
        try:
            return (await sandbox.exec(f"{GIT} rev-parse HEAD", cwd="/testbed")).stdout.strip()
        finally:
            await sandbox.destroy()

    return asyncio.run(head())


@pytest.fixture(scope="session")
def base_commit() -> str:
    """The base commit of the flat tiny repository."""
    return head_of("flat")


@pytest.fixture(scope="session")
def src_base_commit() -> str:
    """The base commit of the ``src/`` tiny repository."""
    return head_of("src")
