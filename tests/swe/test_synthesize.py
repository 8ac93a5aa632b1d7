"""Synthesis on three real packages: each task's gold patch fixes its FAIL_TO_PASS tests and its base fails them.

Every check runs in a fresh sandbox of the package's image, never one the synthesizer used: the base
is rebuilt from the row alone (:func:`checkout_base`: the sdist's commit plus the row's bug, which must
hash to ``base_commit``). The sdists come from PyPI on the first run and are cached, like the images
(built once per machine, by content hash).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentgym.envs.swe import synthesize as syn
from agentgym.envs.swe.sdist_image import build_sdist_image
from agentgym.envs.swe.testrun import ERROR, FAILED, PASSED, run_tests
from agentgym.sandboxes.backends import start
from tests.conftest import docker_or_skip

pytestmark = [pytest.mark.docker, pytest.mark.timeout(3600)]  # three packages built and synthesized

# Pinned releases, so the tasks (and this test) do not move when a package does.
PACKAGES = {"toolz": ("1.2.0", 2), "cachetools": ("8.0.1", 2), "more-itertools": ("11.2.1", 1)}
SEED = 0


@pytest.fixture(scope="module")
def docker() -> None:
    docker_or_skip()


@pytest.fixture(scope="module")
def rows(docker: None, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    """Tasks per package, written by the CLI (as a user would make them) and read back."""
    out: dict[str, list[dict[str, Any]]] = {}
    for package, (version, count) in PACKAGES.items():
        path = tmp_path_factory.mktemp("tasks") / f"{package}.jsonl"
        done = subprocess.run(
            [sys.executable, "-m", "agentgym.cli", "swe", "synthesize", "--package", package, "--version", version,
             "--count", str(count), "--seed", str(SEED), "--jobs", "2", "--out", str(path)],
            capture_output=True, text=True, timeout=1500, check=False,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        out[package] = [json.loads(line) for line in path.read_text().splitlines()]
        assert len(out[package]) == count
    return out


def all_rows(rows: dict[str, list[dict[str, Any]]]) -> Iterator[dict[str, Any]]:
    for package in PACKAGES:
        yield from rows[package]


def test_rows_have_swebench_fields_and_name_their_sdist(rows: dict[str, list[dict[str, Any]]]) -> None:
    for package, (version, _) in PACKAGES.items():
        for row in rows[package]:
            assert row["version"] == version and row["repo"] == f"pypi/{package}"
            assert row["instance_id"].startswith(f"{package}__{package}-{version}.")
            assert row["FAIL_TO_PASS"] and row["PASS_TO_PASS"]
            assert not set(row["FAIL_TO_PASS"]) & set(row["PASS_TO_PASS"])
            assert all("::" in t for t in row["FAIL_TO_PASS"] + row["PASS_TO_PASS"])
            assert row["patch"].startswith("diff --git a/") and row["test_patch"] == ""
            assert row["FAIL_TO_PASS"][0] in row["problem_statement"]
            archive = row["source_archive"]
            assert (archive["package"], archive["version"], len(archive["sha256"])) == (package, version, 64)
            assert row["mutation"]["operator"] in syn.mutate.OPERATORS
    assert len({r["instance_id"] for r in all_rows(rows)}) == sum(c for _, c in PACKAGES.values())


async def test_gold_patch_fixes_and_base_fails_in_fresh_sandboxes(rows: dict[str, list[dict[str, Any]]]) -> None:
    for row in all_rows(rows):
        archive = row["source_archive"]
        tag = build_sdist_image(archive["package"], archive["version"], sha256=archive["sha256"])  # cached
        async with await start("docker", tag, syn.LIMITS) as box:
            repo = await syn.checkout_base(box, row)
            base = await run_tests(box, row["test_cmd"], tests=row["FAIL_TO_PASS"], cwd=repo, timeout=300)
            assert all(base.statuses.get(t) in (FAILED, ERROR) for t in row["FAIL_TO_PASS"]), base.log[-2000:]
            await box.write_file("/tmp/gold.patch", row["patch"])
            applied = await box.exec("git apply /tmp/gold.patch", cwd=repo)
            assert applied.exit_code == 0, applied.output
            fixed = await run_tests(box, row["test_cmd"], cwd=repo, timeout=600)
        for test in row["FAIL_TO_PASS"] + row["PASS_TO_PASS"]:
            assert fixed.statuses.get(test) == PASSED, (row["instance_id"], test, fixed.log[-2000:])


async def test_a_row_from_another_release_does_not_check_out(rows: dict[str, list[dict[str, Any]]]) -> None:
    row = dict(rows["toolz"][0])
    row["base_commit"] = "0" * 40
    archive = row["source_archive"]
    async with await start("docker", build_sdist_image("toolz", archive["version"]), syn.LIMITS) as box:
        with pytest.raises(syn.SandboxError, match="the task says 0000"):
            await syn.checkout_base(box, row)


async def test_same_seed_same_tasks(rows: dict[str, list[dict[str, Any]]], tmp_path: Path) -> None:
    version, count = PACKAGES["toolz"]
    again = await syn.synthesize("toolz", version=version, count=count, seed=SEED)
    syn.write_tasks(again, tmp_path / "again.jsonl")
    assert again == rows["toolz"]
    # The bytes too: the JSONL is written with sorted keys.
    expected = "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows["toolz"])
    assert (tmp_path / "again.jsonl").read_text() == expected
