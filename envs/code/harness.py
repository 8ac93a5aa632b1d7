"""Runs a task's tests against a submission inside a sandbox and reports each test's result.

It runs inside the sandbox (stdlib only), in the sandbox's fresh Python session, as ``main(job_path)``
(or as a script: ``python3 harness.py JOB``). It reads a JSON job ``{"nonce", "prelude", "solution",
"prompt", "test", "entry_point", "report_dir"}`` and deletes the file before the submission runs, so
the submission cannot learn the nonce. Every statement of
``check(candidate)`` runs on its own, so ``info`` can say which assertions failed. The report is
written after all tests ran, to ``report-<nonce>.json``, starting with the nonce: a submission that
exits early (``sys.exit(0)``, ``os._exit(0)``) leaves no report, and the verifier scores it 0.
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


def main(job_path):
    with open(job_path) as f:
        job = json.load(f)
    os.unlink(job_path)
    nonce = job.pop("nonce")
    report = run(job)
    with open(job["report_dir"] + "/report-" + nonce + ".json", "w") as f:
        f.write(nonce + json.dumps(report))


if __name__ == "__main__" and len(sys.argv) > 1:
    main(sys.argv[1])
