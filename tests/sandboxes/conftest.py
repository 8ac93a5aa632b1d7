"""Fixtures for the sandbox suite: small limits, and one fresh sandbox per test on each backend.

Sandboxes here are started directly (no pool) so that every test owns exactly what it checks.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agentgym.sandboxes.backends import start
from agentgym.sandboxes.supervised import SupervisedSandbox
from agentgym.testing.sandbox_checks import SMALL
from tests.conftest import docker_or_skip


@pytest.fixture(params=[pytest.param("docker", marks=pytest.mark.docker), "local"])
def backend(request: pytest.FixtureRequest) -> str:
    """Each sandbox backend in turn; Docker skips (or fails under CI) with no engine."""
    if request.param == "docker":
        docker_or_skip()
    return request.param


@pytest.fixture
async def sandbox(backend: str) -> AsyncIterator[SupervisedSandbox]:
    """A fresh sandbox with :data:`SMALL` limits, destroyed after the test."""
    box = await start(backend, "python", SMALL)
    try:
        yield box
    finally:
        await box.close()
