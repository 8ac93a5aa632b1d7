"""Grade a SWE-bench evaluation log with the ``swebench`` package's own grading, and score patches.

The verifier (:mod:`~agentgym.envs.swe.verifier`) writes a log in the shape of SWE-bench's
``test_output.txt`` (the patch-apply marker, the test output between its start and end markers, the
test command's exit status, the timeout marker); :func:`grade` hands it to
``swebench.harness.grading`` (``get_logs_eval``, ``get_eval_tests_report``,
``get_resolution_status``), so a verdict here is SWE-bench's verdict on the same log. What this adds
is the record: each FAIL_TO_PASS and PASS_TO_PASS test's status, and why a patch was not resolved.

:func:`patch_similarity` is SWE-RL's reward (Wei et al., 2025): how alike the model's diff and the
gold diff are, per file, by ``difflib.SequenceMatcher``.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import tempfile
from dataclasses import dataclass, field
from typing import Any

from .tasks import SWETask

MISSING = "MISSING"
"""The status of a test the log does not mention (it did not run, or the run never got to it)."""

_FILE_HEADER = re.compile(r"^diff --git a/(\S+) b/(\S+)", re.MULTILINE)


@dataclass(frozen=True)
class Grade:
    """SWE-bench's verdict on one evaluation log, with each test's status and a reason.

    Attributes:
        resolved: Every FAIL_TO_PASS test passes and every PASS_TO_PASS test still passes (or is
            skipped), read from the log by swebench's grading.
        applied: The model's patch applied (``None`` when it was empty: there was nothing to apply).
        statuses: Each FAIL_TO_PASS and PASS_TO_PASS test's status in the log (``PASSED``,
            ``FAILED``, ``ERROR``, ``SKIPPED``, ``XFAIL``, or :data:`MISSING`).
        fail_to_pass: swebench's ``{"success": [...], "failure": [...]}`` for FAIL_TO_PASS.
        pass_to_pass: The same for PASS_TO_PASS.
        reason: Why the patch is or is not resolved, in a line.
        log: The log that was graded.
        tampered: The verifier caught the test run being tampered with (:mod:`~agentgym.envs.swe.guard`):
            nothing in the log counts, and the grade is 0 whatever it says.
        second_run_seconds: How long the verifier's second run of the FAIL_TO_PASS tests took
            (:mod:`~agentgym.envs.swe.second_run`), container included; None when it did not run.
    """

    resolved: bool
    applied: bool | None
    statuses: dict[str, str]
    fail_to_pass: dict[str, list[str]] = field(default_factory=lambda: {"success": [], "failure": []})
    pass_to_pass: dict[str, list[str]] = field(default_factory=lambda: {"success": [], "failure": []})
    reason: str = ""
    log: str = ""
    tampered: bool = False
    second_run_seconds: float | None = None

    @property
    def tests_passed_fraction(self) -> float:
        """The share of FAIL_TO_PASS and PASS_TO_PASS tests that pass (VeRPO-style partial credit)."""
        total = len(self.statuses)
        passed = len(self.fail_to_pass["success"]) + len(self.pass_to_pass["success"])
        return passed / total if total else 0.0

    @property
    def fail_to_pass_fraction(self) -> float:
        """The share of FAIL_TO_PASS tests that now pass."""
        done, left = len(self.fail_to_pass["success"]), len(self.fail_to_pass["failure"])
        return done / (done + left) if done + left else 0.0

    @property
    def nothing_broke(self) -> bool:
        """Every PASS_TO_PASS test still passes: the patch broke nothing that worked."""
        return not self.pass_to_pass["failure"]

    def info(self) -> dict[str, Any]:
        """What a trajectory records: verdict, reason, per-test statuses (not the log)."""
        return {"resolved": self.resolved, "patch_applied": self.applied, "reason": self.reason,
                "tampered": self.tampered, "second_run_seconds": self.second_run_seconds,
                "tests": dict(self.statuses)}


def swebench_spec(task: SWETask) -> Any:
    """The ``swebench`` ``TestSpec`` that grading needs for ``task`` (its tests, log parser, eval type)."""
    from swebench.types import TestSpec

    return TestSpec(
        instance_id=task.instance_id, image="", eval_script_list=[], repo=task.repo, version=task.version,
        FAIL_TO_PASS=list(task.FAIL_TO_PASS), PASS_TO_PASS=list(task.PASS_TO_PASS),
        log_parser=parser_name(task), eval_type=task.eval_type,
    )


def parser_name(task: SWETask) -> str:
    """The task's log parser: its own ``log_parser``, else swebench's for its repo, else pytest's."""
    if task.log_parser:
        return task.log_parser
    from swebench.harness.log_parsers import PARSER_REGISTRY
    from swebench.harness.log_parsers.python import MAP_REPO_TO_PARSER_PY

    by_repo = MAP_REPO_TO_PARSER_PY.get(task.repo)
    names = [name for name, parse in PARSER_REGISTRY.items() if parse is by_repo]
    return names[0] if names else "parse_log_pytest"


