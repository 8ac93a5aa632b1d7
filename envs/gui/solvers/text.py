"""Solvers of tasks that ask to copy or pick out text shown on the page and type it back."""

from __future__ import annotations

import re

from agentgym.envs.gui.solvers.base import Action, Page, fill_then_submit, solves, submit_button

ORDINAL = r"(\d+)(?:st|nd|rd|th)"


def type_answer(page: Page, text: str) -> Action:
    """Type ``text`` into the answer field and submit."""
    return fill_then_submit(page, [(page.by_id("answer-input"), text)], submit_button(page))


@solves("copy-paste")
def copy_paste(page: Page) -> Action:
    return type_answer(page, str(page.by_id("to-copy").value))


@solves("copy-paste-2")
def copy_paste_2(page: Page) -> Action:
    return type_answer(page, str(page.by_id(f"text-{page.match(ORDINAL)[1]}").value))


@solves("find-word")
def find_word(page: Page) -> Action:
    index = int(page.match(ORDINAL)[1]) - 1
    paragraph = next(n for n in page.dom if n.tag == "p")
    return type_answer(page, re.sub(r"[^a-zA-Z]", "", paragraph.text.split()[index]))


