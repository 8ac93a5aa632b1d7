"""The browser the GUI tests run on: the Docker browser sandbox (``AGENTGYM_TEST_GUI_BACKEND=local`` for
the host's Chromium while developing), and its warm pool shut down when the tests end."""

import os

import pytest

from ..conftest import docker_or_skip


@pytest.fixture(scope="session")
def gui_backend() -> str:
    backend = os.environ.get("AGENTGYM_TEST_GUI_BACKEND", "docker")
    if backend == "docker":
        docker_or_skip()
    return backend


@pytest.fixture(scope="session", autouse=True)
async def _shut_browser_pools():
    yield
    from agentgym.sandboxes.browser import shutdown_browser_pools

    await shutdown_browser_pools()
