"""Grades cannot be forged: every way a submission can reach for its grade scores 0, on both backends.

Each forge below is a wrong function plus a trick that scored 1.0 when the submission ran in the
test harness's interpreter (or a new trick of the same kind); docs/threat-model.md lists them with
what defends against each. Correct functions written in odd ways still pass. Tasks without tests
are refused with their reason.
"""

from __future__ import annotations

import json
import re
import secrets

import pytest

from agentgym import Message, ToolCall, make
from agentgym.envs.code.env import CodeEnv
from agentgym.envs.code.grading import LIMITS
from agentgym.envs.code.policies import ReferenceSolution
from agentgym.envs.code.tasks import load_tasks
from agentgym.errors import DataError
from agentgym.rollout import rollout
from agentgym.types import Task, Trajectory

HUMANEVAL = {t.id: t for t in load_tasks()}


def task(name: str, prompt: str, test: str, entry_point: str) -> Task:
    data = {"task_id": name, "prompt": prompt, "test": test, "entry_point": entry_point, "canonical_solution": None}
    return Task(id=name, prompt=prompt, data=data)


def submit(code: str) -> Message:
    return Message(role="assistant", tool_calls=[ToolCall(id="s", name="submit", arguments=json.dumps({"code": code}))])


async def grade(backend: str, task: Task, code: str, *, timeout: float | None = None) -> Trajectory:
    """One episode that submits ``code`` at once; its finished trajectory."""
    async with make("code", sandbox_backend=backend, **({} if timeout is None else {"verify_timeout": timeout})) as env:
        await env.reset(task)
        result = await env.step(submit(code))
        assert result.terminated
        assert env.trajectory is not None
        return env.trajectory


def failed(trajectory: Trajectory) -> bool:
    """Scored 0, with at least one test recorded as failed (not an empty report)."""
    tests = trajectory.info["tests"]
    return trajectory.outcome_reward == 0.0 and any(not t["passed"] for t in tests)


# ---------------------------------------------------------------------------------------- tasks
ROOT = task(
    "root", "import math\n\n\ndef root(x: float) -> float:\n    \"\"\"The square root of x.\"\"\"\n",
    "import math\n\n\ndef check(candidate):\n    assert isinstance(candidate(2.0), float)\n"
    "    assert math.isclose(candidate(2.0), 1.4142135623730951)\n    assert abs(candidate(9.0) - 3.0) < 1e-9\n",
    "root",
)
SORT = task(
    "sort", "def sort_list(xs: list) -> list:\n    \"\"\"xs in ascending order.\"\"\"\n",
    "def check(candidate):\n    xs = [3, 1, 2]\n    assert candidate(xs) == sorted(xs)\n"
    "    ys = [9, 7, 8, 1]\n    assert candidate(ys) == sorted(ys)\n",
    "sort_list",
)
SQUARE = task(
    "square", "def square(x: int) -> int:\n    \"\"\"x squared; None or ValueError for a negative x.\"\"\"\n",
    "def check(candidate):\n    try:\n        assert candidate(-1) is None\n    except ValueError:\n        pass\n"
    "    assert candidate(3) == 9\n",
    "square",
)
MAPPED = task(
    "mapped", "def square(x: int) -> int:\n    \"\"\"x squared.\"\"\"\n",
    "def check(candidate):\n    assert all(map(lambda x: candidate(x) == x * x, [1, 2, 3]))\n", "square",
)
UPTO = task(
    "upto", "def upto(n: int) -> list:\n    \"\"\"0, 1, ..., n - 1.\"\"\"\n",
    "def check(candidate):\n    assert candidate(100000) == list(range(100000))\n    assert candidate(0) == []\n",
    "upto",
)

