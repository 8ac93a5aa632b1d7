"""The SWE benchmark runs in its tiny configuration (``--quick``) and writes what docs/swe.md quotes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks.scripts import run_script
from tests.conftest import docker_or_skip


@pytest.mark.docker
def test_swe_env_quick(tmp_path: Path) -> None:
    docker_or_skip()
    result = run_script("swe_env", tmp_path / "swe_env.json", "--quick", timeout=900)
    assert result["info"]["commit"] and len(result["runs"]) == 1
    for key in ("reset_warm_ms", "reset_fresh_ms", "give_back_ms", "verify_s", "fresh_over_warm"):
        value = result["summary"][key]
        assert 0 < value["min"] <= value["median"] <= value["max"], key
