"""Code compiled for a task or a model is compiled as its own program, not with agentgym's ``__future__`` flags.

The modules that exec a prompt, a solution, a test or a ``python`` tool call start with ``from
__future__ import annotations``; ``compile`` inherits that unless told not to, and then a
solution's ``@dataclass`` does not load (the dataclass looks its module up in ``sys.modules``), a
prompt's annotations become strings, and the tool shows a model what plain Python would not.
"""

from __future__ import annotations

from agentgym.sandboxes import acquire

from .test_forgery import grade, task


async def test_the_python_tool_compiles_without_agentgyms_future_flags(backend: str) -> None:
    sandbox = await acquire(backend, image="python")
    try:
        result = await sandbox.run_python("def f(x: int) -> str: ...\nprint(f.__annotations__)\n")
    finally:
        await sandbox.destroy()
    assert result.output.strip() == "{'x': <class 'int'>, 'return': <class 'str'>}", result


async def test_a_dataclass_in_the_solution_and_in_the_prompt_loads_and_keeps_real_annotations(backend: str) -> None:
    prompt = ("from dataclasses import dataclass\n\n@dataclass\nclass Pair:\n    a: int\n    b: int\n\n"
              "def kinds() -> list:\n    \"\"\"The names of Pair's and Acc's annotations.\"\"\"\n")
    test = ("def check(candidate):\n    assert candidate() == ['int', 'int', 'int']\n"
            "    assert Pair(1, 2).b == 2\n")
    solution = ("from dataclasses import dataclass\n\n@dataclass\nclass Acc:\n    total: int = 0\n\n"
                "def kinds():\n    hints = [*Pair.__annotations__.values(), *Acc.__annotations__.values()]\n"
                "    return [h.__name__ for h in hints]\n")
    trajectory = await grade(backend, task("kinds", prompt, test, "kinds"), solution)
    assert trajectory.reward == 1.0, trajectory.info
