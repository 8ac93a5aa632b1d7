"""Plain Python's verdict on a solution: the oracle of the differential test (test_semantics.py).

Run as a script in a throwaway sandbox, one process per grading, with the job as JSON on stdin:
``{"prompt", "solution", "setup", "statements", "entry_point", "parameter"}`` (``setup`` and
``statements`` split by the same ``testplan`` the grader uses, so the verdicts line up test by
test). It runs the task as HumanEval's own harness does, one program in one namespace: the prompt,
the solution (appended to the prompt when it is only a body), the test module, then each statement
of ``check`` with the candidate being the solution's own function, called in-process. It writes
``{"tests": [{"test", "passed"}...]}`` to its original stdout.
"""

import json
import os
import sys

job = json.loads(sys.stdin.read())
report = os.fdopen(os.dup(1), "w")
quiet = open(os.devnull, "w")
os.dup2(quiet.fileno(), 1)
os.dup2(quiet.fileno(), 2)
sys.stdout = sys.stderr = quiet
sys.stdin = open(os.devnull)
namespace = {"__name__": "solution"}
try:
    exec(compile(job["prompt"], "<prompt>", "exec", dont_inherit=True), namespace)
except BaseException:
    pass
try:
    exec(compile(job["solution"], "<submission>", "exec", dont_inherit=True), namespace)
except IndentationError:
    exec(compile(job["prompt"] + job["solution"], "<submission>", "exec", dont_inherit=True), namespace)
function = namespace[job["entry_point"]]
exec(compile(job["setup"], "<test>", "exec", dont_inherit=True), namespace)
for name in (job["parameter"], job["entry_point"]):
    if name:
        namespace[name] = function  # the solution's own object, as in one program
tests = []
for source, code, is_test in job["statements"]:
    try:
        exec(compile(code, "<test>", "exec", dont_inherit=True), namespace)
        error = None
    except BaseException as e:
        error = f"{type(e).__name__}: {e}"[:300]
    if is_test or error is not None:
        tests.append({"test": source, "passed": error is None, **({"error": error} if error else {})})
report.write(json.dumps({"tests": tests}))
report.close()
