"""The relay's own failures are never the candidate's, large values are graded, and a stall is retried once.

Each test is one class of issue 23 that the differential test (test_semantics.py) cannot show,
because plain Python has no relay to fail: what cannot cross must fail the statement in a way the
test cannot catch, graded 0 with the reason, and nothing the submission returns may turn its grade
into an episode ``error``. Both backends.
"""

from __future__ import annotations

import time

from agentgym.envs.code.grading import LIMITS

from .test_forgery import grade, task

IDENTITY = "def same(x):\n    return x\n"


def same_task(test: str):  # type: ignore[no-untyped-def]
    return task("same", "def same(x):\n    \"\"\"x itself.\"\"\"\n", test, "same")


async def test_what_cannot_cross_fails_uncatchably_with_the_reason(backend: str) -> None:
    """A test that catches ``TypeError``/``ValueError`` around an argument the relay cannot pass does not
    pass without the candidate being asked: the statement fails with a ``RelayFailure`` and its reason."""
    test = """
def check(candidate):
    try:
        candidate(object())
    except TypeError:
        pass
    try:
        candidate("x" * (2 << 20))
    except ValueError:
        pass
    try:
        candidate(open)
    except Exception:
        pass
    assert candidate(1) == 1
    import builtins
    builtins.input = lambda prompt="": "5"
    assert candidate(2) == 2
"""
    trajectory = await grade(backend, same_task(test), IDENTITY)
    assert trajectory.outcome == "terminated" and trajectory.outcome_reward == 0.0
    tests = trajectory.info["tests"]
    assert [t["passed"] for t in tests] == [False, False, False, True, False]
    assert all(t["error"].startswith("RelayFailure: ") for t in tests[:3] + tests[4:])
    assert "cannot cross" in tests[0]["error"] and "over the" in tests[1]["error"] and "input()" in tests[4]["error"]


async def test_large_return_values_are_graded_never_an_error(backend: str) -> None:
    """Up to the cap a value crosses and is compared; over it, that call fails with the reason (a grade
    of 0), and so does passing a value back that is too large to send: never an episode error."""
    cap = LIMITS.output_bytes
    test = f"""
def check(candidate):
    assert len(candidate({cap // 2})) == {cap // 2}
    assert len(candidate({2 * cap})) == {2 * cap}
    assert candidate(candidate({cap // 2})[:10]) == "x" * 10
"""
    code = "def same(n):\n    return 'x' * n if isinstance(n, int) else n\n"
    trajectory = await grade(backend, same_task(test), code)
    assert trajectory.outcome == "terminated" and trajectory.outcome_reward == 0.0
    tests = trajectory.info["tests"]
    assert [t["passed"] for t in tests] == [True, False, True]
    assert "CandidateFailure" in tests[1]["error"] and "one call may return" in tests[1]["error"]
    nested = f"def check(candidate):\n    assert candidate(candidate({cap - 20000})) is not None\n"  # fits one way only
    trajectory = await grade(backend, same_task(nested), code)
    assert trajectory.outcome == "terminated" and trajectory.outcome_reward == 0.0
    assert "RelayFailure" in trajectory.info["tests"][0]["error"]


async def test_a_stall_past_the_time_limit_is_graded_again_once(backend: str) -> None:
    """A host too busy to run the call in time (here: a stall that ends a few seconds from now) gets a
    second grading, in fresh sandboxes; a submission that always hangs still fails."""
    until = time.time() + 8
    code = f"import time\ndef same(x):\n    while time.time() < {until}:\n        time.sleep(0.1)\n    return x\n"
    test = "def check(candidate):\n    assert candidate(3) == 3\n"
    trajectory = await grade(backend, same_task(test), code, timeout=6.0)
    assert trajectory.outcome_reward == 1.0 and trajectory.info["tries"] == 2, trajectory.info
    hangs = "import time\ndef same(x):\n    time.sleep(600)\n"
    trajectory = await grade(backend, same_task(test), hangs, timeout=2.0)
    assert trajectory.outcome_reward == 0.0 and "did not finish within" in trajectory.info["tests"][0]["error"]
