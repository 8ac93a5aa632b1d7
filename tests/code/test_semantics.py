"""The env's grade is plain Python's: the differential test of issues 23 and 33, on both backends.

Every shape of the corpus (tests/code/semantics_corpus.py: what a test can observe of a call;
semantics_users.py and semantics_more.py: task sets as users write them; honest and wrong solutions
of each) is dry-run as the env dry-runs a task file (:mod:`~agentgym.envs.code.dryrun`), which keeps
it isolated or refuses it with the statement at fault (``auto`` then grades it in-process). Then each
solution is graded in that mode and by plain Python, the candidate called in-process by the test as
HumanEval's harness runs it (tests/code/oracle.py, in a throwaway sandbox). Every test statement must
get the same verdict both ways; honest solutions pass every test and wrong ones score 0.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from agentgym.envs.code.dryrun import Decision, decide
from agentgym.envs.code.grader import SOURCE_CHARS
from agentgym.envs.code.grading import Report, verify
from agentgym.envs.code.testplan import plan
from agentgym.sandboxes import Sandbox, acquire
from tests.conftest import docker_or_skip

from . import semantics_more, semantics_users
from .semantics_corpus import SHAPES as CALL_SHAPES
from .semantics_corpus import Shape

SHAPES = CALL_SHAPES + semantics_users.SHAPES + semantics_more.SHAPES

ORACLE = (Path(__file__).parent / "oracle.py").read_text(encoding="utf-8")
CONCURRENCY = 4


def data(shape: Shape) -> dict[str, Any]:
    return {"task_id": shape.name, "prompt": shape.prompt, "test": shape.test, "entry_point": shape.entry_point,
            "grading": shape.grading}


async def plain_python(sandbox: Sandbox, shape: Shape, solution: str) -> dict[str, Any]:
    """The oracle's report: the task run as one program, in a process of its own in ``sandbox``."""
    test_plan = plan(shape.test, shape.entry_point, shape.grading)
    job = json.dumps({"prompt": shape.prompt, "solution": solution, "setup": test_plan.setup,
                      "statements": test_plan.statements, "entry_point": shape.entry_point,
                      "parameter": test_plan.parameter})
    code = (f"import subprocess, sys\nr = subprocess.run([sys.executable, '-c', {ORACLE!r}], input={job!r}, "
            "capture_output=True, text=True, timeout=60)\nprint(r.stdout)\nsys.stderr.write(r.stderr[-3000:])\n")
    result = await sandbox.run_python(code, timeout=90)
    assert result.output.strip(), result.error
    report: dict[str, Any] = json.loads(result.output)
    return report


def verdicts(tests: list[dict[str, Any]]) -> list[tuple[str, bool]]:
    return [(t["test"][:SOURCE_CHARS], t["passed"]) for t in tests]


@pytest.mark.timeout(1500)
async def test_every_shape_is_graded_as_plain_python_grades_it(backend: str) -> None:
    await differential(backend, "python")


@pytest.mark.docker
@pytest.mark.timeout(1500)
async def test_every_shape_is_graded_as_plain_python_grades_it_on_the_oldest_python_promised() -> None:
    """The grader, the submission's session and the oracle on the ``python-oldest`` image (Python 3.9)."""
    docker_or_skip()
    await differential("docker", "python-oldest")


async def differential(backend: str, image: str) -> None:
    """Dry-run every shape as the env does before a task's first episode, then grade each of its
    solutions in the mode the dry run chose and by plain Python: every verdict must agree.

    The dry run must keep isolated the shapes the relay carries and refuse the rest (``auto`` grades
    those in-process), with the statement at fault: ``Shape.grading`` says which a shape is.
    """
    sandbox = await acquire(backend, image=image, verifier="oracle")
    gate = asyncio.Semaphore(CONCURRENCY)
    started = time.monotonic()

    async def decided(shape: Shape) -> Decision:
        async with gate:
            return await decide({**data(shape), "canonical_solution": "\n" + shape.honest[0]}, "isolated",
                                sandbox=backend, image=image, timeout=60)

    async def both(shape: Shape, solution: str, mode: str) -> tuple[Report, dict[str, Any]]:
        async with gate:
            graded = await verify(data(shape), solution, sandbox=backend, image=image, timeout=60, grading=mode)
            return graded, await plain_python(sandbox, shape, solution)

    try:
        decisions = await asyncio.gather(*(decided(shape) for shape in SHAPES))
        pairs = list(zip(SHAPES, decisions, strict=True))
        modes = {shape.name: decision.grading or "inprocess" for shape, decision in pairs}
        wrongly = [(shape.name, shape.grading, decision.reason) for shape, decision in pairs
                   if modes[shape.name] != shape.grading]
        assert not wrongly, json.dumps(wrongly, indent=1)
        for decision in decisions:  # refused isolated with the statement at fault, or the relay's own refusal
            assert decision.grading is not None or (decision.reason.startswith("isolated grading") and (
                " at statement " in decision.reason or "refuses it: " in decision.reason)), decision
        cases = [(shape, solution, honest) for shape in SHAPES
                 for honest, solutions in ((True, shape.honest), (False, shape.wrong)) for solution in solutions]
        graded = await asyncio.gather(*(both(shape, solution, modes[shape.name]) for shape, solution, _ in cases))
    finally:
        await sandbox.destroy()
    disagreements, misjudged = [], []  # the grades differ; an honest solution fails or a wrong one passes
    for (shape, solution, honest), (ours, oracle) in zip(cases, graded, strict=True):
        if verdicts(ours.tests) != verdicts(oracle["tests"]) or ours.error:
            disagreements.append({"shape": shape.name, "solution": solution, "ours": ours.tests,
                                  "error": ours.error, "plain": oracle["tests"]})
        elif ours.all_passed != honest:
            misjudged.append({"shape": shape.name, "honest": honest, "solution": solution, "tests": ours.tests})
    assert not disagreements, json.dumps(disagreements, indent=1)[:20000]
    assert not misjudged, json.dumps(misjudged, indent=1)[:20000]
    assert len(SHAPES) >= 150
    assert all(ours.grading == modes[shape.name] for (shape, _, _), (ours, _) in zip(cases, graded, strict=True))
    calls = sum(ours.calls for ours, _ in graded)
    assert calls >= 1000, calls
    inprocess = sum(mode == "inprocess" for mode in modes.values())
    print(f"{backend} {image}: {len(cases)} solutions over {len(SHAPES)} shapes ({len(SHAPES) - inprocess} graded "
          f"isolated, {inprocess} refused isolated and graded in-process), {calls} relayed requests, "
          f"0 disagreements, {time.monotonic() - started:.0f} s")


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.name)
def test_every_shape_has_honest_and_wrong_solutions(shape: Shape) -> None:
    assert shape.honest and shape.wrong
    plan(shape.test, shape.entry_point, shape.grading)