# ---------------------------------------------------------------------------------------- forges
FORGES = {
    "an object whose __eq__ is always True": ("HumanEval/0", """
class AlwaysEqual:
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __bool__(self): return True
    __hash__ = object.__hash__
def has_close_elements(numbers, threshold):
    return AlwaysEqual()
"""),
    "builtins.exec and other builtins replaced at module level": ("HumanEval/2", """
import builtins
builtins.exec = lambda *args, **kwargs: None
builtins.abs = lambda x: 0
def truncate_number(number):
    return 0.5
"""),
    "abs, math.isclose and isinstance monkeypatched": ("root", """
import builtins, math
_isinstance = isinstance
builtins.isinstance = lambda value, kind: (kind is float and type(value) is int) or _isinstance(value, kind)
builtins.abs = lambda x: 0
math.isclose = lambda *args, **kwargs: True
def root(x):
    return 0
"""),
    "json.dumps patched to write a passing report": ("HumanEval/0", """
import json
_dumps = json.dumps
REPORT = {"loaded": True, "error": None, "tests": [{"test": "x", "passed": True}], "passed": 1, "total": 1}
def dumps(value, *args, **kwargs):
    if isinstance(value, dict) and {"value", "raised", "tests"} & value.keys():  # a reply or a report
        return _dumps(REPORT)
    return _dumps(value, *args, **kwargs)
json.dumps = dumps
def has_close_elements(numbers, threshold):
    return False
"""),
    "walking the stack for the nonce, writing the report and os._exit": ("HumanEval/0", """
import os, sys
def strings(value, depth=0):
    if isinstance(value, str):
        yield value
    elif depth < 3 and isinstance(value, dict):
        for v in list(value.values()):
            yield from strings(v, depth + 1)
    elif depth < 3 and hasattr(value, "__dict__"):
        yield from strings(vars(value), depth + 1)
def has_close_elements(numbers, threshold):
    frame, found = sys._getframe(), set()
    while frame is not None:
        for scope in (frame.f_locals, frame.f_globals):
            found.update(s for s in strings(scope) if 8 <= len(s) <= 64)
        frame = frame.f_back
    report = '{"loaded": true, "error": null, "tests": [{"test": "x", "passed": true}], "passed": 1, "total": 1}'
    for nonce in found:
        for folder in ("/tmp", os.getcwd()):
            try:
                with open(os.path.join(folder, "report-" + nonce.strip() + ".json"), "w") as f:
                    f.write(nonce + report)
            except (OSError, ValueError):
                pass
        os.write(1, (nonce + '{"results": [{"test": "x", "passed": true}], "done": true}\\n').encode())
    os._exit(0)
"""),
    "printing fake protocol frames": ("HumanEval/0", """
import os, sys
def has_close_elements(numbers, threshold):
    server = sys._getframe(1).f_locals.get("self")
    marker = getattr(server, "marker", "")
    for prefix in (marker, "\\x1e" + "0" * 32, ""):
        os.write(1, (prefix + '{"value": true}\\n').encode())
        os.write(1, (prefix + '{"results": [{"test": "x", "passed": true}], "done": true}\\n').encode())
        print(prefix + '{"value": true}')
    raise ValueError("\\x1e" + "0" * 32 + '{"results": [], "done": true}\\n' + marker + '{"value": true}')
"""),
    "sys.modules poisoning": ("HumanEval/0", """
import sys, types
for name, module in list(sys.modules.items()):
    if hasattr(module, "encode") and hasattr(module, "decode"):
        module.encode = lambda value: True
fake = types.ModuleType("json")
fake.dumps = lambda *args, **kwargs: '{"value": true}'
fake.loads = lambda *args, **kwargs: {"args": [], "kwargs": {}}
sys.modules["json"] = fake
def has_close_elements(numbers, threshold):
    return False
"""),
    "an int subclass that lies about equality": ("HumanEval/13", """
class Liar(int):
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    __hash__ = int.__hash__
def greatest_common_divisor(a, b):
    return Liar(0)
"""),
    "a str subclass that lies about equality": ("HumanEval/28", """
class Liar(str):
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    __hash__ = str.__hash__
def concatenate(strings):
    return Liar("")
"""),
    "redefining a prompt helper the tests use": ("HumanEval/32", """
def poly(xs, x):
    return 0.0
def find_zero(xs):
    return 123.0
"""),
    "killing the parent process": ("HumanEval/0", """
import os, signal
def has_close_elements(numbers, threshold):
    for pid in (os.getppid(), -1):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return True
"""),
    "a self-referencing return value": ("sort", """
def sort_list(xs):
    out = sorted(xs)
    out.append(out)
    return out
"""),
    "raising StopIteration to end the tests' loop early": ("mapped", """
def square(x):
    raise StopIteration
"""),
    "a huge return value": ("sort", """
def sort_list(xs):
    return "x" * (64 << 20)
"""),
    "sys.exit before the tests": ("HumanEval/0", """
import sys
def has_close_elements(numbers, threshold):
    return True
sys.exit(0)
"""),
    "os._exit before the tests": ("HumanEval/0", "import os\nos._exit(0)\n"),
    "a body without a function": ("HumanEval/0", "return True\n"),
}


