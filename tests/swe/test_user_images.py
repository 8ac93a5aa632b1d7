"""A user's image whose repository holds the fix in its history (a later commit, a tag, a branch, a
reflog): the ready layer leaves history at the task's base, so none of it is readable in the model's
container, and the task still grades gold 1 and empty 0. ``agentgym swe rows`` makes the row from
that commit, its test lists computed by running the tests."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
from pathlib import Path

import pytest

from agentgym.cli import main
from agentgym.envs.swe.images import base_image, image_for
from agentgym.envs.swe.kept import GIT, start_fresh
from agentgym.envs.swe.sdist_image import BASE_RECIPE, TEST_REQUIREMENTS
from agentgym.envs.swe.tasks import SWETask
from agentgym.envs.swe.verifier import evaluate_patch
from agentgym.sandboxes import engine
from agentgym.sandboxes.builder import build_image
from tests.conftest import docker_or_skip

from . import repo

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(1200)]
FIXED = repo.SOURCE.replace("return a - b", "return a + b")


def with_history() -> str:
    """The flat tiny repository with the fix and its test change committed on top of its base, tagged
    and branched: a repository's own bug-fix commit."""
    gold = base64.b64encode((repo.GOLD + repo.TEST_PATCH).encode()).decode()
    return repo.dockerfile("flat") + (
        f"RUN cd /testbed && echo '{gold}' | base64 -d > /tmp/fix.patch && git apply /tmp/fix.patch \\\n"
        " && git -c user.name=t -c user.email=t@t commit -qam 'fix add' && git tag v1 && git branch fixed \\\n"
        " && rm /tmp/fix.patch\n")


def test_history_past_the_base_is_not_in_the_model_s_container() -> None:
    docker_or_skip()
    probe = SWETask.model_validate(repo.task_row("0" * 40, instance_id="calc__calc-history", dockerfile=with_history()))
    built = base_image(probe)
    base = engine.client().containers.run(built, ["git", "-C", "/testbed", "rev-parse", "HEAD~1"], remove=True,
                                          network_disabled=True, entrypoint=[]).decode().strip()
    task = SWETask.model_validate({**probe.model_dump(), "base_commit": base})
    blob = hashlib.sha1(f"blob {len(FIXED)}\0{FIXED}".encode()).hexdigest()  # the fixed file, as git stores it

    async def main():
        image = image_for(task)
        sandbox = await start_fresh(image)
        try:
            looks = {}
            for command in ("log --all --oneline", "reflog", "tag", "branch -a", "stash list",
                            "fsck --unreachable --no-reflogs --no-progress", f"cat-file -t {blob}",
                            "rev-list --all --reflog"):
                done = await sandbox.exec(f"{GIT} {command} 2>&1", cwd="/testbed")
                looks[command] = done.stdout
        finally:
            await sandbox.destroy()
        gold = await evaluate_patch(task, task.patch, image=image, timeout=120)
        empty = await evaluate_patch(task, "", image=image, timeout=120)
        return looks, gold, empty

    looks, gold, empty = asyncio.run(main())
    assert looks["rev-list --all --reflog"].split() == [base], looks
    assert "fix add" not in looks["log --all --oneline"] and "v1" not in looks["tag"], looks
    assert "fixed" not in looks["branch -a"] and not looks["reflog"].strip() and not looks["stash list"].strip()
    assert "unreachable" not in looks["fsck --unreachable --no-reflogs --no-progress"], looks
    assert "blob" not in looks[f"cat-file -t {blob}"], looks  # the fixed file's content is gone
    assert gold.resolved and not empty.resolved, (gold.reason, empty.reason)


