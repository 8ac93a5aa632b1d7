"""The check of an exported code task, run by its tests/test.sh as root (a copy of this file travels in
every exported folder): the task's tests call the submission only through a relay to a process of its own
(user nobody), so only Python literals cross and nothing the submission does can decide the outcome.

    python3 -I check.py task.json /app/solution.py    # exit 0: every test passed
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys

NOBODY = 65534


class Relay:
    """The submitted function as the tests see it: each call's arguments and result cross as Python literals."""

    def __init__(self, solution: str, entry_point: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-I", __file__.rsplit("/", 1)[0] + "/run_submission.py", solution, entry_point],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, user=NOBODY, group=NOBODY, extra_groups=[],
            cwd="/tmp")

    def __call__(self, *args: object) -> object:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(repr(args)) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError("the submission ended")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return ast.literal_eval(reply["value"])


def main() -> int:
    task = json.load(open(sys.argv[1]))
    relay = Relay(sys.argv[2], task["entry_point"])
    namespace: dict[str, object] = {}
    exec(compile(task["prompt"], "prompt.py", "exec"), namespace)  # the task's own helpers (trusted)
    namespace[task["entry_point"]] = relay  # tests may name the function as well as take it
    exec(compile(task["test"], "test.py", "exec"), namespace)
    try:
        check = namespace["check"]
        assert callable(check)
        check(relay)
    except Exception as e:
        print(f"failed: {type(e).__name__}: {e}"[:2000])
        return 1
    finally:
        relay.process.kill()
    print("passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
