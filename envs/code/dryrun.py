"""Decides, before any episode, whether a task's isolated grade is plain Python's: a dry run.

The relay (``grading="isolated"``) carries plain data and what a call observably does, not every
object a test may hand the candidate (a ``ListNode``, a ``Mock``, ``key=len``) nor process state a
test sets and checks. Static reading of the test (:mod:`~agentgym.envs.code.testplan`) refuses what
it can see; the rest is found by running: the task's canonical solution, a deliberately broken one
and the canonical solution made to do what isolated grading does not carry (:mod:`.probe`: process
state left changed, values aliased between calls) are each graded isolated and in one interpreter
(``inprocess``, which is plain Python run as HumanEval's harness runs a task), and every test
statement must get the same verdict both ways. A task whose grades differ is refused with the
statement at fault, or, under ``grading="auto"``, graded in-process. A task without a canonical
solution cannot be dry-run: its static checks stand.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from functools import cache
from importlib import resources
from typing import Any, NamedTuple

from agentgym.errors import DataError
from agentgym.sandboxes import SandboxProvider, SandboxRuntime

from .grading import Report, verify


class Decision(NamedTuple):
    """How a task will be graded: ``grading`` (``isolated`` or ``inprocess``), or None with ``reason`` (refused)."""

    grading: str | None
    reason: str


PROBED = ("of the canonical solution made to change process state and alias values between calls (the tests "
          "look at what only their own process shows)")
_decided: dict[str, Decision] = {}
_locks: dict[str, asyncio.Lock] = {}


def broken_solution(data: dict[str, Any]) -> str:
    """The prompt with a body that returns None: a solution every task with a test should fail."""
    return data["prompt"] + "    return None\n"


def probed_solution(data: dict[str, Any]) -> str:
    """The canonical solution, its entry point wrapped by :mod:`.probe`."""
    entry = data["entry_point"]
    return f"{data['prompt']}{data['canonical_solution']}\n\n{_probe()}\n{entry} = _agentgym_probe({entry})\n"


@cache
def _probe() -> str:
    return resources.files(__package__).joinpath("probe.py").read_text(encoding="utf-8")


async def decide(data: dict[str, Any], grading: str, *, sandbox: str | SandboxProvider, image: str,
                 timeout: float, runtime: SandboxRuntime | None = None) -> Decision:
    """How ``data``'s task will be graded under the requested ``grading`` (``isolated``, ``inprocess``, ``auto``).

    Cached per task content and backend: a task set is dry-run once per process.
    """
    if grading == "inprocess":
        return Decision("inprocess", "chosen for the task set")
    key = hashlib.sha256(json.dumps([data.get(k) for k in ("prompt", "test", "entry_point", "canonical_solution")]
                                    + [grading, str(sandbox), image]).encode()).hexdigest()
    found = _decided.get(key)
    if found is not None:
        return found
    async with _locks.setdefault(key, asyncio.Lock()):
        found = _decided.get(key)
        if found is None:
            found = _decided[key] = await _dry_run(data, grading, sandbox=sandbox, image=image, timeout=timeout,
                                                   runtime=runtime)
    return found


async def _dry_run(data: dict[str, Any], grading: str, *, sandbox: str | SandboxProvider, image: str,
                   timeout: float, runtime: SandboxRuntime | None) -> Decision:
    if data.get("canonical_solution") is None:
        return Decision("isolated", "no canonical solution to dry-run: the test's static checks passed")
    fallback = "inprocess" if grading == "auto" else None
    canonical = data["prompt"] + data["canonical_solution"]
    for label, solution in (("canonical", canonical), ("broken", broken_solution(data)),
                            ("probed", probed_solution(data))):
        try:
            plain = await verify(data, solution, sandbox=sandbox, image=image, timeout=timeout, runtime=runtime,
                                 grading="inprocess")
        except DataError as e:
            return Decision(None, str(e))
        if label == "canonical" and not plain.all_passed:
            return Decision(None, "the canonical solution fails its own tests in plain Python: "
                                  + _first_failure(plain))
        try:
            isolated = await verify(data, solution, sandbox=sandbox, image=image, timeout=timeout, runtime=runtime,
                                    grading="isolated")
        except DataError as e:
            return Decision(fallback, f"isolated grading refuses it: {e}")
        differs = _difference(isolated, plain)
        if differs is not None:
            what = PROBED if label == "probed" else f"of the {label} solution"
            return Decision(fallback, f"isolated grading {what} differs from plain Python's at {differs}")
    return Decision("isolated", "isolated grading agrees with plain Python on the canonical solution, a broken one "
                                "and the canonical one probed for process state and aliasing")


def _first_failure(report: Report) -> str:
    if report.error:
        return report.error[:300]
    failed = next((t for t in report.tests if not t["passed"]), None)
    return f"{failed['test'][:200]!r}: {failed.get('error', '')[:200]}" if failed else "no test ran"


def _difference(isolated: Report, plain: Report) -> str | None:
    """Where two reports' verdicts differ, as the statement and what each said; None when they agree."""
    if isolated.loaded != plain.loaded:
        return f"loading: isolated says {isolated.error!r}, plain Python {plain.error!r}"
    ours = {t["test"]: t for t in isolated.tests}
    for theirs in plain.tests:
        mine = ours.get(theirs["test"])
        if mine is None or mine["passed"] != theirs["passed"]:
            said = "no result" if mine is None else ("passed" if mine["passed"] else mine.get("error", "failed"))
            return (f"statement {theirs['test'][:200]!r}: isolated says {said[:300]}, plain Python says "
                    f"{'passed' if theirs['passed'] else theirs.get('error', 'failed')[:200]}")
    if isolated.all_passed != plain.all_passed:
        return f"the grade: isolated {isolated.all_passed}, plain Python {plain.all_passed} ({isolated.error})"
    return None
