"""One MiniWoB++ page in a Playwright browser context: serve it, start a seeded episode, act, read back.

The pages are served from the ``miniwob`` wheel by a Playwright route on the context, answered by
this process (``serve_directory`` of the browser sandbox): the browser asks for
``http://miniwob.invalid/miniwob/<task>.html`` and its scripts, the route reads them from the wheel,
and every other request is aborted. So the browser needs no
network and no files of its own (a sandboxed browser has neither), and a page cannot load anything
from anywhere else even where the browser does have a network (the local backend).

An episode starts the way MiniWoB's own Selenium env starts one: ``Math.seedrandom(seed)``,
``core.setDataMode('train')``, ``core.startEpisodeReal()``, then wait for ``WOB_TASK_READY``. The
page's own episode timer (10 s in core.js, after which it ends the episode with reward -1) is
stretched by default: a model that thinks for 20 s between clicks should not lose to a wall clock it
cannot see. The env's turn limit ends episodes that the page never ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from agentgym.envs.gui.tasks import html_root
from agentgym.errors import SandboxError, SandboxTimeout

if TYPE_CHECKING:
    from agentgym.sandboxes.browser import BrowserSandbox, PageFrames

ORIGIN = "http://miniwob.invalid"
"""The made-up origin the pages are served under (``.invalid`` never resolves)."""
WIDTH, HEIGHT = 160, 210
"""MiniWoB's task area in CSS pixels (``#wrap`` in core.css): what the screenshot shows."""
CLIP = (0, 0, WIDTH, HEIGHT)
VIEWPORT = {"width": 340, "height": 240}
"""The window: wide enough for the page's reward panel (left 165, 160 wide), so nothing scrolls sideways."""
NO_TIMER_MS = 2**31 - 1
"""The longest ``setTimeout`` delay browsers honour (about 24.8 days); longer ones fire at once."""

_START = """([seed, limitMs]) => {
  core.EPISODE_MAX_TIME = limitMs;
  Math.seedrandom(seed);
  core.setDataMode('train');
  core.startEpisodeReal();
}"""
_CLEAR_CLIPBOARD = """() => {
  const empty = event => { event.clipboardData.setData("text/plain", ""); event.preventDefault();
                           event.stopImmediatePropagation(); };
  window.addEventListener("copy", empty, true);
  try { return document.execCommand("copy"); } finally { window.removeEventListener("copy", empty, true); }
}"""
"""Empty the clipboard: a copy whose data is set to nothing, listened for and unlistened in one evaluation
(no page script runs in between). The clipboard is the browser's, not the context's: without this, what
one episode copied would be pasted in the next one on that browser, of any task or env."""
_STATUS = """({done: WOB_DONE_GLOBAL, reward: WOB_REWARD_GLOBAL, raw_reward: WOB_RAW_REWARD_GLOBAL,
  reason: WOB_REWARD_REASON == null ? null : String(WOB_REWARD_REASON), href: location.href})"""
