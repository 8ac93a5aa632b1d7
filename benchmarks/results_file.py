"""Where benchmark scripts keep their figures: one JSON file each under ``benchmarks/results/``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).parent / "results"


def results_path(name: str) -> Path:
    """The default results file of the benchmark ``name``."""
    return RESULTS_DIR / f"{name}.json"


def save_results(data: Any, path: Path) -> Path:
    """Write ``data`` as indented JSON to ``path`` (creating its folder) and say where."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")
    print(f"wrote {path}")
    return path
