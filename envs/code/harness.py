"""Runs a task's tests against a submission inside a sandbox and reports each test's result.

This file is copied into the sandbox and run there as a script (stdlib only). It reads a JSON job
from the file named by its argument, ``{"nonce", "prelude", "solution", "prompt", "test",
"entry_point"}``, and deletes that file before the submission runs, so the submission cannot read the
nonce. Every statement of
``check(candidate)`` runs on its own, so ``info`` can say which assertions failed. The result is
printed as one line starting with the nonce, after all tests ran: a submission that exits early
(``sys.exit(0)``, ``os._exit(0)``) leaves no result line, and the verifier scores it 0.
"""

import ast
import json
import os
import sys
import traceback


def _define(job, namespace):
    """Execute the submission; a bare function body is completed with the task's prompt."""
    exec(compile(job["prelude"], "<prompt imports>", "exec"), namespace)
    try:
        exec(compile(job["solution"], "<submission>", "exec"), namespace)
    except IndentationError:
        exec(compile(job["prompt"] + job["solution"], "<submission>", "exec"), namespace)
    if not callable(namespace.get(job["entry_point"])):
        raise NameError("the submission does not define {!r}".format(job["entry_point"]))


def _checks(test_source):
    """The statements of ``check``'s body, and the module-level code around it."""
    module = ast.parse(test_source)
    setup, body = [], []
    for node in module.body:
        if isinstance(node, ast.FunctionDef) and node.name == "check":
            body = node.body
        else:
            setup.append(node)
    return ast.Module(body=setup, type_ignores=[]), body


def run(job):
    namespace = {"__name__": "__main__"}
    tests = []
    try:
        _define(job, namespace)
    except BaseException as e:
        return {"loaded": False, "error": "".join(traceback.format_exception_only(type(e), e)).strip(),
                "tests": [], "passed": 0, "total": 0}
    setup, body = _checks(job["test"])
    exec(compile(setup, "<test setup>", "exec"), namespace)
    namespace["candidate"] = namespace[job["entry_point"]]
    for stmt in body:
        source = ast.get_source_segment(job["test"], stmt) or ast.dump(stmt)
        is_test = isinstance(stmt, (ast.Assert, ast.For, ast.While, ast.If, ast.With, ast.Try))
        try:
            exec(compile(ast.Module(body=[stmt], type_ignores=[]), "<test>", "exec"), namespace)
            if is_test:
                tests.append({"test": source[:300], "passed": True})
        except BaseException as e:
            message = "".join(traceback.format_exception_only(type(e), e)).strip()
            tests.append({"test": source[:300], "passed": False, "error": message[:500]})
    passed = sum(t["passed"] for t in tests)
    return {"loaded": True, "error": None, "tests": tests, "passed": passed, "total": len(tests)}


def main():
    with open(sys.argv[1]) as f:
        job = json.load(f)
    os.unlink(sys.argv[1])
    nonce = job.pop("nonce")
    report = run(job)
    sys.stdout.flush()
    sys.__stdout__.write("\n" + nonce + json.dumps(report) + "\n")
    sys.__stdout__.flush()


if __name__ == "__main__":
    main()
