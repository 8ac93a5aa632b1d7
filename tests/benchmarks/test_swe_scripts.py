"""The SWE benchmark runs in its tiny configuration (``--quick``) and writes what docs/swe.md quotes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import docker_or_skip

BENCHMARKS = Path(__file__).parents[2] / "benchmarks"


@pytest.mark.docker
def test_swe_env_quick(tmp_path: Path) -> None:
    docker_or_skip()
    out = tmp_path / "swe_env.json"
    subprocess.run([sys.executable, str(BENCHMARKS / "swe_env.py"), "--quick", "--out", str(out)],
                   check=True, timeout=900, capture_output=True)
    result = json.loads(out.read_text())
    assert result["info"]["commit"] and len(result["runs"]) == 1
    for key in ("reset_warm_ms", "reset_fresh_ms", "give_back_ms", "verify_s", "fresh_over_warm"):
        value = result["summary"][key]
        assert 0 < value["min"] <= value["median"] <= value["max"], key
