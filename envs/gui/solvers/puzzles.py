"""Solvers of tasks that ask for an answer worked out from the page: arithmetic, algebra."""

from __future__ import annotations

import re

from agentgym.envs.gui.observe import Dom, Node
from agentgym.envs.gui.solvers.base import Action, Page, click, fill_then_submit, inputs, solves, submit_button


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


@solves("visual-addition")
def visual_addition(page: Page) -> Action:
    """Count the blocks on each side of the "+" and type their sum."""
    blocks = sum("addition-block" in n.classes for side in ("visual-1", "visual-2")
                 for n in page.subtree(page.by_id(side)))
    return fill_then_submit(page, [(page.by_id("math-answer"), str(blocks))], submit_button(page))


@solves("ascending-numbers")
def ascending_numbers(page: Page) -> Action:
    """Click the numbers from 1 up. The first click hides them under blank squares, so later clicks go to
    the square where the next number was on the first page (the largest number's when playing wrong)."""
    first = page.earlier[0] if page.earlier else page.dom
    numbers = {int(n.text): n for n in first if n.tag == "text" and n.text.isdigit()}
    shown = [n for n in page.dom if n.tag == "text" and n.text.isdigit()]
    if shown:
        return click(min(shown, key=lambda n: int(n.text)))
    wanted = numbers[max(numbers) if page.wrong else page.count("click_element") + 1]
    squares = [n for n in page.dom if n.tag == "rect"]
    return click(min(squares, key=lambda n: abs(n.box[0] - wanted.box[0]) + abs(n.box[1] - wanted.box[1])))


def fits(instruction: str, number: int) -> bool:
    """Whether ``number`` meets generate-number's requirement: less than, greater than, odd or even."""
    bound = re.search(r"(less|greater) than (\d+)", instruction)
    if bound:
        return number < int(bound[2]) if bound[1] == "less" else number > int(bound[2])
    return (number % 2 == 1) == ("odd" in instruction)


@solves("generate-number")
def generate_number(page: Page) -> Action:
    """Press Generate until the number shown meets the requirement (one that does not when playing wrong), submit."""
    shown = page.by_id("display-number").text
    if shown.lstrip("-").isdigit() and fits(page.instruction, int(shown)) != page.wrong:
        return click(page.by_id("submit"))
    return click(page.by_id("generate"))


def cards_of(dom: Dom) -> list[Node]:
    """The cards in order: a face-down one is its ``.card`` div, a face-up one its number (``.card-value``)."""
    return [n for n in dom if "card" in n.classes or "card-value" in n.classes]


def revealed(dom: Dom) -> tuple[int, int] | None:
    """The index of the card face up on ``dom`` and its number, if one is."""
    for index, card in enumerate(cards_of(dom)):
        if "card-value" in card.classes and card.text.lstrip("-").isdigit():
            return index, int(card.text)
    return None


@solves("find-greatest")
def find_greatest(page: Page) -> Action:
    """Turn each card up once (one is face up at a time) to learn its number, turn up the greatest, submit."""
    cards = cards_of(page.dom)
    seen = dict(filter(None, (revealed(dom) for dom in (*page.earlier, page.dom))))
    unknown = [i for i in range(len(cards)) if i not in seen]
    if unknown:
        return click(cards[unknown[0]])
    best = page.choose(sorted(seen), lambda i: seen[i] == max(seen.values()))
    now = revealed(page.dom)
    return click(page.by_id("submit")) if now is not None and now[0] == best else click(cards[best])
