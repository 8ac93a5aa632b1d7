"""Solvers of form tasks: focus a field, type into fields, tick checkboxes and radios, then submit."""

from __future__ import annotations

import re

from agentgym.envs.gui.observe import Node
from agentgym.envs.gui.solvers.base import (
    Action,
    Page,
    click,
    fill,
    fill_then_submit,
    inputs,
    labelled,
    press,
    solves,
    submit_button,
)


@solves("click-checkboxes", "click-checkboxes-transfer")
def click_checkboxes(page: Page) -> Action:
    listed = page.match(r"Select (.*) and click Submit")[1]
    wanted = set() if listed == "nothing" else {w.strip() for w in re.split(r",| and ", listed) if w.strip()}
    for text, box in labelled(page, "input_checkbox").items():
        if ((text in wanted) != page.wrong) != bool(box.value):
            return click(box)
    return click(submit_button(page))


@solves("click-option")
def click_option(page: Page) -> Action:
    wanted = page.match(r"Select (.*) and click Submit")[1]
    radios = labelled(page, "input_radio")
    radio = page.choose(radios.values(), lambda n: radios.get(wanted) == n)
    return click(submit_button(page)) if radio.value else click(radio)


@solves("choose-list")
def choose_list(page: Page) -> Action:
    """Choose the option named (``click_element`` on an option chooses it), then Submit."""
    wanted = page.match(r"Select (.*) from the list")[1]
    option = page.choose(page.dom.find(tag="option"), lambda n: n.text == wanted)
    return click(submit_button(page)) if option.value else click(option)


@solves("focus-text")
def focus_text(page: Page) -> Action | None:
    field = inputs(page)[0]
    return None if field.focused or page.wrong else click(field)


@solves("focus-text-2")
def focus_text_2(page: Page) -> Action | None:
    index = int(page.match(r"(\d+)(?:st|nd|rd|th)")[1]) - 1
    field = page.choose(inputs(page), lambda n: n == inputs(page)[index])
    return None if field.focused else click(field)


@solves("enter-text", "enter-text-dynamic")
def enter_text(page: Page) -> Action:
    return fill_then_submit(page, [(inputs(page)[0], page.quoted())], submit_button(page))


@solves("enter-text-2")
def enter_text_2(page: Page) -> Action:
    text = page.quoted()
    text = text.lower() if "lower case" in page.instruction else text.upper()
    return fill_then_submit(page, [(inputs(page)[0], text)], submit_button(page))


@solves("enter-password")
def enter_password(page: Page) -> Action:
    password = page.quoted()
    return fill_then_submit(page, [(field, password) for field in inputs(page)], submit_button(page))


@solves("login-user")
def login_user(page: Page) -> Action:
    username, password = page.quoted(0), page.quoted(1)
    fields = inputs(page)
    return fill_then_submit(page, [(fields[0], username), (fields[1], password)], submit_button(page))


@solves("login-user-popup")
def login_user_popup(page: Page) -> Action:
    """As login-user, but first dismiss the popup that focusing a field may raise (its OK ends the episode)."""
    cancel = [n for n in page.dom if n.id == "popup-cancel"]
    if cancel:
        return click(cancel[0])
    fields = inputs(page)
    return fill_then_submit(page, [(fields[0], page.quoted(0)), (fields[1], page.quoted(1))], page.by_id("subbtn"))


@solves("enter-date")
def enter_date(page: Page) -> Action:
    """Type the date's digits into the date field's first segment (month), which moves on by itself."""
    month, day, year = page.match(r"Enter (\d+)/(\d+)/(\d+)").groups()
    field = page.by_id("tt")
    if not field.value:
        if page.wrong:
            day = "02" if int(day) == 1 else "01"
        return typed_into_first_segment(page, field, f"{int(month):02d}{int(day):02d}{year}")
    return click(submit_button(page))


@solves("enter-time")
def enter_time(page: Page) -> Action:
    """Type hours, minutes and AM/PM into the time field's segments."""
    hours, minutes, half = page.match(r"Enter (\d+):(\d+) ([AP]M)").groups()
    field = page.by_id("tt")
    if not field.value:
        hour = int(hours) % 12 + 1 if page.wrong else int(hours)
        return typed_into_first_segment(page, field, f"{hour:02d}{minutes}{half[0]}")
    return click(submit_button(page))


def typed_into_first_segment(page: Page, field: Node, text: str) -> Action:
    """Click the left end of a date or time field (its first segment), then type ``text``."""
    if page.count("click") == 0:
        x, y, _, h = field.box
        return "click", {"x": x + 6, "y": y + h / 2}
    return "type", {"text": text}


@solves("form-sequence-2")
def form_sequence_2(page: Page) -> Action:
    radio_index, number, field_index = page.match(r'Check the (\d)\w\w radio.*"(-?\d+)" into the (\d)\w\w').groups()
    radio = [n for n in page.dom if n.tag == "input_radio"][int(radio_index) - 1]
    if not radio.value:
        return click(radio)
    field = page.choose(inputs(page), lambda n: n == inputs(page)[int(field_index) - 1])
    return fill_then_submit(page, [(field, number)], submit_button(page))


