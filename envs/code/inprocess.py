"""Grades a task as plain Python would: prompt, solution, test and ``check`` in one interpreter.

The ``inprocess`` grading mode (docs/threat-model.md, "Grading modes"), for task sets whose tests do
with the candidate what no boundary carries (pass it a ``ListNode``, a ``Mock``, a ``key=len``; check
process state it left). Sent by :mod:`~agentgym.envs.code.grading` as the script of a child process
in a fresh sandbox (stdlib only, Python 3.9+), with the job on stdin. The parent, the sandbox's
session, holds the verification's nonce; this process never receives it. The parent prints the
verdict, after the nonce, only when this process

- wrote a ``finished`` record for every statement, in order, and then ``done``, on the
  descriptor its first argument names;
- exited with status 0 after that (``os._exit`` mid-check, ``sys.exit`` at import, a crash:
  no verdict);
- found, after each statement, the interpreter as it left it before the solution ran: the same
  builtins (``AssertionError``, ``isinstance``, ``print``...), no trace or profile hook, the same
  ``sys.modules["builtins"]``;
- got the canaries' verdicts right: statements the host mixed in at random places, one that must
  pass and one that must fail (an ``assert`` of two random numbers), so a submission that makes every
  assertion pass, or writes a passing record for each statement, is caught.

What a submission that reads this process's memory and targets exactly this protocol can forge is
said in the threat model: in-process grading is HumanEval's own trust, with the generic tampering caught.
"""

from __future__ import annotations

import builtins
import json
import os
import sys

MODULE_NAME = "solution"


def _snapshot() -> dict[str, int]:
    return {name: id(value) for name, value in vars(builtins).items()}


def _tampered(before: dict[str, int]) -> str | None:
    """What of the interpreter's grading machinery the code run so far changed, if anything."""
    if sys.gettrace() is not None or sys.getprofile() is not None:
        return "a trace or profile hook was set"
    if sys.modules.get("builtins") is not builtins:
        return "sys.modules['builtins'] was replaced"
    now = _snapshot()
    changed = sorted(name for name in before if now.get(name) != before[name] and not name.startswith("_"))
    if changed:
        return "builtins were replaced: " + ", ".join(changed[:5])
    return None


def main() -> None:
    job = json.loads(sys.stdin.read())
    channel = os.fdopen(int(sys.argv[1]), "w")
    write, flush = channel.write, channel.flush

    def send(*message: object) -> None:
        write(json.dumps(message) + "\n")
        flush()

    quiet = open(os.devnull, "w")
    os.dup2(quiet.fileno(), 1)
    os.dup2(quiet.fileno(), 2)
    sys.stdout = sys.stderr = quiet
    sys.stdin = open(os.devnull)
    namespace: dict[str, object] = {"__name__": MODULE_NAME}
    try:
        exec(compile(job["prompt"], "<prompt>", "exec", dont_inherit=True), namespace)
    except BaseException:
        namespace = {"__name__": MODULE_NAME}
        for line in job["prompt"].splitlines():
            if line.startswith(("import ", "from ")):
                try:
                    exec(compile(line, "<prompt>", "exec", dont_inherit=True), namespace)
                except BaseException:
                    pass
    before = _snapshot()  # the task's prompt may set builtins up; the solution may not
    try:
        try:
            exec(compile(job["solution"], "<submission>", "exec", dont_inherit=True), namespace)
        except IndentationError:
            exec(compile(job["prompt"] + job["solution"], "<submission>", "exec", dont_inherit=True), namespace)
        function = namespace.get(job["entry_point"])
        if function is None:
            raise NameError(f"the submission does not define {job['entry_point']!r}")
    except BaseException as e:
        send("unloaded", f"{type(e).__name__}: {e}"[:2000])
        return
    tampered = _tampered(before)
    if tampered is not None:
        send("tampered", -1, tampered)
        return
    try:
        exec(compile(job["setup"], "<test>", "exec", dont_inherit=True), namespace)
    except BaseException as e:
        send("task_error", f"the task's test code failed before check ran: {type(e).__name__}: {e}"[:2000])
        return
    before = _snapshot()  # and so may the test module
    for name in (job["parameter"], job["entry_point"]):
        if name:
            namespace[name] = function
    for index, code in enumerate(job["statements"]):
        error = None
        try:
            exec(compile(code, "<test>", "exec", dont_inherit=True), namespace)
        except BaseException as e:
            try:
                error = f"{type(e).__name__}: {e}"[:500]
            except BaseException:
                error = f"{type(e).__name__}: (its message could not be read)"
        tampered = _tampered(before)
        if tampered is not None:
            send("tampered", index, tampered)
            return
        send("finished", index, error)
    send("done")


if __name__ == "__main__":
    main()
