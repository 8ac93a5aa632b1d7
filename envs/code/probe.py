"""The dry run's probe: the canonical solution, changed to do what only a call in the tests' own process shows.

Isolated grading carries a call's values, output and exceptions, and the changes it makes to its
arguments while it runs; it does not carry what a call does to its process (``random``'s state,
``os.environ``, the working directory, ``sys.stdout``) nor what happens to shared values between
calls (a returned list the tests keep, an argument the tests change after handing it over, the same
object returned twice). A task whose tests look at any of these can give a wrong solution 1 or a
right one 0 there, whatever its canonical solution does. So the dry run
(:mod:`~agentgym.envs.code.dryrun`) also grades the canonical solution with this module's source
appended, ``ENTRY = _agentgym_probe(ENTRY)``: after each call of the entry point (of each method, for a
class) it

- answers a value the tests cannot accept when the tests changed a container that crossed in an
  earlier call (the constructor that keeps the caller's list, the getter that leaks its own);
- returns an earlier result again, the very object, when the new one equals it (a cache);
- changes the earlier results the tests may still hold;
- draws from ``random``, and on its first call sets an environment variable, changes directory,
  replaces ``sys.stdout`` with a stream that writes to the old one, raises the recursion limit, adds
  to ``sys.argv`` and, where the tests use them, changes ``decimal``'s precision and the ``logging``
  root's level;
- answers a value the tests cannot accept when, since it was defined or last called, the process
  state a candidate may read changed: ``random.seed`` or ``setstate`` called, the recursion limit,
  ``sys.argv``, ``os.environ``, the working directory or its files, ``decimal``'s context, the
  ``logging`` root's handlers or level (the tests set what a candidate in their process would read).

In the tests' own process each of these is seen by a test that looks; in isolated grading none is,
so where the two grades differ the tests depend on what isolated grading cannot carry, and the task
is graded in-process (``auto``) or refused (``isolated``). Tests whose threads call the candidate at
once must not make the probe itself differ: its bookkeeping around a call holds a lock, and
``decimal``'s context, which is each thread's own, is compared with the same thread's last call.
Python 3.9+, stdlib only: it runs in the sandboxes, as part of a solution's source.
"""


def _agentgym_probe(entry):  # type: ignore[no-untyped-def]
    import functools
    import os
    import random
    import sys
    import tempfile
    import threading

    containers = (list, dict, set, bytearray)
    sentinel = object()  # what no test expects
    shared = []  # type: ignore[var-annotated]  # [object, its repr when last seen, returned by the candidate]: most recent last
    first = [True]
    # The bookkeeping around a call is one step for other threads: a test's threads calling at once must
    # not see one call's own changes to process state as changes made by the tests.
    lock = threading.Lock()

    def snap(value):  # type: ignore[no-untyped-def]
        try:
            return repr(value)
        except Exception:
            return None

    def tracked(value):  # type: ignore[no-untyped-def]
        return isinstance(value, containers) and len(value) <= 1000

    def change(value):  # type: ignore[no-untyped-def]
        if isinstance(value, list):
            value.append(sentinel)
        elif isinstance(value, dict):
            value[sentinel] = sentinel
        elif isinstance(value, set):
            value.add(sentinel)
        else:
            value.append(0)

    class Forward:
        def __init__(self, stream):  # type: ignore[no-untyped-def]
            self.stream = stream

        def write(self, text):  # type: ignore[no-untyped-def]
            return self.stream.write(text)

        def flush(self):  # type: ignore[no-untyped-def]
            return self.stream.flush()

        def __getattr__(self, name):  # type: ignore[no-untyped-def]
            return getattr(self.stream, name)

    seeded = [0]

    def counted(function):  # type: ignore[no-untyped-def]
        @functools.wraps(function)
        def setting(*args, **kwargs):  # type: ignore[no-untyped-def]
            seeded[0] += 1
            return function(*args, **kwargs)

        return setting

    random.seed, random.setstate = counted(random.seed), counted(random.setstate)

    def state():  # type: ignore[no-untyped-def]
        """What a candidate may read of its process; the last item, ``decimal``'s context, is the thread's own."""
        try:
            files = sorted(os.listdir("."))[:1000]
        except OSError:
            files = None
        found = [seeded[0], sys.getrecursionlimit(), list(sys.argv), dict(os.environ), os.getcwd(), files]
        decimal, logging = sys.modules.get("decimal"), sys.modules.get("logging")
        if logging is not None:
            found.append([repr(h) for h in logging.root.handlers] + [logging.root.level])
        found.append(None if decimal is None else repr(decimal.getcontext()))
        return found

    # The state after the latest call in any thread (for the process-wide items), and in this thread (its own).
    last = [state()]
    mine = threading.local()
    mine.last = last[0]

    def set_by_tests():  # type: ignore[no-untyped-def]
        now, own = state(), getattr(mine, "last", None)
        return now[:-1] != last[0][:-1] or (own is not None and now[-1] != own[-1])

    def after(args, kwargs, value):  # type: ignore[no-untyped-def]
        given = [v for v in list(args) + list(kwargs.values()) if tracked(v)]
        current = {id(v) for v in given} | {id(value)}
        for record in shared:
            if id(record[0]) not in current and snap(record[0]) != record[1]:
                value = sentinel  # the tests changed what crossed before
        if tracked(value) and id(value) not in {id(v) for v in given}:
            twin = next((r[0] for r in shared if r[2] and type(r[0]) is type(value) and r[1] == snap(value)), None)
            value = value if twin is None else twin
        for record in shared:
            if record[2] and id(record[0]) not in current and record[0] is not value:
                change(record[0])
                record[1] = snap(record[0])
        for v in given + ([value] if tracked(value) else []):
            if all(r[0] is not v for r in shared):
                shared.append([v, snap(v), v is value])
        del shared[:-16]
        random.random()
        if first[0]:
            first[0] = False
            os.environ["AGENTGYM_PROBE"] = "1"
            os.chdir(tempfile.mkdtemp())
            sys.stdout = Forward(sys.stdout)
            sys.setrecursionlimit(sys.getrecursionlimit() + 7)
            sys.argv.append("--agentgym-probe")
            decimal, logging = sys.modules.get("decimal"), sys.modules.get("logging")
            if decimal is not None:
                decimal.getcontext().prec += 1
            if logging is not None:
                logging.root.setLevel(logging.root.level + 1)
        return value

    def wrap(function, method):  # type: ignore[no-untyped-def]
        @functools.wraps(function)
        def probed(*args, **kwargs):  # type: ignore[no-untyped-def]
            with lock:
                tests_changed_it = set_by_tests()
            value = function(*args, **kwargs)
            with lock:
                value = after(args[1:] if method else args, kwargs, value)
                last[0] = mine.last = state()
            return sentinel if tests_changed_it else value

        return probed

    if not isinstance(entry, type):
        return wrap(entry, False)
    for name, attribute in list(vars(entry).items()):
        if callable(attribute) and type(attribute).__name__ == "function" and (
                not name.startswith("__") or name in ("__init__", "__call__")):
            setattr(entry, name, wrap(attribute, True))
    return entry