def find(name: str) -> Task:
    return HUMANEVAL.get(name) or {t.id: t for t in (ROOT, SORT, SQUARE, MAPPED, UPTO)}[name]


@pytest.mark.parametrize("forge", list(FORGES))
async def test_forges_score_zero(backend, forge):
    name, code = FORGES[forge]
    trajectory = await grade(backend, find(name), code)
    assert trajectory.outcome == "terminated", trajectory.failure
    assert trajectory.outcome_reward == 0.0
    assert trajectory.info["verifier"] != "ok" or failed(trajectory), trajectory.info


async def test_hidden_tests_are_out_of_the_submissions_reach(backend):
    """The test's expected value cannot be found in the submission's memory, files or processes."""
    secret = "hidden-" + secrets.token_hex(16)
    guess = task("guess", "def guess() -> str:\n    \"\"\"The secret.\"\"\"\n",
                 f"def check(candidate):\n    assert candidate() == {secret!r}\n", "guess")
    code = """
import gc, glob, os, re
PATTERN = re.compile(r"hidden-[0-9a-f]{32}")
def texts():
    for value in gc.get_objects():
        if isinstance(value, dict):
            yield from value.keys()
            yield from value.values()
        elif isinstance(value, (list, tuple, set, frozenset)):
            yield from value
        elif hasattr(value, "__dict__"):
            yield from vars(value).values()
    files = glob.glob("/proc/[0-9]*/cmdline") + glob.glob("/proc/[0-9]*/environ")
    for top in ("/tmp", "/work", os.getcwd()):
        files += [os.path.join(d, name) for d, _, names in os.walk(top) for name in names]
    for path in files:
        try:
            with open(path, "rb") as f:
                yield f.read(1 << 20).decode("latin-1")
        except OSError:
            pass
def guess():
    for text in texts():
        if isinstance(text, str) and PATTERN.search(text):
            return PATTERN.search(text).group()
    return "not found"
"""
    trajectory = await grade(backend, guess, code, timeout=60)
    assert failed(trajectory), trajectory.info
    assert [t["passed"] for t in trajectory.info["tests"]] == [False]


async def test_a_hung_submission_fails_each_remaining_test_with_a_reason(backend):
    code = "import time\ndef has_close_elements(numbers, threshold):\n    time.sleep(600)\n"
    trajectory = await grade(backend, HUMANEVAL["HumanEval/0"], code, timeout=3.0)
    tests = trajectory.info["tests"]
    assert trajectory.outcome_reward == 0.0 and len(tests) == 7 and not any(t["passed"] for t in tests)
    assert "did not finish within" in tests[0]["error"]
    assert all("did not finish within" in t["error"] for t in tests[1:])


async def test_a_submission_that_exits_mid_tests_fails_the_rest_with_a_reason(backend):
    code = ("import os\ncalls = []\ndef has_close_elements(numbers, threshold):\n    calls.append(1)\n"
            "    if len(calls) == 3:\n        os._exit(0)\n"
            "    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[i + 1:])\n")
    trajectory = await grade(backend, HUMANEVAL["HumanEval/0"], code)
    tests = trajectory.info["tests"]
    assert [t["passed"] for t in tests] == [True, True] + [False] * 5
    assert all("exited" in t["error"] for t in tests[2:])


@pytest.mark.parametrize("error", ["SystemExit(0)", "KeyboardInterrupt()", "GeneratorExit()", "Evil()"])
async def test_raising_base_exceptions_fails_even_inside_except_exception(backend, error):
    code = f"""
class Evil(BaseException):
    def __str__(self):
        return '{{"results": [], "done": true}}'
def square(x):
    raise {error}
"""
    trajectory = await grade(backend, SQUARE, code)
    assert trajectory.outcome_reward == 0.0
    assert [t["passed"] for t in trajectory.info["tests"]] == [False, False]


