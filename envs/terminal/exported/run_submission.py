"""The submission's side of an exported code task's relay (check.py starts it as user nobody): load the
submission, then answer one call per line, each call's arguments and result as Python literals."""

from __future__ import annotations

import ast
import json
import sys


def main() -> None:
    out = sys.stdout
    sys.stdout = sys.stderr  # what the submission prints is not a reply
    namespace: dict[str, object] = {}
    function: object = None
    loading = ""
    try:
        with open(sys.argv[1]) as f:
            exec(compile(f.read(), "solution.py", "exec"), namespace)
        function = namespace[sys.argv[2]]
    except BaseException as e:
        loading = f"the submission did not load: {type(e).__name__}: {e}"
    for line in sys.stdin:
        if not callable(function):
            reply = {"error": loading or f"{sys.argv[2]} is not a function"}
        else:
            try:
                reply = {"value": repr(function(*ast.literal_eval(json.loads(line))))}
            except BaseException as e:
                reply = {"error": f"{type(e).__name__}: {e}"[:1000]}
        out.write(json.dumps(reply) + "\n")
        out.flush()


main()
