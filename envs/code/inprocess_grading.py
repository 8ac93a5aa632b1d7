"""The host's side of the ``inprocess`` grading mode: one sandbox, one interpreter, a verdict only its parent prints.

:mod:`~agentgym.envs.code.inprocess` runs prompt, solution, test and each statement of ``check`` in
one child process of a fresh sandbox's session, as HumanEval's harness does. The session (the
parent) is sent the job with two canaries mixed in at random places and the verification's nonce,
neither of which the child is told which is which of; it reads the child's records, and prints the
nonce and the tests' results only after the child exited cleanly with every record in order. What
this defends and what it does not: docs/threat-model.md, "Grading modes".
"""

from __future__ import annotations

import json
import secrets
import time
from importlib import resources
from typing import Any

from agentgym.errors import DataError, SandboxError
from agentgym.sandboxes import Sandbox

from .testplan import TestPlan

DRIVER = r"""
import json as _j, os as _os, select as _sel, signal as _sig, subprocess as _sp, sys as _sys
import tempfile as _tf, time as _t
def _agentgym_inprocess(harness, job, nonce, seconds):
    read, write = _os.pipe()
    work = _tf.mkdtemp(prefix="check-")
    child = _sp.Popen([_sys.executable, "-c", harness, str(write)], stdin=_sp.PIPE, stdout=_sp.DEVNULL,
                      stderr=_sp.DEVNULL, pass_fds=(write,), cwd=work, start_new_session=True)
    _os.close(write)
    try:
        child.stdin.write(job.encode("utf-8"))
        child.stdin.close()
    except OSError:
        pass
    deadline, data, timed_out = _t.monotonic() + seconds, b"", False
    while True:
        left = deadline - _t.monotonic()
        if left <= 0 or not _sel.select([read], [], [], left)[0]:
            timed_out = True
            break
        chunk = _os.read(read, 1 << 16)
        if not chunk:
            break
        data += chunk
        if len(data) > (8 << 20):
            break
    try:  # its pipe closed, it is exiting: a loaded host may take seconds to let it
        child.wait(timeout=0.01 if timed_out else 10.0)
    except _sp.TimeoutExpired:
        pass
    try:
        _os.killpg(child.pid, _sig.SIGKILL)
    except OSError:
        pass
    status = child.wait()
    _os.close(read)
    records = []
    for line in data.split(b"\n")[:100000]:
        if line:
            try:
                records.append(_j.loads(line))
            except ValueError:
                records.append(["garbled"])
    _sys.stdout.write(nonce + _j.dumps({"records": records, "status": status, "timed_out": timed_out}) + "\n")
    _sys.stdout.flush()
"""


def _harness() -> str:
    return resources.files(__package__).joinpath("inprocess.py").read_text(encoding="utf-8")


async def verify_inprocess(data: dict[str, Any], solution: str, test_plan: TestPlan, sandbox: Sandbox,
                           timeout: float) -> dict[str, Any]:
    """Run the task in one interpreter in ``sandbox``; ``{"loaded", "error", "tests", "timed_out"}`` for a Report.

    Raises:
        DataError: The task's test module fails before ``check`` runs.
        SandboxError: The sandbox's session did not answer with a verdict (not the child: the session).
    """
    statements = [s.code for s in test_plan.statements]
    canaries: dict[int, bool] = {}
    for passes in (True, False):
        a, b = secrets.randbelow(1 << 62), secrets.randbelow(1 << 62) | 1
        at = secrets.randbelow(len(statements) + 1)
        statements.insert(at, f"assert {a} == {a if passes else a ^ b}")
        canaries = {(k + 1 if k >= at else k): v for k, v in canaries.items()}
        canaries[at] = passes
    order = [i for i in range(len(statements)) if i not in canaries]  # statement index -> test_plan index
    job = json.dumps({"prompt": data["prompt"], "solution": solution, "setup": test_plan.setup,
                      "parameter": test_plan.parameter, "entry_point": data["entry_point"],
                      "statements": statements})
    nonce = "\x1e" + secrets.token_hex(16)
    started = time.monotonic()
    code = f"{DRIVER}\n_agentgym_inprocess({_harness()!r}, {job!r}, {nonce!r}, {timeout!r})\n"
    result = await sandbox.run_python(code, timeout=timeout + 10)
    start = result.output.rfind(nonce)
    if start < 0:
        raise SandboxError(f"the in-process grader's session sent no verdict: {(result.error or result.output)[-300:]}")
    line = result.output[start + len(nonce):].split("\n", 1)[0]
    verdict = json.loads(line)
    return _judge(verdict, test_plan, canaries, order, time.monotonic() - started, data.get("task_id"))


def _judge(verdict: dict[str, Any], test_plan: TestPlan, canaries: dict[int, bool], order: list[int],
           elapsed: float, task_id: Any) -> dict[str, Any]:
    """The tests' results from the child's records.

    Tampering (a record out of order, a canary with the wrong verdict, the child's own report of a
    changed interpreter) fails every test with the reason; a child that ended early or ran out of
    time keeps the statements it finished and fails the rest with the reason.
    """
    finished: list[str | None] = []
    tampered: str | None = None
    done = False
    for record in verdict["records"]:
        kind = record[0] if isinstance(record, list) and record else None
        if kind == "unloaded" and not finished:
            return {"loaded": False, "error": str(record[1])[:2000], "tests": [], "timed_out": False}
        if kind == "task_error" and not finished:
            raise DataError(f"task {task_id}: {record[1]}")
        if done:
            tampered = "records after the last one"
        elif kind == "finished" and len(record) == 3 and record[1] == len(finished) and (
                record[2] is None or isinstance(record[2], str)):
            finished.append(record[2])
        elif kind == "done" and len(finished) == len(order) + len(canaries):
            done = True
        elif kind == "tampered" and len(record) == 3:
            tampered = str(record[2])[:300]
        else:
            tampered = "its records are out of order or malformed"
        if tampered is not None:
            break
    for index, passes in canaries.items():
        if tampered is None and index < len(finished) and (finished[index] is None) != passes:
            tampered = "a canary statement got the wrong verdict"
    if tampered is None and done and verdict["status"] != 0:
        tampered = f"the tests' process exited with status {verdict['status']} after its last record"
    ended = None
    if not done:
        ended = ("TimeoutError: the tests ran out of time here" if verdict["timed_out"] else
                 f"the tests' process ended here (status {verdict['status']})")
    tests: list[dict[str, Any]] = []
    for position, index in enumerate(order):
        statement = test_plan.statements[position]
        if tampered is not None:
            error: str | None = f"the grading was tampered with: {tampered}"
        elif index < len(finished):
            error = finished[index]
        else:
            error = ended
        if statement.is_test or error is not None:
            result: dict[str, Any] = {"test": statement.source[:300], "passed": error is None}
            if error is not None:
                result["error"] = error[:500]
            tests.append(result)
    return {"loaded": True, "error": None if tampered is None else f"the grading was tampered with: {tampered}",
            "tests": tests, "timed_out": bool(verdict["timed_out"]) and not done, "elapsed": elapsed}
