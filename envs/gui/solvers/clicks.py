"""Solvers of tasks won by clicking the element the instruction names: buttons, links, tabs, dialogs, widgets."""

from __future__ import annotations

from agentgym.envs.gui.solvers.base import WAIT, Action, Page, click, solves


@solves("click-button", "unicode-test")
def click_button(page: Page) -> Action:
    return click(page.one("button", page.quoted()))


@solves("click-button-sequence")
def click_button_sequence(page: Page) -> Action:
    first, second = page.one("button", "ONE"), page.one("button", "TWO")
    return click(second if page.clicked(first) else first)


@solves("click-test")
def click_test(page: Page) -> Action | None:
    return None if page.wrong else click(page.one("button"))


@solves("click-test-2", "click-test-transfer")
def click_test_2(page: Page) -> Action:
    return click(page.one("button", page.match(r"button (\w+)")[1]))


@solves("click-link")
def click_link(page: Page) -> Action:
    return click(page.one("span", page.quoted()))


@solves("click-tab")
def click_tab(page: Page) -> Action:
    number = page.match(r"#(\d+)")[1]
    return click(page.one("a", f"Tab #{number}"))


@solves("click-tab-2", "click-tab-2-easy", "click-tab-2-medium", "click-tab-2-hard")
def click_tab_2(page: Page) -> Action | None:
    """Open tab after tab until the link shows, then click it.

    A wrong play clicks another link when one shows and otherwise gives up: it opens no tab, since
    opening one can itself be the answer (click-tab-2-medium empties its second tab, and when the
    named link was only there, the page rewards opening that tab).
    """
    try:
        return click(page.one("span", page.quoted()))
    except LookupError:
        if page.wrong:
            return None
        tabs = [n for n in page.dom if n.tag == "a" and "ui-tabs-anchor" in n.classes and not page.clicked(n)]
        return click(tabs[0])


def titlebar_close(page: Page) -> Action:
    """A click on the dialog's close button: the button holding the text "Close"."""
    for node in page.dom:
        if node.tag == "button" and any(n.text == "Close" for n in page.subtree(node)):
            return click(node)
    raise LookupError("no dialog close button")


@solves("click-dialog")
def click_dialog(page: Page) -> Action | None:
    return None if page.wrong else titlebar_close(page)


@solves("click-dialog-2")
def click_dialog_2(page: Page) -> Action:
    label = page.quoted()
    if label.lower() == "x":
        return click(page.one("button", "OK")) if page.wrong else titlebar_close(page)
    return click(page.one("button", label))


@solves("click-collapsible", "click-collapsible-nodelay")
def click_collapsible(page: Page) -> Action | None:
    """Open the section, then submit."""
    header = page.one("h3")
    if page.clicked(header):
        return click(page.one("button", "Submit"))
    return None if page.wrong else click(header)


WIDGETS = {"radio": "input_radio", "checkbox": "input_checkbox", "text": "input_text", "textarea": "textarea",
           "button": "button"}


@solves("click-widget")
def click_widget(page: Page) -> Action:
    want = WIDGETS[page.quoted()]
    return click(page.choose([n for n in page.dom if n.tag in WIDGETS.values()], lambda n: n.tag == want))


SHAPE_BUTTONS = {"rect": "Rectangle", "circle": "Circle", "polygon": "Triangle"}


@solves("identify-shape")
def identify_shape(page: Page) -> Action:
    svg = next(n for n in page.dom if n.tag == "svg")
    shape = page.subtree(svg)[0]
    if shape.tag == "text":
        answer = "Number" if shape.text.isdigit() else "Letter"
    else:
        answer = SHAPE_BUTTONS[shape.tag]
    return click(page.one("button", answer))


@solves("navigate-tree")
def navigate_tree(page: Page) -> Action:
    """Open folders until the file shows, then click it."""
    try:
        return click(page.one("span", page.quoted()))
    except LookupError:
        hits = [n for n in page.dom if "expandable-hitarea" in n.classes and not page.clicked(n)]
        return click(hits[0])




@solves("click-collapsible-2", "click-collapsible-2-nodelay")
def click_collapsible_2(page: Page) -> Action:
    """Open section after section until the link shows, then click it; wait while a section slides open."""
    try:
        return click(page.one("span", page.quoted()))
    except LookupError:
        headers = [n for n in page.dom if "ui-accordion-header" in n.classes]
        opened = [h for h in headers if page.clicked(h)]
        if opened and not page.after(opened[-1], "ui-accordion-content"):
            return WAIT
        return click(next(h for h in headers if not page.clicked(h)))


@solves("odd-or-even")
def odd_or_even(page: Page) -> Action:
    """Mark each number's row Odd or Even, then submit."""
    nodes = page.dom.nodes
    for i, number in enumerate(nodes):
        if "display-number" in number.classes:
            odd, even = nodes[i - 1], nodes[i + 1]
            want = odd if (int(number.text) % 2 != 0) != page.wrong else even
            if "selected" not in want.classes:
                return click(want)
    return click(page.by_id("submit"))


@solves("grid-coordinate")
def grid_coordinate(page: Page) -> Action:
    """The grid's points are circles whose id is their coordinate."""
    point = page.match(r"coordinate (\(-?\d+,-?\d+\))")[1]
    return click(page.choose([n for n in page.dom if n.tag == "circle"], lambda n: n.id == point))


@solves("click-pie")
def click_pie(page: Page) -> Action:
    """Open the pie menu (its "+" in the middle), then click the item's slice.

    No waiting for the menu to spread out: ``click_element`` dispatches the click to the slice itself,
    wherever it is drawn, and the spreading animation runs on the page's clock, not the turns' (on a quiet
    machine a wide menu takes more than the episode's ten turns to open, on a loaded one a stalled frame
    looks like a menu at rest).
    """
    spreader = next(n for n in page.dom if n.id.endswith("-spreadertitle"))
    if not page.clicked(spreader):
        return click(spreader)
    label = page.one("tspan", page.quoted())
    title = next(n for n in page.dom if n.tag == "text" and label in page.subtree(n))
    return click(page.by_id(title.id.replace("-title-", "-slice-")))