def grade(task: SWETask, log: str, *, applied: bool | None) -> Grade:
    """SWE-bench's verdict on ``log`` (an evaluation log in its shape) for ``task``."""
    from swebench.harness.constants import APPLY_PATCH_FAIL, TESTS_TIMEOUT, EvalType, ResolvedStatus
    from swebench.harness.grading import get_eval_tests_report, get_logs_eval, get_resolution_status

    spec = swebench_spec(task)
    with tempfile.NamedTemporaryFile("w", suffix=".log", encoding="utf-8") as f:
        f.write(log)
        f.flush()
        status_map, found = get_logs_eval(spec, f.name)
    tests = [*task.FAIL_TO_PASS, *task.PASS_TO_PASS]
    if not found:
        if APPLY_PATCH_FAIL in log:
            reason = "the patch does not apply (git apply, then patch --fuzz=5)"
        elif TESTS_TIMEOUT in log:
            reason = "the tests ran past their timeout"
        else:
            reason = ("the test log holds no test results (the tests did not run, or their exit status "
                      "contradicts the log)")
        return Grade(resolved=False, applied=applied, statuses=dict.fromkeys(tests, MISSING),
                     fail_to_pass={"success": [], "failure": list(task.FAIL_TO_PASS)},
                     pass_to_pass={"success": [], "failure": list(task.PASS_TO_PASS)}, reason=reason, log=log)
    report = get_eval_tests_report(status_map, {"FAIL_TO_PASS": task.FAIL_TO_PASS, "PASS_TO_PASS": task.PASS_TO_PASS},
                                   eval_type=EvalType(task.eval_type))
    resolved = get_resolution_status(report) == ResolvedStatus.FULL.value
    f2p, p2p = report["FAIL_TO_PASS"], report["PASS_TO_PASS"]
    if resolved:
        reason = "resolved: every FAIL_TO_PASS and PASS_TO_PASS test passes"
    else:
        parts = []
        if f2p["failure"]:
            parts.append(f"FAIL_TO_PASS still failing: {_some(f2p['failure'])}")
        if p2p["failure"]:
            parts.append(f"PASS_TO_PASS broken: {_some(p2p['failure'])}")
        reason = "; ".join(parts) or "not resolved"
    statuses = {t: _status(t, status_map) for t in tests}
    return Grade(resolved=resolved, applied=applied, statuses=statuses, fail_to_pass=f2p, pass_to_pass=p2p,
                 reason=reason, log=log)


def not_applied(task: SWETask, why: str) -> Grade:
    """The grade of a patch the verifier did not apply (refused, or too large to take): 0, with ``why``."""
    from swebench.harness.constants import APPLY_PATCH_FAIL

    return dataclasses.replace(grade(task, f"{APPLY_PATCH_FAIL}:\n{why}\n", applied=False), reason=why)


