"""A full disk under a real ``agentgym eval``: one line naming the file and the errno, exit 1, every row
written before it intact, and ``--resume`` finishing the run once space is freed.

The run's folder is a small tmpfs (mounted here, as root), most of it taken by a filler file.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentgym.types import read_jsonl

from ..evaluation.processes import run_eval

SAMPLES = 40  # x 3 toy tasks, ~1.4 KB a row: about 170 KB of rows, far more than the space left


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs at ``tmp_path/disk``, unmounted at the end."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "agentgym-test-full", str(disk)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but a tmpfs cannot be mounted: {mounted.stderr.strip()}")
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.strip()}")
    try:
        yield disk
    finally:
        with contextlib.suppress(OSError):
            subprocess.run(["umount", "-l", str(disk)], check=True)


def test_a_full_disk_is_one_line_and_resume_finishes_after_space_is_freed(small_disk):
    out = small_disk / "run.jsonl"
    filler = small_disk / "filler"
    filler.write_bytes(b"\0" * (200 * 1024))  # leaves ~56 KiB: the record, the lock and a few dozen rows
    args = ["toy", "--model", "reference", "--samples", str(SAMPLES), "--concurrency", "4", "--out", str(out)]

    full = run_eval(small_disk, *args)
    assert full.returncode == 1, full.stderr
    lines = full.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in full.stderr, full.stderr
    assert lines[0].startswith(f"agentgym: error: cannot write {out}: [Errno 28] ENOSPC, No space left on device; "), \
        lines[0]
    written = out.read_bytes()
    assert written.endswith(b"\n")  # no torn row: the failed one was cut back
    rows = read_jsonl(out)
    assert 5 < len(rows) < 3 * SAMPLES and all(t.outcome == "terminated" for t in rows)
    assert f"the {len(rows)} row(s) before it are intact" in lines[0]

    filler.unlink()
    resumed = run_eval(small_disk, *args, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert out.read_bytes().startswith(written)  # the rows before the failure, byte for byte
    keys = [(t.task_id, t.seed) for t in read_jsonl(out)]
    assert sorted(keys) == sorted((c, s) for c in ("blue", "green", "red") for s in range(SAMPLES))
    summary = json.loads(out.with_suffix(".summary.json").read_text())
    assert summary["episodes"] == 3 * SAMPLES