_STATUS_OR_NULL = f"(() => {{ try {{ return {_STATUS}; }} catch (error) {{ return null; }} }})()"
"""The status, or null where the page cannot give it: read with a click, whose own failure is another matter."""
_DOM_WITH_OPTIONS = """(() => {
  const info = core.getDOMInfo();
  const UNLISTED = new Set(['reward-display', 'sync-task-cover', 'click-canvas', 'query']);  // as MiniWoB's
  const flat = element => {
    const box = element.getBoundingClientRect();
    return box.width === 0 || box.height === 0;
  };
  const refOf = element => {
    if (element.dataset.wob_ref === undefined || element.dataset.wob_eps !== 'e' + WOB_EPISODE_ID) {
      element.dataset.wob_ref = core.nextRefCode++;
      element.dataset.wob_eps = 'e' + WOB_EPISODE_ID;
    }
    const ref = +element.dataset.wob_ref;
    core.previousDOMInfo[ref] = element;
    return ref;
  };
  const listBox = element => element instanceof HTMLSelectElement && (element.multiple || element.size > 1);
  const clips = element => {
    if (listBox(element)) return true;
    const style = getComputedStyle(element);
    return style.overflowX !== 'visible' || style.overflowY !== 'visible';
  };
  const recovered = new Set();
  const shown = element => {  // what a person sees of an element MiniWoB left out for its zero-size box
    if (UNLISTED.has(element.id)) return undefined;
    if (!flat(element)) {
      const seen = core.previousDOMInfo;
      const subtree = core.getDOMInfo(element);  // refills core.previousDOMInfo with its subtree alone
      core.previousDOMInfo = Object.assign(seen, core.previousDOMInfo);
      return subtree;
    }
    if (clips(element) || !(element instanceof HTMLElement || element instanceof SVGElement)) return undefined;
    const children = Array.from(element.children, shown).filter(child => child !== undefined);
    if (children.length === 0) return undefined;
    const box = element.getBoundingClientRect();
    const node = {tag: element.tagName, ref: refOf(element), left: box.left, top: box.top, width: box.width,
                  height: box.height, children, id: element.id, classes: element.getAttribute('class') || ''};
    recovered.add(node);
    return node;
  };
  const recover = node => {
    const element = core.previousDOMInfo[node.ref];  // none for a run of text
    if (element === undefined) return;
    if (!recovered.has(node) && element.firstElementChild !== null) {
      const listed = node.children || [];
      const children = [];
      let next = 0;
      element.childNodes.forEach(child => {
        if (child instanceof Text) {
          while (next < listed.length && listed[next].tag === 't') children.push(listed[next++]);
        } else if (child instanceof Element) {
          if (next < listed.length && core.previousDOMInfo[listed[next].ref] === child) {
            children.push(listed[next++]);
          } else if (flat(child)) {
            const found = shown(child);
            if (found !== undefined) children.push(found);
          }
        }
      });
      node.children = children.concat(listed.slice(next));
    }
    (node.children || []).forEach(recover);
  };
  const hex = css => {
    const rgb = /^rgba?\\((\\d+), (\\d+), (\\d+)(?:, ([\\d.]+))?\\)$/.exec(css || '');
    if (rgb === null || (rgb[4] !== undefined && +rgb[4] === 0)) return null;
    return '#' + rgb.slice(1, 4).map(part => (+part).toString(16).padStart(2, '0')).join('');
  };
  const colour = (node, element) => {
    if (element instanceof SVGGeometryElement && !(element instanceof SVGLineElement)) {
      return hex(getComputedStyle(element).fill);
    }
    const leaf = !(node.children || []).length && !node.text && !('value' in node);
    return leaf && element instanceof HTMLElement ? hex(getComputedStyle(element).backgroundColor) : null;
  };
  const meet = (a, b) => {
    const left = Math.max(a.left, b.left), top = Math.max(a.top, b.top);
    return {left, top, width: Math.min(a.left + a.width, b.left + b.width) - left,
            height: Math.min(a.top + a.height, b.top + b.height) - top};
  };
  const option = (option, box) => ({tag: 'OPTION', ref: refOf(option), left: box.left, top: box.top,
                                     width: box.width, height: box.height, children: [], id: option.id,
                                     classes: option.className, text: option.text.trim(), value: option.selected});
  const walk = (node, clip) => {
    const element = core.previousDOMInfo[node.ref];  // none for a run of text
    if (clip !== null) {
      const seen = meet(node, clip);
      if (seen.width <= 0 || seen.height <= 0) node.hidden = true;
    }
    if (element instanceof HTMLSelectElement) {
      node.value = element.value;
      if (!listBox(element)) {
        node.children = Array.from(element.options, child => option(child, node));
        return;
      }
    } else if (element instanceof HTMLOptionElement) {
      node.value = element.selected;
    }
    const shade = element === undefined ? null : colour(node, element);
    if (shade !== null) node.color = shade;
    const inner = element !== undefined && clips(element) ? (clip === null ? node : meet(node, clip)) : clip;
    (node.children || []).forEach(child => walk(child, inner));
  };
  if (info) {
    recover(info);
    walk(info, null);
  }
  return info;
})()"""
"""``core.getDOMInfo()``, with what it leaves out that a person sees: what a zero-size box holds, each
``<select>``'s value and options, what lies out of view, and colours.

MiniWoB drops an element whose box has no width or no height together with everything in it, but its
children can show all the same: floated items in a list of no height (drag-items-grid), what a ``display:
contents`` wrapper holds. Such an element is listed here, in its place, with its own (empty) box, and
with the children that have a box of their own (and theirs); one that clips what overflows it shows nothing.

A closed drop-down's options have no box, so MiniWoB leaves them out: here they are its children, one
each, with a ref, its text, whether it is the chosen one (``value``) and the select's box (where a click
opens the list). Every element or text run whose box lies wholly outside the visible box of a scrolling
ancestor (an ``overflow`` other than ``visible``, a list box) is marked ``hidden``: MiniWoB gives such an
option of a scrolled list the box it would have below the list, where a click lands on what is there.
An SVG shape's fill, and the background of an element that shows nothing else (no text, children or
value: a coloured box), is its ``color`` (``#rrggbb``; none where it is transparent): the colour a shape
or swatch is picked by (drag-shapes-2's red shapes, click-color's box)."""
_CLICK_REF = """(ref => {
  const element = core.previousDOMInfo[ref];
  if (!(element instanceof HTMLOptionElement)) return core.elementClick(ref);
  const select = element.closest('select');
  if (select === null || select.disabled || element.disabled) return 'the option cannot be chosen (disabled)';
  core.canvasDrawElementClick(select);
  select.focus();
  element.selected = true;
  select.dispatchEvent(new Event('input', {bubbles: true}));
  select.dispatchEvent(new Event('change', {bubbles: true}));
  return true;
})"""
"""``core.elementClick(ref)``; for an ``<option>``, what choosing it from its open list does (a click on an
option selects nothing): it becomes the select's choice, and the select gets focus, ``input`` and ``change``,
as with Playwright's ``select_option``."""
DRAG_STEPS = 8
"""Mouse moves a pointer move is sent as: drag handlers (jQuery UI's, d3's) follow moves, and some start a drag
only past a few pixels of them; a move to the same point is as many moves that go nowhere."""
CALL_SECONDS = 30.0
"""How long one call on the page (an action, a read) may take before the page counts as hung: far above
what any takes on a busy machine (milliseconds; typing the most ``type`` allows, a few seconds)."""
MAX_REASON_CHARS = 300
MAX_UTTERANCE_CHARS = 2000
T = TypeVar("T")
FAILED = -1.0
"""MiniWoB's reward for a failed episode: what a page that cannot be judged any more scores."""


