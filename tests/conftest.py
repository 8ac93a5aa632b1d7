"""Shared fixtures: which sandbox backends this machine can run.

Docker tests skip with a reason on a machine with no engine, except under CI (``CI`` set), where
``.ci/run`` installs and starts one: there a missing engine is a failure, not a skip.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

SLOW: dict[str, str] = {
    "tests/swe/": "SWE: images built from sdists, bugs synthesized, patches graded by running suites",
    "tests/trl/": "TRL: GRPO trainers built and stepped",
    "tests/gui/": "a real browser per GUI env",
    "tests/sandboxes/test_browser.py": "a real browser per sandbox",
    "tests/sandboxes/test_browser_direct.py": "a real browser per sandbox",
    "tests/faults/": "engines restarted, drivers and Ray workers killed, endpoints failing",
    "tests/scaleout/": "Ray clusters",
    "tests/benchmarks/": "the benchmark scripts' smoke tests",
    "tests/sandboxes/test_mirrors.py::test_an_image_builds": "an image built with debootstrap",
    "tests/view/test_export.py::test_sft_view_trains": "TRL: an SFT trainer stepped",
}
"""The ``slow`` families, by test id prefix (path, or path::name): the one place that says which.
``pytest -m "not slow"`` runs the rest while working; CI runs everything."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.startswith(tuple(SLOW)):
            item.add_marker(pytest.mark.slow)


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
