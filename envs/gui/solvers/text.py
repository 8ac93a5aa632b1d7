"""Solvers of tasks that ask to copy or pick out text shown on the page and type it back."""

from __future__ import annotations

import re

from agentgym.envs.gui.solvers.base import Action, Page, click, fill_then_submit, press, solves, submit_button

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




@solves("terminal")
def terminal(page: Page) -> Action:
    """List the files (``ls``), then remove one with the extension asked for (``rm``).

    Any file with the extension wins (there may be two), so a wrong play removes one without it.
    """
    prompt = page.by_id("terminal-target")
    if not prompt.focused:
        return click(prompt)
    if page.count("type") == page.count("press"):  # a command to type
        if page.count("type") == 0:
            return "type", {"text": "ls"}
        files = [n for n in page.dom if "output" in n.classes][-1].text.split()
        extension = re.search(r"extension \.(\S+)", page.instruction)
        return "type", {"text": f"rm {page.choose(files, lambda f: removable(f, extension, page.wrong))}"}
    return press("Enter")


def removable(file: str, extension: re.Match[str] | None, wrong: bool) -> bool:
    """Whether ``file`` has the extension (``None``: has none). With ``wrong``, by the page's looser test (the
    name ends with the extension's letters), so that the wrong play's pick, a file this does not hold for,
    fails the page's test too."""
    if extension is None:
        return "." not in file
    return file.endswith(extension[1]) if wrong else file.endswith("." + extension[1])


@solves("text-transform")
def text_transform(page: Page) -> Action:
    """The distorted text is one letter a span in ``#captcha``: type them in order."""
    letters = "".join(n.text for n in page.subtree(page.by_id("captcha")))
    return fill_then_submit(page, [(page.by_id("tt"), letters)], submit_button(page))


@solves("scroll-text")
def scroll_text(page: Page) -> Action:
    """The last word of the text area (the DOM holds all of it, scrolled out of view or not)."""
    last = str(page.by_id("text-area").text).split()[-1]
    return type_answer(page, re.sub(r"[^a-zA-Z0-9]", "", last))