class PageHung(SandboxError):
    """A call on the page did not finish within :data:`CALL_SECONDS` (its script loops, or its input is wedged)."""


@dataclass(frozen=True)
class Status:
    """The page's verdict on the episode: ``done``, the raw reward (-1..1) and the time-scaled one.

    ``broken`` says why the env judged the episode instead of the page: the page could not give a
    status that holds (its globals are not MiniWoB's kinds or range, it left the task's URL, it hung
    or threw). Only the page's own script can do that, and model text is never run as script
    (:func:`page_policy`), so it stands as a failure, never as no grade.
    """

    done: bool
    raw_reward: float
    reward: float
    reason: str | None
    broken: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"done": self.done, "raw_reward": self.raw_reward, "reward": self.reward, "reason": self.reason,
                "broken": self.broken}

    @classmethod
    def failed(cls, why: str) -> Status:
        """The episode ended as a failure because the page could not be judged (``why``)."""
        why = why[:MAX_REASON_CHARS]
        return cls(True, FAILED, FAILED, f"the page could not be judged: {why}", broken=why)

    @classmethod
    def read(cls, raw: Any, task: str) -> Status:
        """From the value of :data:`_STATUS` in the page of ``task``; :meth:`failed` unless every field holds.

        ``done`` must be a boolean, the rewards finite numbers in MiniWoB's range [-1, 1], the reason
        text or null, and the page still the task's (its URL but for a fragment).
        """
        if not isinstance(raw, dict):
            return cls.failed("its status is not an object")
        href = raw.get("href")
        # A fragment (a link to "#", as search-engine's results are) stays in the same document: still the task's.
        if not isinstance(href, str) or href.split("#", 1)[0] != task_url(task):
            return cls.failed(f"it left the task's page (now at {str(raw.get('href'))[:100]!r})")
        done, reason = raw.get("done"), raw.get("reason")
        if not isinstance(done, bool):
            return cls.failed(f"its done flag is {_shown(done)}, not a boolean")
        rewards = []
        for field in ("raw_reward", "reward"):
            value = raw.get(field)
            if isinstance(value, bool) or not isinstance(value, int | float) or not -1 <= value <= 1:
                return cls.failed(f"its {field} is {_shown(value)}, not a number in [-1, 1]")
            rewards.append(float(value))
        if reason is not None and not isinstance(reason, str):
            return cls.failed(f"its reason is {_shown(reason)}, not text")
        return cls(done, rewards[0], rewards[1], None if reason is None else reason[:MAX_REASON_CHARS])


