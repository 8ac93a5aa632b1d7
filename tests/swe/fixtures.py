"""The tiny repositories' images and their base commits, built once per session."""

from __future__ import annotations

import pytest

from tests.conftest import docker_or_skip

from . import repo


def head_of(layout: str) -> str:
    """The base commit of the tiny repository of ``layout``, read from its built image (built on first
    use; the ready layer over it needs the commit, so it is read from the image below that layer)."""
    docker_or_skip()
    from agentgym.envs.swe.images import base_image
    from agentgym.envs.swe.tasks import SWETask
    from agentgym.sandboxes import engine

    image = base_image(SWETask.model_validate(repo.task_row("0" * 40, layout=layout)))
    out = engine.client().containers.run(image, ["git", "-C", "/testbed", "rev-parse", "HEAD"], remove=True,
                                         network_disabled=True, entrypoint=[])
    return out.decode().strip()


@pytest.fixture(scope="session")
def base_commit() -> str:
    """The base commit of the flat tiny repository."""
    return head_of("flat")


@pytest.fixture(scope="session")
def src_base_commit() -> str:
    """The base commit of the ``src/`` tiny repository."""
    return head_of("src")
