"""agentgym's SWE tasks written as Harbor task folders: the repository at ``/testbed``, graded as the SWE env
grades a patch.

Each SWE-bench-format row (synthesized by ``agentgym swe synthesize``, made by ``agentgym swe rows``, or
read from a dataset) becomes::

    toolz__toolz-1.2.0.dropped_branch.c242b630/
      instruction.md        the problem statement, answered by editing /testbed
      task.toml             timeouts, no network, the row's ids in [metadata], its image as docker_image
      environment/Dockerfile   FROM that image, WORKDIR /testbed
      tests/test.sh         runs tests/swe_check.py, which writes /logs/verifier/reward.json
      tests/swe_check.py    the graders' files put back, the tests run as nobody, the log read
      tests/protect.py      the SWE env's rule of which files are the graders' (agentgym.envs.swe.protect)
      tests/protected.tar   the graders' files at the base commit, test_patch applied
      tests/swe.json        FAIL_TO_PASS, PASS_TO_PASS, the test command and its timeout
      solution/solve.sh     applies the gold patch

The image is the one the SWE env runs the row in (:func:`~agentgym.envs.swe.images.image_for`), built
here when missing: a folder runs where that image is, and another machine loads it (``docker save``).
What the export leaves out of the SWE env's grading is in docs/terminal.md: the patch refusals, the
canaries and JUnit cross-check, and the second run.
"""

from __future__ import annotations

import base64
import io
import json
import tarfile
from collections.abc import Iterable
from importlib import resources
from pathlib import Path

from agentgym.errors import DataError
from agentgym.sandboxes import engine
from agentgym.types import Task

from .export import folder_name, script

SOLVE_SH = "#!/bin/bash\nset -e\necho {patch} | base64 -d > /tmp/gold.patch\ncd /testbed\ngit apply /tmp/gold.patch\n"
TEST_SH = """#!/bin/bash
# The repository is graded as agentgym's SWE env grades a patch (swe_check.py).
mkdir -p /logs/verifier
set -o pipefail
python3 -I /tests/swe_check.py /tests/swe.json 2>&1 | tee /logs/verifier/check.txt
"""
INSTRUCTION = (
    "You are working in a checkout of the repository {repo} at /testbed. Fix the issue below by editing the "
    "repository's source files. Its tests grade your work: the existing tests, their configuration and any "
    "test files you add are replaced by the graders' own before they run.\n\n<issue>\n{problem}\n</issue>\n"
)
TASK_TOML = """version = "1.0"

[metadata]
source = "agentgym SWE env"
instance_id = {instance_id}
repo = {repo}

[agent]
timeout_sec = {agent_timeout}

[verifier]
timeout_sec = {verifier_timeout}

[environment]
docker_image = {image}
network_mode = "no-network"
cpus = 1
memory_mb = 2048
"""
GIT_SAFE = "git config --global --add safe.directory /testbed"


def export_swe_tasks(tasks: Iterable[Task], out: Path, *, test_timeout: float = 600.0,
                     agent_timeout: float = 1800.0) -> list[Path]:
    """Write each SWE task as a Harbor task folder in ``out``, building its image when missing; the folders.

    Raises:
        DataError: A row cannot be exported (its tests run by a whole ``eval_script``, or read by a log
            parser other than pytest's); the message names it and why. Folders already written stay.
        FileExistsError: ``out`` holds a folder of one of the tasks' names already.
    """
    from agentgym.envs.swe.grading import parser_name
    from agentgym.envs.swe.images import image_for
    from agentgym.envs.swe.tasks import SWETask
    from agentgym.envs.swe.testrun import DEFAULT_TEST_CMD

    out.mkdir(parents=True, exist_ok=True)
    written = []
    for task in tasks:
        swe = SWETask.of(task)
        if swe.eval_script:
            raise DataError(f"{swe.instance_id}: a row run by an eval_script cannot be exported (its tests and "
                            "their log are the script's, not a test command's)")
        if parser_name(swe) != "parse_log_pytest":
            raise DataError(f"{swe.instance_id}: its log is read by {parser_name(swe)}; only pytest's "
                            "(parse_log_pytest) travels in an exported folder")
        image = image_for(swe)
        folder = out / folder_name(swe.instance_id)
        folder.mkdir()
        (folder / "instruction.md").write_text(INSTRUCTION.format(repo=swe.repo, problem=swe.problem_statement))
        (folder / "task.toml").write_text(TASK_TOML.format(
            instance_id=json.dumps(swe.instance_id), repo=json.dumps(swe.repo), image=json.dumps(image),
            agent_timeout=float(agent_timeout), verifier_timeout=float(test_timeout + 120)))
        (folder / "environment").mkdir()
        (folder / "environment" / "Dockerfile").write_text(f"FROM {image}\nWORKDIR /testbed\n")
        tests = folder / "tests"
        tests.mkdir()
        script(tests / "test.sh", TEST_SH)
        (tests / "swe_check.py").write_text(resources.files("agentgym.envs.terminal.exported")
                                            .joinpath("swe_check.py").read_text())
        (tests / "protect.py").write_text(resources.files("agentgym.envs.swe").joinpath("protect.py").read_text())
        (tests / "protected.tar").write_bytes(protected_files(image, swe.test_patch))
        (tests / "swe.json").write_text(json.dumps({
            "FAIL_TO_PASS": swe.FAIL_TO_PASS, "PASS_TO_PASS": swe.PASS_TO_PASS,
            "test_cmd": swe.test_cmd or DEFAULT_TEST_CMD, "timeout": test_timeout}))
        if swe.patch:
            (folder / "solution").mkdir()
            patch = base64.b64encode(swe.patch.encode()).decode()
            script(folder / "solution" / "solve.sh", SOLVE_SH.format(patch=patch))
        written.append(folder)
    return written


def protected_files(image: str, test_patch: str) -> bytes:
    """A tar of the repository's graders' files (:func:`~agentgym.envs.swe.protect.is_protected`) at the
    image's base commit with ``test_patch`` applied, paths relative to ``/testbed``.

    Raises:
        DataError: The repository could not be listed or archived in a container of ``image``.
    """
    from agentgym.envs.swe import protect

    container = engine.client().containers.run(image, ["sleep", "600"], detach=True, network_disabled=True,
                                               entrypoint=[], user="0")
    try:
        def inside(command: str) -> bytes:
            done = container.exec_run(["sh", "-c", f"{GIT_SAFE} && cd /testbed && {command}"])
            if done.exit_code != 0:
                raise DataError(f"reading the repository in {image} failed: {done.output.decode()[-500:]}")
            return bytes(done.output)

        if test_patch:
            container.put_archive("/tmp", _tar({"test.patch": test_patch.encode()}))
            inside("git apply /tmp/test.patch")
        listed = inside("git ls-files -z --cached --others --exclude-standard").decode().split("\0")
        names = "\0".join(n for n in listed if n and protect.is_protected(n))
        container.put_archive("/tmp", _tar({"protected-names": names.encode()}))
        inside("tar -cf /tmp/protected.tar --no-recursion --null -T /tmp/protected-names")
        stream, _ = container.get_archive("/tmp/protected.tar")
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as outer:
            inner = outer.extractfile("protected.tar")
            assert inner is not None
            return inner.read()
    finally:
        container.remove(force=True)


def _tar(files: dict[str, bytes]) -> bytes:
    """An archive of ``files`` (name → bytes), for ``put_archive``."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()
