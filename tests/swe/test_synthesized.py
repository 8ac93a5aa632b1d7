"""Tasks synthesized from real packages (``agentgym swe synthesize``, rows in tests/swe/data): the gold patch
resolves each, an empty or a wrong patch none, and every verdict equals swebench's on the same log.

The rows were written by ``agentgym swe synthesize --package P --count N --seed 0``; their images are
built here from the sdists (PyPI, cached) with each task's bug committed at its base commit.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agentgym.envs.swe.env import SWEEnv
from agentgym.envs.swe.grading import swebench_spec
from agentgym.envs.swe.images import image_for
from agentgym.envs.swe.policies import EmptyPatch, GoldPatch
from agentgym.envs.swe.tasks import SWETask, load_tasks
from agentgym.envs.swe.verifier import evaluate_patch
from agentgym.rollout import rollout
from agentgym.sandboxes import engine, shutdown_containers
from tests.conftest import docker_or_skip

pytestmark = pytest.mark.docker

FILES = sorted((Path(__file__).parent / "data").glob("*.jsonl"))
WRONG = ("diff --git a/agentgym_wrong.py b/agentgym_wrong.py\nnew file mode 100644\n--- /dev/null\n"
         "+++ b/agentgym_wrong.py\n@@ -0,0 +1 @@\n+FIXED = False\n")
"""Applies to any repository and fixes nothing."""


def test_three_packages() -> None:
    assert len({SWETask.of(t).source_archive["package"] for f in FILES for t in load_tasks(f)}) >= 3


@pytest.mark.timeout(2400)  # three runs of a whole suite per task: minutes each on a loaded 2-core machine
@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_gold_resolves_empty_and_wrong_do_not_as_swebench_says(path: Path, tmp_path: Path) -> None:
    docker_or_skip()
    from swebench.harness.grading import get_eval_report

    tasks = load_tasks(path)

    async def main():
        out = []
        for task in tasks:
            swe = SWETask.of(task)
            image = await asyncio.to_thread(image_for, swe)
            for name, patch in (("gold", swe.patch), ("empty", ""), ("wrong", WRONG)):
                out.append((swe, name, patch, await evaluate_patch(swe, patch, image=image)))
        return out

    for swe, name, patch, graded in asyncio.run(main()):
        assert graded.resolved == (name == "gold"), (swe.instance_id, name, graded.reason)
        log = tmp_path / f"{swe.instance_id}-{name}.log"
        log.write_text(graded.log)
        prediction = {"instance_id": swe.instance_id, "model_patch": patch, "model_name_or_path": "m"}
        theirs = get_eval_report(swebench_spec(swe), prediction, str(log), True)[swe.instance_id]
        assert theirs["resolved"] == graded.resolved
        if "tests_status" in theirs:
            assert theirs["tests_status"]["FAIL_TO_PASS"] == graded.fail_to_pass
            assert theirs["tests_status"]["PASS_TO_PASS"] == graded.pass_to_pass


@pytest.mark.parametrize("path", FILES[:1], ids=[f.stem for f in FILES[:1]])
def test_reference_and_baseline_through_the_env(path: Path) -> None:
    docker_or_skip()
    task = load_tasks(path)[0]

    async def main():
        try:
            async with SWEEnv() as env:
                return [await rollout(env, policy, task) for policy in (GoldPatch(), EmptyPatch())]
        finally:
            await shutdown_containers()

    gold, empty = asyncio.run(main())
    assert (gold.reward, empty.reward) == (1.0, 0.0), (gold.info, gold.failure)
    assert empty.info["sandbox_reused"] is True
    image = image_for(SWETask.of(task))
    assert not engine.client().containers.list(all=True, filters={"ancestor": image})


SEARCH = r"""
set -u
echo "commits: $(git rev-list --all | wc -l)"
echo "messages: $(git log --all --format=%s | tr '\n' ' ')"
echo "parents: $(git log --all --format=%P | tr -d '\n')"
echo "reflog: $(git reflog 2>&1 | wc -l) $(ls -A .git/logs 2>/dev/null | wc -l)"
echo "unreachable: $(git fsck --unreachable --no-reflogs 2>/dev/null | wc -l)"
echo "stashes: $(git stash list | wc -l)"
echo "times: $(find . -path ./.git -prune -o -printf '%T@\n' | sort -u | wc -l)"
echo "fixed blob: $(git cat-file -e "$1" 2>/dev/null && echo present || echo absent)"
echo "fixed copies: $(find / -xdev -type f -name "$2" -exec sha256sum {} + 2>/dev/null | grep -c "$3")"
"""
"""What the model's user finds in its container: history, reflog, loose objects, file times, and any
file of the fixed module's name holding the fixed text (the blob by hash, and by content anywhere)."""


LAYOUTS = [f for f in FILES if f.stem in ("cachetools", "toolz")]  # src/ and flat, tests inside the package


@pytest.mark.slow
@pytest.mark.timeout(2400)  # the sdist and task images are built on first use
@pytest.mark.parametrize("path", LAYOUTS, ids=[f.stem for f in LAYOUTS])
def test_the_model_s_container_shows_nothing_of_the_fix(path: Path) -> None:
    docker_or_skip()
    import hashlib

    from agentgym.envs.swe.kept import start_fresh

    swe = SWETask.of(load_tasks(path)[0])
    mutated = swe.source_archive["bug_patch"].split("\n", 1)[0].split(" b/")[-1]

    async def main():
        sandbox = await start_fresh(await asyncio.to_thread(image_for, swe))
        try:
            buggy = await sandbox.read_file(f"/testbed/{mutated}")
            await sandbox.write_file("/tmp/gold.patch", swe.patch)
            await sandbox.exec("mkdir -p /tmp/fixed && cp -a /testbed/. /tmp/fixed/ && cd /tmp/fixed && "
                               "git apply /tmp/gold.patch", timeout=120)
            fixed = await sandbox.read_file(f"/tmp/fixed/{mutated}")
            await sandbox.exec("rm -rf /tmp/fixed /tmp/gold.patch", timeout=60)
            blob = hashlib.sha1(b"blob %d\0" % len(fixed) + fixed).hexdigest()  # git hash-object
            digest = hashlib.sha256(fixed).hexdigest()
            await sandbox.write_file("/tmp/search.sh", SEARCH)
            found = await sandbox.exec(f"sh /tmp/search.sh {blob} {Path(mutated).name} {digest}", cwd="/testbed",
                                       timeout=300)
            return buggy, fixed, found.output
        finally:
            await sandbox.destroy()

    buggy, fixed, seen = asyncio.run(main())
    assert buggy != fixed  # the gold patch changes the mutated module: there is a fixed version to hide
    facts = dict(line.split(": ", 1) for line in seen.strip().splitlines())
    assert facts == {"commits": "1", "messages": "base ", "parents": "", "reflog": "0 0", "unreachable": "0",
                     "stashes": "0", "times": "1", "fixed blob": "absent", "fixed copies": "0"}, seen
