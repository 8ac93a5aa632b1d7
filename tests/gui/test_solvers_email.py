"""The email solvers' reading of the instructions, held to every phrasing the pages can draw: the turk-written
templates of the ``-nl-turk`` tasks and the ``email-inbox-forward-nl`` page's own, filled with names from the
pages' own name list, as the pages fill them. No browser: the pages' lists are read from the miniwob wheel."""

import json
import random
import re

import pytest

from agentgym.envs.gui.observe import Dom, Node
from agentgym.envs.gui.solvers.base import Page
from agentgym.envs.gui.solvers.email import INSTRUCTION_WORDS, action_of, recipient_of, sender_of
from agentgym.envs.gui.tasks import html_root

DRAWS = 8
"""Name draws per template."""
SWAPPED = frozenset({
    "Find the email from DEST and forward it to NAME.",
    "Find yesterday's emails from DEST and forward them to NAME.",
    "Forward DEST's email from yesterday to NAME.",
    "Forward all messages from DEST to NAME.",
    "Send NAME the message from DEST.",
})
"""Turk templates whose writers swapped the names: the page rewards forwarding NAME's email to DEST, the words
say the opposite, and DEST is a sender of the inbox too (the -nl pages forward to one). The solver reads the
words; the page scores that -1 (5 of the 134 forward templates: email-inbox-forward-nl-turk is not covered)."""


def _turk_templates() -> list[tuple[str, str]]:
    text = (html_root() / "common/special/email-inbox-nl/templates.js").read_text()
    templates = json.loads(text[text.index("{"):text.rindex("}") + 1])
    return [(action, t) for action, sets in templates.items() for t in sets["train"] + sets["test"]]


def _forward_nl_templates() -> list[tuple[str, str]]:
    page = (html_root() / "miniwob/email-inbox-forward-nl.html").read_text()
    block = page[page.index("var NL_TEMPLATES"):page.index("var displayQuery")]
    return [("forward", t) for t in re.findall(r"^\s+'(.*)',?$", block, re.M)]


def _names() -> list[str]:
    """The pages' name list, less the few that are also words of the instructions (May, Star: see below)."""
    line = next(li for li in (html_root() / "common/ui_utils.js").read_text().splitlines()
                if li.startswith("ui_utils.PEOPLE_NAMES"))
    names = json.loads(line[line.index("["):line.rindex("]") + 1])
    return [n for n in names if n not in INSTRUCTION_WORDS]


def _senders(names: list[str]) -> list[Node]:
    return [Node(ref=i, tag="div", box=(0, 20 * i, 100, 20), text=n, classes=("email-sender",))
            for i, n in enumerate(names)]


def _misread(action: str, template: str, rng: random.Random, names: list[str]) -> str | None:
    """Fill ``template`` as the page does and say what the solver reads wrong (None: all of it right)."""
    sender, recipient = rng.sample(names, 2)
    inbox = [*rng.sample(names, rng.randrange(2, 11)), sender, recipient]  # the -nl pages forward to a sender
    rng.shuffle(inbox)
    instruction = (template.replace("NAME", sender, 1).replace("DEST", recipient, 1)
                   .replace("MSG", "lorem ipsum dolor", 1))
    senders = _senders(inbox)
    page = Page(instruction, Dom(senders), [])
    if template in SWAPPED:
        sender, recipient = recipient, sender  # what the words say
    got = (action_of(page), sender_of(page, senders).text,
           recipient_of(page, sender) if action == "forward" else recipient)
    return None if got == (action, sender, recipient) else f"{instruction!r}: read {got}"


@pytest.mark.parametrize("templates", [_turk_templates, _forward_nl_templates])
def test_every_phrasing_is_read_for_its_action_sender_and_recipient(templates):
    rng, names = random.Random(0), _names()
    drawn = templates()
    assert len(drawn) > 30 and SWAPPED <= {t for _, t in _turk_templates()}
    misread = [m for action, t in drawn for _ in range(DRAWS) if (m := _misread(action, t, rng, names))]
    assert not misread, misread[:10]


def test_names_written_oddly_are_read():
    senders = _senders(["Casi", "Casie", "Dee Dee", "Robin"])
    for instruction, sender, recipient in [
        ("please forward Casies last email to Zsa Zsa", "Casie", "Zsa Zsa"),  # no apostrophe, a two-word name
        ("Forward Dee Dee's email to May.", "Dee Dee", "May"),  # a recipient named like a word of the instructions
        ("Forward the last email from Robin to Robin.", "Robin", "Robin"),  # the page drew one name twice
    ]:
        page = Page(instruction, Dom(senders), [])
        assert sender_of(page, senders).text == sender
        assert recipient_of(page, sender) == recipient
        assert action_of(page) == "forward"  # Robin is no "bin"
    page = Page('AnswerRobin\'s email with "hi there"', Dom(senders), [])
    assert sender_of(page, senders).text == "Robin" and action_of(page) == "reply"


def test_a_wrong_play_reads_another_sender():
    senders = _senders(["Kiley", "Evy"])
    page = Page("Please delete Evy's emails.", Dom(senders), [], wrong=True)
    assert sender_of(page, senders).text == "Kiley"
