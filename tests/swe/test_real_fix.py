"""A real repository's bug fix made into a task by ``agentgym swe rows``: cachetools 7.3.2 to 7.3.3 ("fix updating
``TTLCache`` and ``TLRUCache`` items while iterating", and deep-copying their timers).

No repository host is reachable here, so the history is made from the two releases' sdists on the package
index (each the release's source and tests): the base commit is 7.3.2, the fix commit 7.3.3, tagged, as a
user's image of a cloned repository would hold them. The row's test lists come from running the tests; the
model's container of the row shows nothing past the base, and the task grades gold 1 and empty 0.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from agentgym.cli import main
from agentgym.envs.swe.images import base_image, image_for
from agentgym.envs.swe.kept import GIT, start_fresh
from agentgym.envs.swe.sdist_image import BASE_RECIPE, TEST_REQUIREMENTS, fetch_sdist
from agentgym.envs.swe.tasks import SWETask
from agentgym.envs.swe.testrun import DEFAULT_TEST_CMD
from agentgym.envs.swe.verifier import evaluate_patch
from agentgym.envs.swe.wheelhouse import dockerfile_lines, download
from agentgym.sandboxes import engine
from agentgym.sandboxes.builder import build_image
from tests.conftest import docker_or_skip

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(1200)]
BASE, FIX = "7.3.2", "7.3.3"
NOT_IN_A_REPOSITORY = "rm -rf PKG-INFO src/*.egg-info"  # what the sdist's build wrote, not the project's source
COMMIT = "GIT_AUTHOR_DATE=2026-11-18T00:00Z GIT_COMMITTER_DATE=2026-11-18T00:00Z git -c user.name=t -c user.email=t@t"


def releases_as_history(context: Path) -> Path:
    """A Dockerfile in ``context`` whose /testbed holds cachetools at BASE, then FIX committed on top and tagged."""
    for version in (BASE, FIX):
        shutil.copy(fetch_sdist("cachetools", version).path, context / f"cachetools-{version}.tar.gz")
    download(TEST_REQUIREMENTS, context / "wheels")
    unpack = "tar -xzf /tmp/releases/cachetools-{}.tar.gz --strip-components=1 --no-same-owner"
    dockerfile = context / "Dockerfile"
    dockerfile.write_text(
        f"FROM {build_image(BASE_RECIPE)}\n{dockerfile_lines('wheels', TEST_REQUIREMENTS)}"
        f"COPY cachetools-{BASE}.tar.gz cachetools-{FIX}.tar.gz /tmp/releases/\n"
        f"RUN mkdir /testbed && cd /testbed && {unpack.format(BASE)} && {NOT_IN_A_REPOSITORY} \\\n"
        f" && git init -q && git add -A -f && {COMMIT} commit -qm 'cachetools {BASE}' \\\n"
        " && find . -mindepth 1 -maxdepth 1 ! -name .git -exec rm -rf {} + \\\n"
        f" && {unpack.format(FIX)} && {NOT_IN_A_REPOSITORY} && git add -A -f \\\n"
        f" && {COMMIT} commit -qm 'Fix updating TTLCache items while iterating' && git tag v{FIX} \\\n"
        " && rm -rf /tmp/releases\n")
    return dockerfile


def test_a_real_release_fix_becomes_a_row_that_grades_gold_1_and_empty_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    docker_or_skip()
    context = tmp_path / "ctx"
    context.mkdir()
    dockerfile = releases_as_history(context)
    probe = SWETask.model_validate({
        "instance_id": "tkem__cachetools-probe", "repo": "tkem/cachetools", "base_commit": "0" * 40,
        "problem_statement": "-", "patch": "", "test_patch": "", "dockerfile": str(dockerfile),
        "FAIL_TO_PASS": ["tests/test_ttl.py::TTLCacheTest::test_iter_update"], "PASS_TO_PASS": [],
    })  # only to build the image and read the base commit from it
    base = engine.client().containers.run(base_image(probe), ["git", "-C", "/testbed", "rev-parse", "HEAD~1"],
                                          remove=True, network_disabled=True, entrypoint=[]).decode().strip()
    out = tmp_path / "rows.jsonl"
    statement = "Updating a TTLCache's items while iterating over it skips or repeats keys."
    assert main(["swe", "rows", "--dockerfile", str(dockerfile), "--base", base, "--fix", f"v{FIX}",
                 "--instance-id", "tkem__cachetools-733", "--repo", "tkem/cachetools", "--problem-statement",
                 statement, "--test-cmd", f"PYTHONPATH=src {DEFAULT_TEST_CMD}", "--out", str(out)]) == 0, \
        capsys.readouterr().err
    row = json.loads(out.read_text())
    assert "tests/test_ttl.py::TTLCacheTest::test_iter_update" in row["FAIL_TO_PASS"], row["FAIL_TO_PASS"]
    assert "tests/test_tlru.py::TLRUCacheTest::test_iter_update" in row["FAIL_TO_PASS"], row["FAIL_TO_PASS"]
    assert len(row["PASS_TO_PASS"]) > 20, row["PASS_TO_PASS"]  # the rest of the two files' tests
    assert "src/cachetools/__init__.py" in row["patch"] and "tests/" not in row["patch"]
    task = SWETask.model_validate(row)

    async def look_and_grade() -> tuple[list[str], bool, bool, str, str]:
        image = image_for(task)
        sandbox = await start_fresh(image)
        try:
            seen = [(await sandbox.exec(f"{GIT} {command}", cwd="/testbed")).stdout
                    for command in ("rev-list --all --reflog", "tag", "log --all --format=%s")]
        finally:
            await sandbox.destroy()
        gold = await evaluate_patch(task, task.patch, image=image, timeout=300)
        empty = await evaluate_patch(task, "", image=image, timeout=300)
        return seen, gold.resolved, empty.resolved, gold.reason, empty.reason

    seen, gold_resolved, empty_resolved, gold_reason, empty_reason = asyncio.run(look_and_grade())
    assert seen == [f"{base}\n", "", f"cachetools {BASE}\n"], seen  # nothing past the base: no commit, tag or message
    assert gold_resolved and not empty_resolved, (gold_reason, empty_reason)
