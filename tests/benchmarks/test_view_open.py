"""`benchmarks/view_open.py --quick` runs and writes what docs/benchmarks.md reads (no timing is checked)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks.scripts import run_script

pytestmark = pytest.mark.slow


def test_view_open_quick(tmp_path: Path) -> None:
    if not Path("/usr/bin/chromium").exists():
        pytest.skip("no /usr/bin/chromium (apt-get install chromium)")
    result = run_script("view_open", tmp_path / "view_open.json", "--quick", timeout=900)
    assert result["few_tasks"]["episodes"] == result["many_tasks"]["episodes"] == 1002
    for shape in ("few_tasks", "many_tasks"):
        opened = result[shape]["open_s"]
        assert 0 < opened["min"] <= opened["median"] <= opened["max"]
    # pass@k at k = 1, 2, 5, ..., 200, 334 for 3 x 334, and one success bar: not 334 points
    assert result["few_tasks"]["plotted_points"] == len([1, 2, 5, 10, 20, 50, 100, 200, 334]) + 1
    assert result["machine"]["commit"]