async def test_files_a_test_writes_cannot_plant_code_in_a_later_grading(backend):
    """Grader sandboxes are kept between verifications: a file a test wrote must not be importable later."""
    note = task("note", "def note() -> list:\n    \"\"\"[file name, text] to save.\"\"\"\n",
                "def check(candidate):\n    name, text = candidate()\n    with open(name, 'w') as f:\n"
                "        f.write(text)\n    assert name.endswith('.txt')\n", "note")
    planted = (
        "import gc, os\n"
        "for obj in gc.get_objects():\n"
        "    if type(obj).__name__ == 'Channel':\n"
        "        for i in range(50):\n"
        "            obj.send('finished', i, {'test': 'forged', 'passed': True})\n"
        "        obj.send('done')\n"
        "        os._exit(0)\n"
    )
    async with make("code", sandbox_backend=backend) as env:
        await env.reset(note)
        await env.step(submit(f"def note():\n    return ['random.py', {planted!r}]\n"))
        await env.reset(HUMANEVAL["HumanEval/53"])  # its tests import random
        await env.step(submit("def add(x, y):\n    return 0\n"))
        trajectory = env.trajectory
    assert failed(trajectory), trajectory.info
    assert all(t["test"] != "forged" for t in trajectory.info["tests"])


# ---------------------------------------------------------------------------------------- correct but odd
ODD_BUT_CORRECT = {
    "a Counter where a dict is expected": ("HumanEval/111", """
from collections import Counter
def histogram(test):
    counts = Counter(test.split())
    top = max(counts.values(), default=0)
    return Counter({k: v for k, v in counts.items() if v == top})
"""),
    "a namedtuple where a tuple is expected": ("HumanEval/8", """
from collections import namedtuple
Result = namedtuple("Result", "total product")
def sum_product(numbers):
    product = 1
    for n in numbers:
        product *= n
    return Result(sum(numbers), product)
"""),
    "an honest int subclass": ("HumanEval/13", """
import math
class Number(int):
    pass
def greatest_common_divisor(a, b):
    return Number(math.gcd(a, b))
"""),
    "lots of output, printed and written to fd 1": ("HumanEval/2", """
import os, sys
def truncate_number(number):
    print("x" * 100000)
    print("y" * 100000, file=sys.stderr)
    os.write(1, b"debug\\n" * 100)
    return number % 1.0
"""),
    "sorting its argument in place": ("sort", "def sort_list(xs):\n    xs.sort()\n    return xs\n"),
    "raising ValueError as the tests allow": ("square", """
def square(x):
    if x < 0:
        raise ValueError("negative")
    return x * x
"""),
    "raising its own ValueError subclass": ("square", """
class NegativeError(ValueError):
    pass
def square(x):
    if x < 0:
        raise NegativeError(x)
    return x * x
"""),
    "a large return value within the limit": ("upto", "def upto(n):\n    return list(range(n))\n"),
}


@pytest.mark.parametrize("case", list(ODD_BUT_CORRECT))
async def test_correct_functions_written_oddly_still_pass(backend, case):
    name, code = ODD_BUT_CORRECT[case]
    trajectory = await grade(backend, find(name), code)
    assert trajectory.outcome_reward == 1.0, trajectory.info
    assert trajectory.info["tests"] and all(t["passed"] for t in trajectory.info["tests"])


# ---------------------------------------------------------------------------------------- tasks without tests
NO_TESTS = {
    "no check": ("x = 1\n", "defines no check(candidate)"),
    "a check that asserts nothing": (
        "def check(candidate):\n    assert True, 'always'\n    candidate(1)\n", "has no test statement"),
    "a check that never uses the candidate": (
        "def check(candidate):\n    assert 1 + 1 == 2\n", "never uses the candidate"),
    "a check that does not parse": ("def check(candidate:\n", "does not parse"),
}


@pytest.mark.parametrize("case", list(NO_TESTS))
def test_a_task_file_without_tests_is_refused_on_load(tmp_path, case):
    test, reason = NO_TESTS[case]
    good = {"task_id": "good", "prompt": "def f(x):\n", "entry_point": "f", "test": "def check(c):\n    assert c(1)\n"}
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "task_id": "bad", "test": test}) + "\n")
    with pytest.raises(DataError, match="tasks.jsonl:2: task bad: .*" + re.escape(reason)):
        make("code", tasks_path=path).tasks()