def test_swe_rows_makes_a_row_from_a_fix_commit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docker_or_skip()
    dockerfile = tmp_path / "ctx" / "Dockerfile"
    dockerfile.parent.mkdir()
    dockerfile.write_text(with_history())
    built = base_image(SWETask.model_validate(repo.task_row("0" * 40, dockerfile=str(dockerfile))))
    base = engine.client().containers.run(built, ["git", "-C", "/testbed", "rev-parse", "HEAD~1"], remove=True,
                                          network_disabled=True, entrypoint=[]).decode().strip()
    out = tmp_path / "rows.jsonl"
    args = ["swe", "rows", "--dockerfile", str(dockerfile), "--base", base, "--fix", "v1", "--instance-id",
            "calc__calc-2", "--repo", "calc/calc", "--problem-statement", "add(2, 3) returns -1", "--out", str(out)]
    assert main(args) == 0, capsys.readouterr().err
    assert "2 FAIL_TO_PASS, 2 PASS_TO_PASS" in capsys.readouterr().out
    row = json.loads(out.read_text())
    assert row["FAIL_TO_PASS"] == ["tests/test_calc.py::test_add", "tests/test_calc.py::test_add_negative"]
    assert row["PASS_TO_PASS"] == ["tests/test_calc.py::test_mul", "tests/test_calc.py::test_slow"]
    assert "tests/test_calc.py" in row["test_patch"] and "tests/" not in row["patch"]
    task = SWETask.model_validate(row)

    async def main_():
        image = image_for(task)
        sandbox = await start_fresh(image)
        try:
            seen = (await sandbox.exec(f"{GIT} rev-list --all --reflog; {GIT} tag", cwd="/testbed")).stdout
        finally:
            await sandbox.destroy()
        return seen, [await evaluate_patch(task, p, image=image, timeout=120) for p in (task.patch, "")]

    seen, (gold, empty) = asyncio.run(main_())
    assert seen.split() == [base]
    assert gold.resolved and not empty.resolved, (gold.reason, empty.reason)
    # a fix that makes no test pass gives no row, with the reason
    args[args.index("v1")] = base
    assert main(args) == 1 and "has no test_patch" in capsys.readouterr().err


def test_a_dockerfile_on_the_swe_base_installs_its_test_requirements_from_agentgym_swe_wheels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The SWE base image has no pip and the build no index: ``agentgym swe wheels`` puts pytest's wheels and pip's
    own in the build context, and the steps it prints install them; the task grades gold 1 and empty 0."""
    docker_or_skip()
    swe_base = build_image(BASE_RECIPE)
    no_pip = engine.client().containers.run(swe_base, ["sh", "-c", "python3 -m pip --version 2>&1; true"],
                                            remove=True, network_disabled=True, entrypoint=[]).decode()
    assert "No module named pip" in no_pip, no_pip
    context = tmp_path / "ctx"
    context.mkdir()
    monkeypatch.chdir(context)  # as a user runs it: in the build context, --dest relative to it
    assert main(["swe", "wheels", "--dest", "wheels", *TEST_REQUIREMENTS]) == 0
    steps = capsys.readouterr().out
    assert any(w.name.startswith("pip-") for w in (context / "wheels").glob("*.whl"))
    (context / "Dockerfile").write_text(f"FROM {swe_base}\n{steps}{repo.repository_step('flat')}")
    probe = SWETask.model_validate(repo.task_row("0" * 40, instance_id="calc__calc-wheels",
                                                 dockerfile=str(context / "Dockerfile")))
    built = base_image(probe)
    base = engine.client().containers.run(built, ["git", "-C", "/testbed", "rev-parse", "HEAD"], remove=True,
                                          network_disabled=True, entrypoint=[]).decode().strip()
    task = SWETask.model_validate({**probe.model_dump(), "base_commit": base})

    async def grade() -> tuple[bool, bool, str, str]:
        image = image_for(task)
        gold = await evaluate_patch(task, task.patch, image=image, timeout=120)
        empty = await evaluate_patch(task, "", image=image, timeout=120)
        return gold.resolved, empty.resolved, gold.reason, empty.reason

    gold_resolved, empty_resolved, gold_reason, empty_reason = asyncio.run(grade())
    assert gold_resolved and not empty_resolved, (gold_reason, empty_reason)
