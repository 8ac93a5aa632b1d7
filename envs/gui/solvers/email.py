"""Solvers of the email-inbox tasks: find a sender's email, then delete, star, reply to or forward it.

The instruction names the sender and the action, in a fixed phrasing (``email-inbox``) or in many
(the ``-nl`` tasks, written by people: "Forward Kiley Amargo's email", "Please delete Evy's emails").
The sender is the name in the instruction that is a sender in the inbox; the recipient of a forward
is the other name (a capitalized word that is not one of the instructions' own words); a reply's text
is the quoted one.
"""

from __future__ import annotations

import re

from agentgym.envs.gui.observe import Node
from agentgym.envs.gui.solvers.base import WAIT, Action, Page, click, fill, solves

INSTRUCTION_WORDS = frozenset("""
Alexa Answer Ask Automatically Can Copy Could Create Delete Email FOrward Find First Flag For Forward Foward
Get Give Go Hi Navigate Highlight I If Important In Jend Just Let Locate Look Make Mark May Open Please Primary Pull Put
Remind Replay Reply Resend Respond Save Say Search Select Send Set Simply Siri Star Tag Take Tell Text Thanks
The There Throw To Trash Tuesday WiIl Will You
""".split())
"""Capitalized words of the instructions that are not names (sentence openings, the assistants addressed)."""

ACTIONS = (("forward", r"forward|foward"),
           ("delete", r"delete|trash|remove|throw|get rid|erase|discard|bin\b|destroy|don't want|out of my inbox"),
           ("important", r"star|important|flag|mark|highlight|tag|priority|save"),
           ("forward", r"sen[dt]|give|copy|waiting|pass|share|receive|recieve|email \w+ the"))
"""Words that say what to do with the email, tried in order (a quoted text means a reply)."""


def action_of(instruction: str) -> str:
    """What to do with the email: the first action whose words the instruction uses (a quote means a reply)."""
    if '"' in instruction:
        return "reply"
    for action, words in ACTIONS:
        if re.search(words, instruction.lower()):
            return action
    raise LookupError(f"no email action in {instruction!r}")


def sender_of(page: Page, senders: list[Node]) -> Node:
    """The inbox email whose sender the instruction names (another one when playing wrong).

    When the instruction names two of the inbox's senders (the recipient of a forward may have
    written to you too), the sender is the one written as one: "from X", "by X", "X's", "X sent".
    """
    named = [n.text for n in senders if re.search(rf"\b{re.escape(n.text)}\b", page.instruction)]
    for phrasing in (r"(from|by) {}\b", r"\b{}('s| sent| wrote| wants his)"):
        if len(set(named)) > 1:
            named = [n for n in named if re.search(phrasing.format(re.escape(n)), page.instruction)] or named
    return page.choose(senders, lambda n: n.text in named)


def opened_sender(page: Page) -> str:
    """The sender of the email last opened (the forward form hides it)."""
    for dom in reversed((*page.earlier, page.dom)):
        if any(n.id == "email" for n in dom):
            return next(n.text for n in dom if "email-sender" in n.classes)
    raise LookupError("no email was opened")


def recipient_of(page: Page, sender: str) -> str:
    """The forward's recipient: the instruction's name that is not the sender's."""
    words = re.findall(r"[A-Z][a-zA-Z-]*[a-zA-Z]", page.instruction)
    others = [w for w in words if w not in INSTRUCTION_WORDS and w not in (sender, sender + "s")]
    if not others:
        raise LookupError(f"no recipient in {page.instruction!r}")
    return others[0]


@solves("email-inbox", "email-inbox-delete", "email-inbox-forward", "email-inbox-forward-nl",
        "email-inbox-forward-nl-turk", "email-inbox-important", "email-inbox-nl-turk", "email-inbox-noscroll",
        "email-inbox-reply", "email-inbox-star-reply")
def email_inbox(page: Page) -> Action | None:
    action = action_of(page.instruction)
    forward_to = [n for n in page.dom if "forward-sender" in n.classes]
    if forward_to:  # the forward form: the recipient, then send
        recipient = page.text(recipient_of(page, opened_sender(page)))
        send = [n for n in page.dom if n.id == "send-forward"]  # an icon: there once its image has loaded
        return fill(page, forward_to[0], recipient) or (click(send[0]) if send else WAIT)
    reply = [n for n in page.dom if n.id == "reply-text"]
    if reply:  # the reply form: the text, then send
        send = [n for n in page.dom if n.id == "send-reply"]
        return fill(page, reply[0], page.text(page.quoted())) or (click(send[0]) if send else WAIT)
    if any(n.id == "email" for n in page.dom):  # an opened email
        bar = page.subtree(page.by_id("email-bar"))
        icons = {"delete": "trash", "important": "star"}
        if action in icons:
            return click(next(n for n in bar if icons[action] in n.classes))
        return click(next(n for n in page.dom if n.tag == "div" and n.text == action.capitalize()))
    senders = [n for n in page.dom if "email-sender" in n.classes]
    email = sender_of(page, senders)
    if action in ("delete", "important"):  # the icon in the email's row of the inbox
        after = page.dom.nodes[page.dom.nodes.index(email):]
        icon = "trash" if action == "delete" else "star"
        return click(next(n for n in after if icon in n.classes))
    return click(email)

