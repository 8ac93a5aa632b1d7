"""Python sessions are forked from a warm parent, and each is as fresh as a new interpreter: no names,
no modules and no random state of the session before it, whether it follows a wipe or a restart."""

from __future__ import annotations

from agentgym.sandboxes.pool import SandboxPool
from agentgym.sandboxes.supervised import SupervisedSandbox
from tests.sandboxes.conftest import SMALL

DIRTY = """
import fractions, random, sys
leftover = fractions.Fraction(1, 3)
sys.leftover = "set on a module"
print(random.random(), random.getrandbits(64))
"""

LOOK = """
import random, sys
print(sorted(name for name in globals() if not name.startswith("__")), "fractions" in sys.modules,
      hasattr(sys, "leftover"), __name__)
print(random.random(), random.getrandbits(64))
"""


async def test_a_restarted_session_is_fresh(sandbox: SupervisedSandbox) -> None:
    first = await sandbox.run_python(DIRTY)
    restart = await sandbox.run_python("import os\nos._exit(0)")
    assert restart.restarted
    state, draws = (await sandbox.run_python(LOOK)).output.splitlines()
    assert state == "['random', 'sys'] False False __main__"
    assert draws != first.output.strip()  # a forked session does not replay its parent's random sequence


async def test_a_recycled_session_is_fresh(backend: str) -> None:
    pool = SandboxPool(backend, "python", SMALL, size=1, max_size=1)
    try:
        box = await pool.acquire()
        first = await box.run_python(DIRTY)
        await box.close()
        again = await pool.acquire()
        assert again.id == box.id
        state, draws = (await again.run_python(LOOK)).output.splitlines()
        assert state == "['random', 'sys'] False False __main__"
        assert draws != first.output.strip()
    finally:
        await pool.shutdown()


async def test_sessions_of_different_sandboxes_draw_different_random_numbers(backend: str) -> None:
    pool = SandboxPool(backend, "python", SMALL, size=2, max_size=2)
    try:
        boxes = [await pool.acquire(), await pool.acquire()]
        draws = {(await box.run_python("import random\nprint(random.getrandbits(64))")).output for box in boxes}
        assert len(draws) == 2
        for box in boxes:
            await box.close()
    finally:
        await pool.shutdown()


async def test_the_session_is_main(sandbox: SupervisedSandbox) -> None:
    """Names defined in the session live in ``__main__``, as in a script: pickle finds them."""
    result = await sandbox.run_python(
        "import pickle, __main__\ndef f():\n    return 42\nprint(pickle.loads(pickle.dumps(f))(), __main__.f is f)"
    )
    assert result.output == "42 True\n", result