@solves("use-autocomplete", "use-autocomplete-nodelay")
def use_autocomplete(page: Page) -> Action:
    """Type the start, open the suggestions, enter the one with the right end, submit.

    ArrowDown opens the suggestions at once: typing opens them only after the page's delay (300 ms
    on use-autocomplete), which a few quick turns can all fall inside. The suggestion is typed in
    full rather than clicked: the list may run below the task area, and a click picks the item the
    menu has active (the one under the mouse or the keyboard's), not always the one clicked.
    """
    start = page.quoted(0)
    end = page.quoted(1) if page.instruction.count('"') >= 4 else ""
    field = page.by_id("tags")
    suggested = last_suggestions(page)
    if suggested:
        fitting = [text for text in suggested if text.startswith(start) and text.endswith(end)]
        others = [text for text in suggested if text not in fitting]
        if page.wrong:  # another suggestion, or when all fit, a text that is none of them
            pick = others[0] if others else page.text(fitting[0])
        else:
            pick = fitting[0]
        return fill(page, field, pick) or click(submit_button(page))
    return fill(page, field, start) or press("ArrowDown")


def last_suggestions(page: Page) -> list[str]:
    """The suggestions of the latest page that showed any (they stay found once the list closes)."""
    for dom in (page.dom, *reversed(page.earlier)):
        shown = [n.text for n in dom if "ui-menu-item-wrapper" in n.classes]
        if shown:
            return shown
    return []


@solves("use-spinner")
def use_spinner(page: Page) -> Action:
    """Step the focused spinner with the keyboard (PageUp/PageDown: 10, ArrowUp/ArrowDown: 1), then submit."""
    wanted = int(page.match(r"Select (-?\d+) with the spinner")[1]) + page.wrong
    spinner = page.by_id("spinner")
    if not spinner.focused:
        return click(spinner)
    gap = wanted - int(str(spinner.value) or 0)
    if gap:
        return press(("Page" if abs(gap) > 5 else "Arrow") + ("Up" if gap > 0 else "Down"))
    return click(submit_button(page))


@solves("form-sequence-3")
def form_sequence_3(page: Page) -> Action:
    """Open the drop-down (its ▾), pick the option, then click the button named."""
    wanted = page.match(r"Choose (.+) from the dropdown")[1]
    shown = next(n for n in page.dom if "label" in n.classes)
    picked = bool(shown.text) if page.wrong else shown.text == wanted  # wrong: any other option, once
    if not picked:
        options = [n for n in page.dom if n.tag == "li" and n.text]
        if not options:
            return click(page.exact("b", "▾"))
        return click(page.choose(options, lambda n: n.text == wanted))
    return click(page.exact("button", page.quoted()))


@solves("sign-agreement")
def sign_agreement(page: Page) -> Action:
    """Scroll the agreement until the form is enabled, then sign with the name and press the button named.

    The page enables the name field and the Agree button once its text area is scrolled to the end,
    and the DOM text says neither how long the text is (150 to 300 words: two scrolls of 1000 px do
    not always reach the end) nor how far it is scrolled: so scroll, click the name field, and scroll
    again while the click leaves it unfocused (a disabled field takes no focus). "Click the cancel
    button." needs no scrolling (Cancel is never disabled); its wrong play presses Agree, once enabled.
    """
    cancel_only = '"' not in page.instruction
    if cancel_only and not page.wrong:
        return click(page.exact("button", "Cancel"))
    name = page.by_id("name")
    if not name.focused and not name.value:  # not known to be enabled yet
        if page.history[-1:] and page.history[-1][0] == "scroll":
            return click(name)
        x, y = page.by_id("text-area").center
        return "scroll", {"dx": 0, "dy": 1000, "x": x, "y": y}
    if cancel_only:
        return click(page.exact("button", "Agree"))
    return fill_then_submit(page, [(name, page.quoted(0))], page.exact("button", page.quoted(1)))


SLIDER_KEYS = {"ArrowRight": 1, "ArrowLeft": -1, "PageUp": 4, "PageDown": -4}
"""What each key moves form-sequence's slider by (its range is -10 to 10: a page is a fifth of it)."""


def presses(gap: int) -> int:
    """The fewest slider key presses that move it by ``gap``."""
    return min(abs(pages) + abs(gap - 4 * pages) for pages in range(-6, 7))


@solves("form-sequence")
def form_sequence(page: Page) -> Action:
    """Move the focused slider with the keyboard to the number, tick the checkbox, then submit."""
    wanted, box = page.match(r"Select (-?\d+) with the slider, click the (\d)\w\w checkbox").groups()
    handle = next(n for n in page.dom if "ui-slider-handle" in n.classes)
    value = int(page.by_id("val").text)
    target = int(wanted) + page.wrong
    if value != target:
        if not handle.focused:
            return click(handle)
        key = min(SLIDER_KEYS, key=lambda k: presses(target - max(-10, min(10, value + SLIDER_KEYS[k]))))
        return press(key)
    checkbox = page.by_id(f"checkbox-{box}")
    return click(submit_button(page)) if checkbox.value else click(checkbox)


MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")


@solves("choose-date-easy", "choose-date-medium")
def choose_date(page: Page) -> Action:
    """Open the date picker (its field is read-only), page its calendar to the month, click the day, submit.

    choose-date and choose-date-nodelay are left out: their dates span 2016 and the calendar opens
    on December, so January is 11 pages back, more turns than an episode has.
    """
    month, day, _ = page.match(r"Select (\d\d)/(\d\d)/(\d{4}) as the date").groups()
    field = page.by_id("datepicker")
    if field.value:
        return click(submit_button(page))
    shown = [n for n in page.dom if "ui-datepicker-month" in n.classes]
    if not shown:
        return click(field)
    gap = int(month) - 1 - MONTHS.index(shown[0].text)
    if gap:
        return click(next(n for n in page.dom if f"ui-datepicker-{'next' if gap > 0 else 'prev'}" in n.classes))
    days = [n for n in page.dom if n.tag == "a" and "ui-state-default" in n.classes]
    return click(page.choose(days, lambda n: n.text == str(int(day))))
