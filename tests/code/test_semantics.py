"""The relay's verdict is plain Python's: the differential test of issue 23, on both backends.

Every solution of the corpus (tests/code/semantics_corpus.py: shapes whose tests observe more of a
call than its return value, honest and wrong solutions of each) is graded twice: through the
verifier (the submission and the tests in two sandboxes, calls relayed) and by plain Python, the
candidate called in-process by the test as HumanEval's harness runs it (tests/code/oracle.py, in a
throwaway sandbox). Every test statement must get the same verdict both ways; honest solutions pass
every test and wrong ones score 0.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from agentgym.envs.code.grader import SOURCE_CHARS
from agentgym.envs.code.grading import Report, verify
from agentgym.envs.code.testplan import plan
from agentgym.sandboxes import Sandbox, acquire
from tests.conftest import docker_or_skip

from . import semantics_users
from .semantics_corpus import SHAPES as CALL_SHAPES
from .semantics_corpus import Shape

SHAPES = CALL_SHAPES + semantics_users.SHAPES

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


async def test_the_relays_verdicts_are_plain_pythons(backend: str) -> None:
    await differential(backend, "python")


async def test_in_process_grading_gives_plain_pythons_verdicts(backend: str) -> None:
    """Every shape, those the relay cannot carry too, graded ``inprocess``: plain Python's verdict on each test."""
    await differential(backend, "python", grading="inprocess")


@pytest.mark.docker
async def test_the_relays_verdicts_are_plain_pythons_on_the_oldest_python_promised() -> None:
    """The grader, the submission's session and the oracle on the ``python-oldest`` image (Python 3.9)."""
    docker_or_skip()
    await differential("docker", "python-oldest")


async def differential(backend: str, image: str, grading: str = "isolated") -> None:
    """Grade the corpus through the relay (or in process) and by plain Python on ``image``; every verdict
    must agree. Shapes only in-process grading can grade are left out of ``isolated``."""
    sandbox = await acquire(backend, image=image, verifier="oracle")
    gate = asyncio.Semaphore(CONCURRENCY)

    async def both(shape: Shape, solution: str) -> tuple[Report, dict[str, Any]]:
        async with gate:
            relayed = await verify(data(shape), solution, sandbox=backend, image=image, timeout=60,
                                   grading=grading)
            return relayed, await plain_python(sandbox, shape, solution)

    shapes = [s for s in SHAPES if grading == "inprocess" or s.grading == "isolated"]
    cases = [(shape, solution, honest) for shape in shapes
             for honest, solutions in ((True, shape.honest), (False, shape.wrong)) for solution in solutions]
    try:
        graded = await asyncio.gather(*(both(shape, solution) for shape, solution, _ in cases))
    finally:
        await sandbox.destroy()
    disagreements = []
    for (shape, solution, honest), (relayed, oracle) in zip(cases, graded, strict=True):
        if verdicts(relayed.tests) != verdicts(oracle["tests"]) or relayed.error:
            disagreements.append({"shape": shape.name, "solution": solution, "relay": relayed.tests,
                                  "relay_error": relayed.error, "plain": oracle["tests"]})
        elif honest:
            assert relayed.all_passed, (shape.name, solution, relayed.tests)
        else:
            assert not relayed.all_passed, (shape.name, solution, relayed.tests)
    assert not disagreements, json.dumps(disagreements, indent=1)[:20000]
    assert len(shapes) >= 15
    assert all(relayed.grading == grading for relayed, _ in graded)
    calls = sum(relayed.calls for relayed, _ in graded)
    assert calls >= 1000 or grading == "inprocess", calls
    print(f"{backend} {image} {grading}: {len(cases)} solutions over {len(shapes)} shapes, {calls} relayed requests, "
          "0 disagreements")


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.name)
def test_every_shape_has_honest_and_wrong_solutions(shape: Shape) -> None:
    assert shape.honest and shape.wrong
    plan(shape.test, shape.entry_point, shape.grading)
