"""Solvers of tasks that pair labels with values: read a table's value for a label, fill labelled fields."""

from __future__ import annotations

import itertools

from agentgym.envs.gui.observe import Node
from agentgym.envs.gui.solvers.base import Action, Page, fill_then_submit, inputs, solves, submit_button


def table_value(page: Page, label: str) -> str:
    """The text of the cell right after the cell that reads ``label``."""
    cells = [n for n in page.dom if n.tag == "td"]
    for cell, value in itertools.pairwise(cells):
        if cell.text == label:
            return value.text
    raise LookupError(f"no row {label!r} in the table")


@solves("read-table")
def read_table(page: Page) -> Action:
    value = table_value(page, page.match(r"value of (.*) into the text")[1])
    return fill_then_submit(page, [(page.by_id("tt"), value)], submit_button(page))


@solves("read-table-2")
def read_table_2(page: Page) -> Action:
    """Each field's label (``#ll1`` before ``#tt1``) names the table row whose value goes in it."""
    fields = [(page.by_id(f"tt{i}"), table_value(page, page.by_id(f"ll{i}").text.rstrip(":"))) for i in (1, 2)]
    return fill_then_submit(page, fields, submit_button(page))


MOVIE_LABELS = {"genre": "genre", "year": "year", "date": "year", "director": "director"}
"""A word of a movie-search field's label → which part of the query goes in it."""


def labelled_fields(page: Page) -> list[tuple[Node, str]]:
    """The text fields with what each one's label asks for, in the page's order.

    The nth label goes with the nth field, whether labels come before their fields (most layouts)
    or after them (one layout).
    """
    labels = [(n, part) for n in page.dom for word, part in MOVIE_LABELS.items()
              if n.text and n.tag != "t" and word in n.text.lower()]
    fields = inputs(page)
    if not labels or len(labels) != len(fields):
        raise LookupError("labels and fields do not pair up")
    return [(field, part) for field, (_, part) in zip(fields, labels, strict=True)]


@solves("multi-orderings", "multi-layouts")
def movie_search(page: Page) -> Action:
    """Search for <genre> movies directed by <director> from year <year>: each part in its labelled field."""
    genre, director, year = page.match(r"Search for (.+) movies directed by (.+) from year (\d+)").groups()
    query = {"genre": genre, "director": director, "year": year}
    fields = [(field, query[part]) for field, part in labelled_fields(page)]
    submit = [n for n in page.dom if n.text in ("Submit", "Search", "Go!")][-1]
    return fill_then_submit(page, fields, submit)