def tampered(graded: Grade, why: str) -> Grade:
    """``graded`` turned into a 0: no test counts as passing, ``why`` is the reason."""
    f2p = [*graded.fail_to_pass["success"], *graded.fail_to_pass["failure"]]
    p2p = [*graded.pass_to_pass["success"], *graded.pass_to_pass["failure"]]
    return dataclasses.replace(graded, resolved=False, reason=why, tampered=True,
                               fail_to_pass={"success": [], "failure": f2p},
                               pass_to_pass={"success": [], "failure": p2p})


def collection_error(graded: Grade, why: str) -> Grade:
    """``graded`` as a run that stopped at collection (the library does not import): 0, no test
    counts as passing, and ``why`` (pytest's own error) is the reason; not tampering."""
    return dataclasses.replace(tampered(graded, why), tampered=False)


def skipped_fail_to_pass(graded: Grade, task: SWETask) -> Grade:
    """``graded`` with every FAIL_TO_PASS test the run did not see pass (skipped, or never reported:
    a ``pytest.skip(allow_module_level=True)`` the library runs on import) counted as failing.

    swebench's ``fail_only`` rows count as passing every test that did not print ``FAILED``, so a
    patch that skips the graded modules would resolve them; the verifier's own pytest run reports
    every test it runs (``-rA``), and a gold patch makes each FAIL_TO_PASS test pass, so its verdict
    is unchanged. (A ``pass_and_fail`` row already counts these as failing.)"""
    f2p = graded.fail_to_pass
    left = [t for t in task.FAIL_TO_PASS if graded.statuses.get(t) not in ("PASSED", "XFAIL")]
    if not left or (not graded.resolved and not set(left) - set(f2p["failure"])):
        return graded
    success = [t for t in f2p["success"] if t not in left]
    failure = [*f2p["failure"], *(t for t in left if t not in f2p["failure"])]
    return dataclasses.replace(graded, resolved=False, fail_to_pass={"success": success, "failure": failure},
                               reason=f"FAIL_TO_PASS not seen passing (skipped or not run): {_some(left)}")


def _status(test: str, status_map: dict[str, str]) -> str:
    from swebench.harness.grading import _resolve_case

    key = _resolve_case(test, status_map)
    return status_map[key] if key is not None else MISSING


def _some(tests: list[str], shown: int = 5) -> str:
    more = f" and {len(tests) - shown} more" if len(tests) > shown else ""
    return ", ".join(tests[:shown]) + more


# ---------------------------------------------------------------------- SWE-RL's patch similarity
def file_diffs(patch: str) -> dict[str, str] | None:
    """A unified git diff split per file (``b/`` path -> that file's hunks), or None if it is not one."""
    headers = list(_FILE_HEADER.finditer(patch))
    if not headers:
        return None
    out: dict[str, str] = {}
    for index, match in enumerate(headers):
        end = headers[index + 1].start() if index + 1 < len(headers) else len(patch)
        body = patch[match.end():end]
        hunks = body[body.find("\n@@"):] if "\n@@" in body else body  # drop index/mode lines: not the change
        out[match.group(2)] = hunks.strip("\n")
    return out


def patch_similarity(patch: str, gold: str) -> float:
    """SWE-RL's reward: -1 when ``patch`` is not a git diff, else the mean over every file either diff
    touches of ``SequenceMatcher(None, model's, gold's).ratio()`` on that file's hunks (a file one
    side does not touch counts as an empty diff there)."""
    ours, theirs = file_diffs(patch), file_diffs(gold) or {}
    if not ours:
        return -1.0
    files = sorted(set(ours) | set(theirs))
    ratios = [difflib.SequenceMatcher(None, ours.get(f, ""), theirs.get(f, ""), autojunk=False).ratio() for f in files]
    return sum(ratios) / len(ratios)
