"""Shared fixtures: which sandbox backends this machine can run.

Docker tests skip with a reason on a machine with no engine, except under CI (``CI`` set), where
``.ci/run`` installs and starts one: there a missing engine is a failure, not a skip.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


def docker_or_skip() -> None:
    from agentgym.sandboxes.engine import available

    if available():
        return
    if os.environ.get("CI"):
        pytest.fail("CI is set but no Docker engine answers: .ci/run should have started dockerd")
    pytest.skip("no Docker engine answers on this machine")


@pytest.fixture(params=["docker", "local"])
def backend(request: pytest.FixtureRequest) -> str:
    """Each sandbox backend in turn."""
    if request.param == "docker":
        docker_or_skip()
    return request.param


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[str]:
    """The address of a two-node Ray cluster on this machine, started once per session."""
    try:
        import ray  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("CI is set but Ray is missing: the dev extra installs agentgym[ray]")
        pytest.skip("the Ray executor's tests need agentgym[ray]")
    from agentgym.testing.ray_cluster import LocalRayCluster

    with LocalRayCluster(nodes=2, cpus_per_node=1) as cluster:
        yield cluster.address
