"""Solvers of tasks that ask for an answer worked out from the page: arithmetic, algebra."""

from __future__ import annotations

from agentgym.envs.gui.solvers.base import Action, Page, fill_then_submit, inputs, solves, submit_button


def answer(page: Page, value: int) -> Action:
    """Type ``value`` into the page's field and submit."""
    return fill_then_submit(page, [(inputs(page)[0], str(value))], submit_button(page))


@solves("simple-arithmetic")
def simple_arithmetic(page: Page) -> Action:
    a, op, b = page.by_id("math-problem").text.rstrip("= ").split()
    return answer(page, {"+": int(a) + int(b), "-": int(a) - int(b), "x": int(a) * int(b)}[op])


@solves("simple-algebra")
def simple_algebra(page: Page) -> Action:
    left, right = page.by_id("math-problem").text.split("=")
    total, (a, op, b) = int(right), left.split()
    if a == "x":  # x + d = t, x - d = t
        return answer(page, total - int(b) if op == "+" else total + int(b))
    return answer(page, total - int(a) if op == "+" else int(a) - total)  # d + x = t, d - x = t
