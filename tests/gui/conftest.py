"""The browser the GUI tests run on: the Docker browser sandbox (``AGENTGYM_TEST_GUI_BACKEND=local`` for
the host's Chromium while developing), and the runtime its warm pool is in closed when the tests end."""

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
async def _close_the_default_runtime():
    """Envs used on their own draw from the event loop's default runtime: its browsers and driver go at the end."""
    yield
    from agentgym.sandboxes import runtime

    await runtime.shutdown()