def _shown(value: Any) -> str:
    """A page's value in a failure reason: its repr, cut short (the page chose it)."""
    return repr(value)[:40]


def task_url(name: str) -> str:
    return f"{ORIGIN}/miniwob/{name}.html"


async def serve_miniwob(context: Any) -> None:
    """Route every request of ``context`` (a Playwright ``BrowserContext``): the wheel's files, or abort.

    The catch-all abort is registered first; Playwright tries the latest route first, so requests
    under :data:`ORIGIN` are answered from the wheel and nothing else leaves the browser. Every page
    comes with its Content-Security-Policy (``csp.py``): no text typed into it runs as script, it runs
    only its own script files, and it opens no window; no page of the context keeps a frame (``NO_FRAMES``).
    """
    from agentgym.envs.gui.csp import NO_FRAMES, content_security_policy
    from agentgym.sandboxes.browser import abort_all, serve_directory

    await abort_all(context)
    await serve_directory(context, html_root(), ORIGIN, headers=content_security_policy)
    await context.add_init_script(NO_FRAMES)


async def open_task(browser: BrowserSandbox, context: Any, task: str) -> MiniWoBPage:
    """Route ``context`` (fresh, of ``browser``) to the wheel and load task ``task`` in a new page of it."""
    await serve_miniwob(context)
    page = await context.new_page()
    loaded = MiniWoBPage(page, task, browser.frames(page))
    await loaded.load()
    return loaded