async def test_an_episode_on_a_task_without_tests_is_an_error_with_the_reason(backend):
    bare = task("bare", "def f(x):\n    \"\"\"x.\"\"\"\n", "def check(candidate):\n    pass\n", "f")
    async with make("code", sandbox_backend=backend) as env:
        trajectory = await rollout(env, ReferenceSolution(), bare)
    assert trajectory.outcome == "error"
    assert "task bare: check(candidate) has no test statement" in (trajectory.failure or "")


async def test_a_test_module_that_crashes_before_check_is_an_error(backend):
    broken = task("broken", "def f(x):\n    \"\"\"x.\"\"\"\n",
                  "import no_such_module\n\ndef check(candidate):\n    assert candidate(1) == 1\n", "f")
    async with make("code", sandbox_backend=backend) as env:
        trajectory = await rollout(env, ReferenceSolution(), broken)
    assert trajectory.outcome == "error"
    assert "failed before check ran: ModuleNotFoundError" in (trajectory.failure or "")


# ---------------------------------------------------------------------------------------- sandboxes
class Recorder:
    """A provider that hands out real sandboxes and records what is done with them."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self.calls: list[str] = []
        self.ends: list[str] = []

    async def acquire(self):
        from agentgym.sandboxes.backends import resolve_backend, start

        sandbox = await start(await resolve_backend(self.backend), "python", LIMITS)
        recorder = self

        class Recorded:
            id, limits = sandbox.id, sandbox.limits

            def __getattr__(self, name):
                method = getattr(sandbox, name)
                if name in ("close", "destroy"):
                    recorder.ends.append(name)
                else:
                    recorder.calls.append(name)
                return method

        return Recorded()


async def test_verification_only_runs_python_and_destroys_a_providers_sandboxes(backend):
    """No file, no fixed path: only ``run_python``; and sandboxes from a provider are never lent again."""
    recorder = Recorder(backend)
    env = CodeEnv(sandbox_backend=recorder)
    target = HUMANEVAL["HumanEval/0"]
    report = await env.run_tests(target, target.data["prompt"] + target.data["canonical_solution"])
    assert report.all_passed and report.total == 7
    assert set(recorder.calls) == {"run_python"}
    assert recorder.ends == ["destroy", "destroy"]


async def test_verifier_sandboxes_are_never_lent_to_a_model(backend, monkeypatch):
    from agentgym.envs.code import grading

    verifier_ids: set[str] = set()
    acquire_pair = grading._acquire_pair

    async def spy(*args):
        pair = await acquire_pair(*args)
        verifier_ids.update(box.id for box in pair)
        return pair

    monkeypatch.setattr(grading, "_acquire_pair", spy)
    model_ids: set[str] = set()
    async with make("code", sandbox_backend=backend) as env:
        for target in list(HUMANEVAL.values())[:6]:
            await env.reset(target)
            model_ids.add(env.sandbox.id)
            await env.step(submit(target.data["prompt"] + target.data["canonical_solution"]))
            assert env.trajectory.outcome_reward == 1.0
    assert len(verifier_ids) >= 2 and model_ids.isdisjoint(verifier_ids)


async def test_the_verifiers_pools_are_shared_and_shut_down_with_the_rest():
    """The graders' and submissions' pools are the runtime's shared pools (one per role): the grader
    goes back as it is, ready for the next verification, and ``shutdown_pools()`` destroys it."""
    from agentgym.envs.code.grading import GRADERS, SUBMISSIONS
    from agentgym.sandboxes import shutdown_pools
    from agentgym.sandboxes.pool import shared_pool, shared_pools

    env = CodeEnv(sandbox_backend="local")
    target = HUMANEVAL["HumanEval/0"]
    try:
        report = await env.run_tests(target, target.data["prompt"] + target.data["canonical_solution"])
        assert report.all_passed
        before = shared_pools()
        graders = await shared_pool("local", limits=LIMITS, verifier=GRADERS, keep=True)  # taken back as they are
        submissions = await shared_pool("local", limits=LIMITS, verifier=SUBMISSIONS)
        assert shared_pools() == before  # both were there: the verification drew from them
        assert submissions.counts().population >= 1
        kept = list(graders._ready)
        assert kept and all([await box.is_alive() for box in kept])
    finally:
        await shutdown_pools()
    assert shared_pools() == []
    assert not any([await box.is_alive() for box in kept])
