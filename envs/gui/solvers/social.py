"""Solvers of feed and results pages: act on a user's posts (social-media), open a search's nth result."""

from __future__ import annotations

import re

from agentgym.envs.gui.observe import Node
from agentgym.envs.gui.solvers.base import Action, Page, click, fill, solves

BUTTONS = {"Reply": "reply", "Retweet": "retweet", "Like": "like", "Share": "share"}
"""A post's own buttons: their label in the instruction → their class."""


def posts(page: Page) -> list[tuple[str, list[Node]]]:
    """Each post's username and nodes, in page order (a post starts at its author's ``.name``)."""
    out: list[tuple[str, list[Node]]] = []
    for node in page.dom:
        if "name" in node.classes:
            out.append(("", []))
        if out:
            if "username" in node.classes:
                out[-1] = (node.text, out[-1][1])
            out[-1][1].append(node)
    return out


def button(post: list[Node], cls: str) -> Node:
    return next(n for n in post if cls in n.classes)


@solves("social-media")
def social_media(page: Page) -> Action:
    """Click the named button of the user's post; the ones under "more" once its menu is open."""
    user, label = page.match(r"user (\S+),")[1], page.quoted()
    all_posts = posts(page)
    post = page.choose([nodes for _, nodes in all_posts], lambda nodes: nodes in [p for u, p in all_posts if u == user])
    if label in BUTTONS:
        return click(button(post, BUTTONS[label]))
    opened = [n for n in post if n.tag == "li" and n.text.split(" @")[0] == label]
    return click(opened[0] if opened else button(post, "more"))


@solves("social-media-all", "social-media-some")
def social_media_all(page: Page) -> Action:
    """Switch on the named button of all (or N) of the user's posts, then submit."""
    label, user = page.match(r'"(\w+)" button on (?:all|\d+) posts? by (\S+) and').groups()
    wanted = re.search(r"button on (\d+) post", page.instruction)
    buttons = [button(nodes, BUTTONS[label]) for u, nodes in posts(page) if (u == user) != page.wrong]
    want = 1 if page.wrong else int(wanted[1]) if wanted else len(buttons)  # wrong: one of another's posts
    active = sum("active" in n.classes for n in buttons)
    if active < want:
        return click(next(n for n in buttons if "active" not in n.classes))
    return click(page.exact("button", "Submit"))


@solves("search-engine")
def search_engine(page: Page) -> Action:
    """Search for the name, go to the result's page (three a page), click it."""
    field = page.by_id("search-text")
    typed = fill(page, field, page.text(page.quoted()))
    if typed is not None or not any("search-title" in n.classes for n in page.dom):
        return typed or click(page.by_id("search"))
    index = int(page.match(r"(\d+)(?:st|nd|rd|th) search result")[1]) - 1
    index = (index + 1) % 9 if page.wrong else index
    shown = next(n for n in page.dom if "page-item" in n.classes and "active" in n.classes)
    if page.subtree(shown)[0].text != str(index // 3 + 1):
        return click(page.exact("a", str(index // 3 + 1)))
    return click([n for n in page.dom if "search-title" in n.classes][index % 3])


@solves("phone-book")
def phone_book(page: Page) -> Action:
    """Page through the contacts (one a page) to the person's, then click the property asked for."""
    person, wanted = page.match(r"Find (.+) in the contact book and click on their (\w+)").groups()
    shown = next(n for n in page.dom if "name" in n.classes)
    if shown.text != person:
        return click(page.exact("a", ">"))
    links = [n for n in page.dom if n.tag == "a" and n.classes and n.classes[0] in ("phone", "email", "address")]
    return click(page.choose(links, lambda n: n.classes[0] == wanted))