class MiniWoBPage:
    """A MiniWoB task page: start seeded episodes, act with mouse and keyboard, read status and DOM.

    Actions go through the page's frames (:meth:`BrowserSandbox.frames`): a browser that draws
    frames on demand draws them while an action waits for one, and for each screenshot. Clicks and
    reads of the page (status, DOM, instruction) go straight to Chromium on the page's direct
    session (``frames.session()``, see ``sandboxes/browser/direct.py``), not through Playwright's
    driver: a step's click and its status read are two round trips of about half a millisecond.

    Args:
        page: A Playwright ``Page`` whose context :func:`serve_miniwob` routes.
        task: The task's name (``click-button``).
        frames: The page's frames, from its browser sandbox.
    """

    def __init__(self, page: Any, task: str, frames: PageFrames) -> None:
        self.page = page
        self.task = task
        self.frames = frames

    async def load(self) -> None:
        """Load the task's page (no episode yet) and warm it up.

        What a new page does once, on first use, is done here, so that a page prepared in the
        background starts its first episode as fast as a used one: Playwright compiles its injected
        script (tens of ms) for the first ``wait_for_function``, the page's direct session is
        opened (two Playwright round trips), and the first frame rasters the whole page. None of it
        touches the task's state.
        """
        await self.page.goto(task_url(self.task), wait_until="load")
        await self.page.wait_for_function("() => true", polling=5)
        await self.frames.session()
        await self.frames.draw()

    async def start(self, seed: int, *, time_limit_ms: int | None = None) -> None:
        """Load the page if needed and start a new episode from ``seed``; wait until the task is ready.

        The wait polls every 5 ms on a timer, not on animation frames (which a browser that draws on
        demand does not draw by itself).
        """
        if self.page.url != task_url(self.task):
            await self.load()
        await self._bounded(self.page.evaluate(_START, [seed, time_limit_ms or NO_TIMER_MS]), "the episode's start")
        await self.page.wait_for_function("() => WOB_TASK_READY === true", polling=5, timeout=10_000)
        await self.clear_clipboard()

    async def clear_clipboard(self) -> None:
        """Empty the browser's clipboard, which outlives contexts; every episode starts with nothing to paste.

        Raises:
            SandboxError: The browser did not empty it (an episode would start with the last one's text).
        """
        if not await self._bounded(self.page.evaluate(_CLEAR_CLIPBOARD), "clearing the clipboard"):
            raise SandboxError(f"the browser did not empty its clipboard for {self.task}")

    async def utterance(self) -> str:
        """The instruction the page shows (``core.getUtterance()``)."""
        text = await self._evaluate("core.getUtterance()")
        return str(text["utterance"] if isinstance(text, dict) else text)[:MAX_UTTERANCE_CHARS]

    async def status(self) -> Status:
        """The page's status as :meth:`Status.read` takes it (a failure when it does not hold).

        Raises:
            SandboxError: The page threw reading it, or did not answer (:class:`PageHung`).
        """
        return Status.read(await self._evaluate(_STATUS), self.task)

    async def dom(self) -> dict[str, Any]:
        """``core.getDOMInfo()``: the visible element tree with refs and boxes, and every select's options;
        refreshes the refs."""
        dom: dict[str, Any] = await self._evaluate(_DOM_WITH_OPTIONS)
        return dom

    async def screenshot(self) -> bytes:
        """The task area as PNG (on demand: a frame drawn now, which also runs animation-frame callbacks)."""
        return await self._bounded(self.frames.screenshot(CLIP), "a screenshot")

    async def draw(self) -> None:
        """Draw a frame (on demand), so what waits for one has run before the page is read."""
        await self._bounded(self.frames.draw(), "a frame")

    async def click(self, x: float, y: float) -> Status | None:
        """A trusted left click at (x, y): mouse move, press and release, as Playwright's ``mouse.click``;
        the page's status once it has handled the click (read in the same write when it can be), or
        None when the page cannot say (:meth:`status` then raises why, as after any other action)."""
        session = await self.frames.session()
        raw = await self._answered(session.click(x, y, then=_STATUS_OR_NULL, timeout=CALL_SECONDS), "a click")
        return None if raw is None else Status.read(raw, self.task)

    async def click_ref(self, ref: int) -> str | None:
        """Click an element by the ref of the last :meth:`dom` the way MiniWoB does (an option: choose it); an
        error text if it failed."""
        result = await self._evaluate(f"{_CLICK_REF}({int(ref)})")
        return None if result is True else str(result)[:MAX_REASON_CHARS]

    async def _evaluate(self, expression: str) -> Any:
        session = await self.frames.session()
        return await self._answered(session.evaluate(expression, timeout=CALL_SECONDS), "a read of the page")

    async def type(self, text: str) -> None:
        await self._bounded(self.frames.run(self.page.keyboard.type(text)), "typing")

    async def press(self, key: str) -> None:
        await self._bounded(self.frames.run(self.page.keyboard.press(key)), "a key press")

    async def pointer(self, button: str | None, x: float, y: float) -> None:
        """The mouse moved to (x, y) in :data:`DRAG_STEPS` moves (a drag handler sees it travel), then
        pressed (``button`` ``"down"``), released (``"up"``) or neither (None)."""
        await self._bounded(self.frames.run(self._pointer(button, x, y)), "a mouse move")

    async def _pointer(self, button: str | None, x: float, y: float) -> None:
        mouse = self.page.mouse
        await mouse.move(x, y, steps=DRAG_STEPS)
        if button == "down":
            await mouse.down()
        elif button == "up":
            await mouse.up()

    async def scroll(self, dx: float, dy: float, x: float, y: float) -> None:
        await self._bounded(self.frames.run(self._scroll(dx, dy, x, y)), "a scroll")

    async def _scroll(self, dx: float, dy: float, x: float, y: float) -> None:
        await self.page.mouse.move(x, y)
        await self.page.mouse.wheel(dx, dy)

    async def _answered(self, call: Awaitable[T], what: str) -> T:
        """``call``, a command on the page's direct session sent with :data:`CALL_SECONDS` as its own deadline
        (no timer of this process's beside it: the two calls of a step stay cheap).

        Raises:
            PageHung: The page did not answer in time.
        """
        try:
            return await call
        except SandboxTimeout as e:
            raise PageHung(f"the page did not finish {what} within {CALL_SECONDS:g} s") from e

    async def _bounded(self, call: Awaitable[T], what: str) -> T:
        """``call``, given :data:`CALL_SECONDS` before the page counts as hung.

        Raises:
            PageHung: It did not finish in time (the call is cancelled).
        """
        deadline = asyncio.timeout(CALL_SECONDS)
        try:
            async with deadline:
                return await call
        except TimeoutError as e:
            if not deadline.expired():
                raise
            raise PageHung(f"the page did not finish {what} within {CALL_SECONDS:g} s") from e
