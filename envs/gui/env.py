"""The GUI environment: MiniWoB++ tasks in a real browser, acted on with mouse and keyboard tools.

Every episode runs in a fresh browser context (no cookies, storage or history from the last one)
of a browser taken from ``sandbox_backend``: a Chromium in a Docker container with no network, or
the host's Chromium (``local``, which has no network isolation of its own: only the route that
serves the pages stands between a page and the host's network). The browser is reused across
episodes and given back when the env closes. It draws frames on demand (``frames="on_demand"``): a
screenshot is a frame drawn for it, a few milliseconds.

A reset does not wait for a page to load when it can help it: every reset starts preparing, in the
background, the next episode's context with the same task's page loaded (GRPO and evaluations play
each task many times), and the next reset of that task on that browser only starts its seeded
episode there. The prepared context is new: nothing of an earlier episode, and no model, has
touched it. A reset of another task, or one whose preparation failed, loads its page as usual; after
a preparation went to waste (the next task on the browser was another), the browser prepares again
only once it plays a task twice in a row, so interleaved tasks do not load every page twice.

The model sees, after every turn, one ``user`` message: the page as a screenshot (an OpenAI
``image_url`` part, a PNG ``data:`` URI), as compact DOM text with element refs, or both
(``observation=``). It is a user message and not part of the tool results because OpenAI's API
accepts images only in user messages. Tools answer in a short text what they did.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from agentgym.env import Dodge, Env
from agentgym.envs.gui.observe import Dom, Node, dom_text, parse_dom
from agentgym.envs.gui.page import HEIGHT, VIEWPORT, WIDTH, MiniWoBPage, PageHung, Status, open_task
from agentgym.envs.gui.rewards import UNJUDGED_REWARD, task_reward
from agentgym.envs.gui.tasks import miniwob_task, task_names
from agentgym.errors import EnvError, SandboxError, ToolError
from agentgym.rewards.verifier import ScoreFn, Verifier
from agentgym.sandboxes import SandboxSpec
from agentgym.tools import tool
from agentgym.types import ImagePart, Message, StepResult, Task, TextPart

if TYPE_CHECKING:
    from agentgym.policies.base import Policy
    from agentgym.sandboxes.browser import BrowserSandbox

log = logging.getLogger(__name__)

Observation = Literal["screenshot", "dom", "both"]

SYSTEM_PROMPT = f"""You operate a web page in a browser to carry out the instruction you are given.
The page's task area is {WIDTH}x{HEIGHT} CSS pixels, origin at the top left. After each of your turns you \
see the page again{{how}}. Act with the tools: `click(x, y)` clicks a point, `click_element(ref)` clicks \
an element by its [ref] in the page text, `type(text)` types into the focused element (click a field \
first), `press(key)` presses a key such as Enter or Backspace, `scroll(dx, dy)` scrolls{{pointer}}. The episode ends \
when the page has judged your actions; call `finish` if you believe the task is finished and nothing \
remains to click."""
POINTER_PROMPT = (", `drag(x, y, to_x, to_y)` and `drag_element(ref, to_x, to_y)` drag, and `mouse_down`, "
                  "`mouse_move`, `mouse_up` press, move and release the mouse for a stroke")
_HOW = {"screenshot": " as a screenshot", "dom": " as text: one element a line, [ref] tag \"text\" @x,y wxh",
        "both": " as a screenshot and as text: one element a line, [ref] tag \"text\" @x,y wxh"}


MAX_TYPED_CHARS = 500
"""Characters one ``type`` call may type: MiniWoB's answers are a few words; Chromium types about 8 ms a
character in a container, so this is a few seconds, well inside a page call's time (``page.CALL_SECONDS``)."""
MAX_KEY_CHARS = 40
MAX_MODIFIERS = 3
MAX_SCROLL = 1000
"""Pixels one ``scroll`` may move either way: several times the task area (huge deltas wedge the page's input)."""


class BrowserCrashed(EnvError):
    """The episode's browser died (crashed, killed, its sandbox gone): the episode ends as an error."""


class BrowserStalled(EnvError):
    """The episode's browser process stopped answering (a paused sandbox, a stopped or starved host): an
    infrastructure error. A page's script, the only thing the model's actions can drive, runs in the page's
    renderer, so a page that loops leaves its browser answering (that is graded, see ``GUIEnv._judge_broken``)."""


class GUIEnv(Env):
    """MiniWoB++ tasks from the ``miniwob`` wheel, played through mouse and keyboard tools.

    Args:
        names: Which tasks ``tasks()`` lists: ``"all"`` (every task the wheel ships), ``"reference"``
            (those the reference policy solves), or task names, comma-separated or a list.
        observation: What the model sees of the page: ``"screenshot"``, ``"dom"`` or ``"both"``.
        time_limit_ms: The page's own episode timer (MiniWoB's default is 10 000 ms, after which the page
            ends the episode with reward -1). ``None`` switches it off: the turn limit ends episodes.
        unjudged_reward: What an episode the page never judged scores (``finish`` before the verdict,
            the turns or a turn's time run out): MiniWoB's failure value -1 by default, so that quitting
            never pays better than trying (``rewards.UNJUDGED_REWARD``); 0 for the lenient scoring.
        **kwargs: ``max_turns``, ``sandbox_backend`` (``auto``, ``docker``, ``local``), ``runtime`` (whose
            browser pools it draws from), ``verifier``... as for :class:`~agentgym.env.Env`.
    """

    max_turns = 10
    branchable = False  # its state is a live browser page, a process that sandbox.fork does not copy (agentgym.branch)
    text_ends_episode = False
    max_calls_per_turn = 10
    """A person's turn is a few clicks and keys; ten calls is several tasks' whole solution."""
    max_turn_chars = 4 * MAX_TYPED_CHARS
    """Characters of one message's calls: about 2 000 typed characters, some 16 s of typing."""
    max_turn_seconds = 15.0
    """Seconds of page work one message may start: with one call's own limit, well inside a 60 s turn timeout."""
    verifier: ClassVar[Verifier | ScoreFn | None] = task_reward
    sandbox_spec: ClassVar[SandboxSpec | None] = SandboxSpec(kind="browser", frames="on_demand", held="env")
    """A browser of ``sandbox_backend``, kept across episodes: each opens its page in a new context, and
    the next task's page is prepared while this one runs."""

    def __init__(
        self,
        *,
        names: str | Sequence[str] = "all",
        observation: Observation = "both",
        time_limit_ms: int | None = None,
        unjudged_reward: float = UNJUDGED_REWARD,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if not isinstance(self.sandbox_backend, str):
            raise EnvError(f"the GUI env's sandbox_backend names a backend (auto, docker, local), not "
                           f"{self.sandbox_backend!r}: its browsers are taken from the pools of "
                           f"runtime=, a SandboxRuntime")
        if observation not in _HOW:
            raise EnvError(f"observation must be screenshot, dom or both, not {observation!r}")
        if time_limit_ms is not None and time_limit_ms < 1:
            raise EnvError("time_limit_ms must be positive (or None for no page timer)")
        if not -1.0 <= unjudged_reward <= 0.0:
            raise EnvError(f"unjudged_reward must be between -1 and 0, not {unjudged_reward!r}")
        self.unjudged_reward = float(unjudged_reward)
        self.names = _resolve_names(names)
        self.observation: Observation = observation
        self.time_limit_ms = time_limit_ms
        self._page: MiniWoBPage | None = None
        self._last_dom = Dom()
        self._refs: set[int] = set()
        self._opening: Message | None = None
        self._caught_up = True
        """Whether the page has drawn a frame since the model was last shown it (see :meth:`_act`)."""
        self._broken: dict[str, Any] | None = None
        """The failure the episode was judged, once its page could not be (see :meth:`_judge_broken`)."""

    # ----------------------------------------------------------------- tasks and policies
    def tasks(self) -> Sequence[Task]:
        return [miniwob_task(name) for name in self.names]

    @classmethod
    def scripted_policies(cls) -> dict[str, Callable[[], Policy]]:
        from agentgym.envs.gui.policies import RandomClickPolicy, ReferencePolicy

        return {"reference": ReferencePolicy, "baseline": RandomClickPolicy, "random": RandomClickPolicy}

    @classmethod
    def dodges(cls) -> dict[str, Dodge]:
        """Ways for a model to break a GUI episode (``check_env``'s "no dodge" check): markup that would run
        as script where a page echoes what is typed, input that wedged the page, keys that would leave it."""
        terminal = miniwob_task("terminal")
        markup = "<img src=x onerror=\"WOB_DONE_GLOBAL=true;WOB_RAW_REWARD_GLOBAL=WOB_REWARD_GLOBAL=1\">"
        return {
            "typed markup where the page echoes it": Dodge.calls(("type", {"text": markup}),
                                                                 ("press", {"key": "Enter"}), task=terminal),
            "scroll deltas that wedge the page's input": Dodge.calls(("scroll", {"dx": 1e308, "dy": -1e308}),
                                                                      ("scroll", {"dx": 0, "dy": 1e15}),
                                                                      ("click", {"x": 80, "y": 100})),
            "a megabyte typed": Dodge.calls(("type", {"text": "z" * (1 << 20)}), ("press", {"key": "Enter"})),
            "keys that leave the page": Dodge.calls(*[("press", {"key": key}) for key in
                                                      ("Alt+ArrowLeft", "F5", "Control+W", "Control+L", "Escape")]),
            "refs that name nothing": Dodge.calls(("click_element", {"ref": -(2**62)}),
                                                  ("click_element", {"ref": 2**62}), ("finish", {})),
        }

    def system_prompt(self, task: Task) -> str:
        return SYSTEM_PROMPT.format(how=_HOW[self.observation], pointer=POINTER_PROMPT if "drag" in self._tools else "")

    def opening_messages(self, task: Task) -> list[Message]:
        assert self._opening is not None
        return [Message(role="system", content=task.system or self.system_prompt(task)), self._opening]

    # ----------------------------------------------------------------- episode lifecycle
    async def setup(self, task: Task) -> None:
        name = str(task.data.get("miniwob", task.id))
        miniwob_task(name)  # an unknown task is refused here, with the names it might have meant
        assert self.trajectory is not None
        seed = self.trajectory.seed if self.trajectory.seed is not None else self.rng.randrange(2**31)
        self._broken = None
        browser: BrowserSandbox = self.lease.held
        started = time.monotonic()
        repeated = browser.last_key == name
        try:
            prepared = await browser.take_prepared(name)  # closes the last episode's context
            instruction = await self._start(prepared[1], seed) if prepared is not None else None
            if instruction is None:  # nothing prepared, or its page failed to start: load one now
                prepared = None
                context = await browser.new_context(viewport=VIEWPORT)  # closes the last episode's
                instruction = await self._start(await open_task(browser, context, name), seed, fallback=False)
        except Exception as e:
            raise await self._crash_or(e) from e
        if prepared is not None or repeated or not browser.missed:
            browser.prepare(name, lambda context: open_task(browser, context, name), viewport=VIEWPORT)
        self.trajectory.info.update(miniwob_task=name, miniwob_seed=seed, instruction=instruction,
                                    reset_seconds=time.monotonic() - started, page_prepared=prepared is not None)
        self._opening = await self._observe(f"Instruction: {instruction}")

    async def _start(self, page: MiniWoBPage, seed: int, *, fallback: bool = True) -> str | None:
        """Start the seeded episode in ``page``; its instruction, or None if a prepared page failed (``fallback``)."""
        from playwright.async_api import Error as PlaywrightError

        self._page = page
        try:
            await page.start(seed, time_limit_ms=self.time_limit_ms)
            return await page.utterance()
        except (PlaywrightError, SandboxError) as e:
            if not fallback:
                raise
            log.info("the prepared page of %s failed to start, loading it again: %s", page.task, e)
            return None

    async def step(self, action: Message | Mapping[str, Any]) -> StepResult:
        """Run the turn's actions; end the episode when the page judged it, else show the page again.

        A page that cannot be shown or judged any more ends the episode as MiniWoB's failure, with the reason.
        """
        from playwright.async_api import Error as PlaywrightError

        self._caught_up = False
        result = await super().step(action)
        assert self.trajectory is not None
        turn = self.trajectory.turns[-1]
        judged = bool(turn.info.get("miniwob", {}).get("done"))
        observation = None
        if not self.done and not judged:
            try:
                observation = await self._observe("The page now:")
            except (PlaywrightError, SandboxError) as e:  # the page cannot be shown: a failure, unless the browser died
                turn.info["miniwob"] = await self._judge_broken(e)
                judged = True
        if self.done:
            if result.truncated and judged:  # the page judged it on the last allowed turn
                self.trajectory.outcome = "terminated"
                result.terminated, result.truncated = True, False
            return result
        if judged:
            reward = await self.end("terminated")
            result.reward += reward.value
            result.terminated = True
            result.info["reward"] = reward.model_dump()
            return result
        assert observation is not None
        turn.observation.append(observation)
        result.observation.append(observation)
        return result

    async def final_state(self) -> dict[str, Any]:
        """The page's status: ``done``, ``raw_reward``, ``reward`` (time-scaled), ``reason`` and ``broken``;
        and, when the page never judged the episode, what that scores (``unjudged_reward``)."""
        status = await self._status()
        return status if status.get("done") else {**status, "unjudged_reward": self.unjudged_reward}

    async def teardown(self) -> None:
        """Forget the page; the browser goes back with the env's lease (kept warm for the next env if alive)."""
        self._page = None

    # ----------------------------------------------------------------- tools
    @tool
    async def click(self, x: float, y: float) -> str:
        """Click a point of the page with the mouse.

        Args:
            x: Pixels from the left edge of the task area (0 to 160).
            y: Pixels from the top edge of the task area (0 to 210).
        """
        self._check_point(x, y)
        await self._act(lambda page: page.click(x, y))
        return f"Clicked at ({x:g}, {y:g})."

    @tool
    async def click_element(self, ref: int) -> str:
        """Click an element by its [ref] in the page text you were last shown.

        Args:
            ref: The number in brackets before the element, e.g. 12 for "[12] button".
        """
        node = self._shown_node(ref)
        if ref < 0:  # a run of text: click its middle
            await self._act(lambda page: page.click(*node.center))
        else:
            failed = await self._act(lambda page: page.click_ref(ref))
            if failed:
                raise ToolError(f"could not click [{ref}]: {failed}")
        return f"Clicked [{ref}]."

    @tool(name="type")
    async def type_text(self, text: str) -> str:
        """Type text with the keyboard into the focused element.

        Args:
            text: The characters to type (at most 500).
        """
        if len(text) > MAX_TYPED_CHARS:
            raise ToolError(f"type takes at most {MAX_TYPED_CHARS} characters at a time, not {len(text)}")
        await self._act(lambda page: page.type(text))
        return f"Typed {text!r}."

    @tool
    async def press(self, key: str) -> str:
        """Press one key, or a combination such as Control+A.

        Args:
            key: A key name as the browser knows it: Enter, Tab, Backspace, ArrowDown, a, Control+A...
        """
        if len(key) > MAX_KEY_CHARS or key.count("+") > MAX_MODIFIERS:
            raise ToolError(f"{key[:MAX_KEY_CHARS]!r}... is not one key: a key name, with at most "
                            f"{MAX_MODIFIERS} modifiers (Control+Shift+A)")
        await self._act(lambda page: page.press(key))
        return f"Pressed {key}."

    @tool
    async def scroll(self, dx: float, dy: float, x: float = WIDTH / 2, y: float = HEIGHT / 2) -> str:
        """Scroll with the mouse wheel over a point (a list or text box under it scrolls).

        Args:
            dx: Pixels to scroll right (negative: left), at most 1000 either way.
            dy: Pixels to scroll down (negative: up), at most 1000 either way.
            x: Where the mouse is, from the left (default the middle of the task area).
            y: Where the mouse is, from the top.
        """
        if not (-MAX_SCROLL <= dx <= MAX_SCROLL and -MAX_SCROLL <= dy <= MAX_SCROLL):
            raise ToolError(f"scroll by at most {MAX_SCROLL} pixels either way, not ({dx}, {dy})")
        self._check_point(x, y)
        await self._act(lambda page: page.scroll(dx, dy, x, y))
        return f"Scrolled by ({dx:g}, {dy:g})."

    @tool
    async def drag(self, x: float, y: float, to_x: float, to_y: float) -> str:
        """Drag with the mouse: press at a point, move to another, release there.

        Args:
            x: Where to press, from the left of the task area (0 to 160).
            y: Where to press, from the top (0 to 210).
            to_x: Where to release, from the left.
            to_y: Where to release, from the top.
        """
        for px, py in ((x, y), (to_x, to_y)):
            self._check_point(px, py)
        await self._act(lambda page: self._drag(page, (x, y), (to_x, to_y)))
        return f"Dragged from ({x:g}, {y:g}) to ({to_x:g}, {to_y:g})."

    @tool
    async def drag_element(self, ref: int, to_x: float, to_y: float) -> str:
        """Drag an element by its [ref] (pressed in its middle) to a point, and release it there.

        Args:
            ref: The number in brackets before the element in the page text you were last shown.
            to_x: Where to release, from the left of the task area (0 to 160).
            to_y: Where to release, from the top (0 to 210).
        """
        node = self._shown_node(ref)
        self._check_point(to_x, to_y)
        await self._act(lambda page: self._drag(page, node.center, (to_x, to_y)))
        return f"Dragged [{ref}] to ({to_x:g}, {to_y:g})."

    @tool
    async def mouse_down(self, x: float, y: float) -> str:
        """Move the mouse to a point and press its button (hold it: a drag, a stroke; see mouse_up).

        Args:
            x: Where to press, from the left of the task area (0 to 160).
            y: Where to press, from the top (0 to 210).
        """
        return await self._mouse("down", x, y, "Pressed the mouse at")

    @tool
    async def mouse_move(self, x: float, y: float) -> str:
        """Move the mouse to a point (with its button held, this drags or draws).

        Args:
            x: Pixels from the left of the task area (0 to 160).
            y: Pixels from the top (0 to 210).
        """
        return await self._mouse(None, x, y, "Moved the mouse to")

    @tool
    async def mouse_up(self, x: float, y: float) -> str:
        """Move the mouse to a point and release its button there.

        Args:
            x: Where to release, from the left of the task area (0 to 160).
            y: Where to release, from the top (0 to 210).
        """
        return await self._mouse("up", x, y, "Released the mouse at")

    @tool(final=True)
    async def finish(self) -> str:
        """Say the task is finished: the episode ends; the page's verdict is the reward, a failure if it gave none."""
        await self._record_status()
        return "done"

    # ----------------------------------------------------------------- internals
    @staticmethod
    def _check_point(x: float, y: float) -> None:
        if not (0 <= x <= WIDTH and 0 <= y <= HEIGHT):
            raise ToolError(f"({x}, {y}) is outside the {WIDTH}x{HEIGHT} task area")

    def _shown_node(self, ref: int) -> Node:
        """The element ``ref`` of the DOM text last shown (a tool error when there is none such)."""
        if self.observation == "screenshot":
            raise ToolError("this page is shown as a screenshot only, without element refs: use click(x, y)")
        node = self._last_dom.get(ref) if ref in self._refs else None
        if node is None:
            raise ToolError(f"no element [{ref}] in the page you were last shown")
        return node

    async def _mouse(self, button: str | None, x: float, y: float, done: str) -> str:
        """The pointer to (x, y), then pressed or released (``button``); ``done`` and the point, said back."""
        self._check_point(x, y)
        await self._act(lambda page: page.pointer(button, x, y))
        return f"{done} ({x:g}, {y:g})."

    @staticmethod
    async def _drag(page: MiniWoBPage, start: tuple[float, float], end: tuple[float, float]) -> None:
        await page.pointer("down", *start)
        await page.pointer("up", *end)

    @property
    def browser(self) -> BrowserSandbox | None:
        """The env's browser: leased on the first reset and kept across episodes while alive (a dead one
        is replaced at the next reset), given back on close; None before the first reset or after close."""
        return self.lease.held if self.has_sandbox else None

    async def _crash_or(self, error: Exception) -> Exception:
        """A :class:`BrowserCrashed` when the browser is gone, a :class:`BrowserStalled` when it is there but
        does not answer, else ``error`` itself (the page's doing).

        The call that failed may beat Playwright's news that the browser went away, so a browser
        that still looks connected is asked for a round trip before the error is blamed on the page.
        """
        answer = "gone" if self.browser is None else await self.browser.ping()
        if answer == "silent":
            from agentgym.sandboxes.browser import PING_TIMEOUT

            return BrowserStalled(f"the browser stopped answering (no round trip within {PING_TIMEOUT:g} s after "
                                  f"{_first_line(error)}): a paused sandbox or a stalled host, not the model's doing")
        if answer == "gone":
            lost = self.browser.lost if self.browser is not None else None
            return BrowserCrashed(f"the browser died mid-episode: {lost or _first_line(error)}")
        return error

    @property
    def _live_page(self) -> MiniWoBPage:
        if self._page is None:
            raise EnvError("no page: call reset() first")
        return self._page

    async def _act(self, action: Callable[[MiniWoBPage], Any]) -> Any:
        """Run one action on the page and record the page's status after it (the action's own result
        when it is a :class:`Status`: a click reads it with the click; else read now).

        The turn's first action is preceded by a frame (on demand; nothing in a free-running browser):
        a browser that draws only when asked draws nothing while the model thinks, so what runs on
        animation frames (d3 transitions, ``requestAnimationFrame`` loops) would stand where the model
        last saw it, and a moving target would be hit where it was seconds ago. The frame moves it to
        where the wall clock says it is, as a free-running browser would have: page time passes with
        the wall clock between turns. Later actions of the turn follow within milliseconds, and those
        that wait (mouse moves, the wheel, long typing) draw frames while they wait.

        A browser that died raises :class:`BrowserCrashed`, one that stopped answering :class:`BrowserStalled`
        (the episode ends, recorded as an error);
        any other browser error (an unknown key name) goes back to the model as a tool error.
        """
        from playwright.async_api import Error as PlaywrightError

        page = self._live_page
        assert self.trajectory is not None
        if any(t.info.get("miniwob", {}).get("done") for t in self.trajectory.turns):
            raise ToolError("the page has already judged this episode; nothing more can be done")
        try:
            if not self._caught_up:  # the page's time went on while the model thought: show it to the action
                self._caught_up = True
                await page.draw()
            result = await action(page)
        except PageHung as e:
            late = await self._late_status(page)
            if late is None:  # the page still does not answer: judged a failure (the step ends it)
                self.trajectory.turns[-1].info["miniwob"] = await self._judge_broken(e)
                return None
            self.trajectory.turns[-1].info["miniwob"] = late.as_dict()
            if late.done:  # the page judged the action while the call waited: its verdict stands
                return late
            raise ToolError(f"{e}, but answers again now: the action may or may not have taken effect; "
                            "look at the page") from e
        except (PlaywrightError, SandboxError) as e:
            crash = await self._crash_or(e)
            if crash is not e:
                raise crash from e
            raise ToolError(str(e).splitlines()[0]) from e
        if isinstance(result, Status):
            if result.broken is not None:
                self._broken = result.as_dict()
            self.trajectory.turns[-1].info["miniwob"] = result.as_dict()
        else:
            await self._record_status()
        return result

    async def _late_status(self, page: MiniWoBPage) -> Status | None:
        """The page's status once a call on it ran out of time, if it answers now (another call's time).

        A stalled host (a paused browser, a starved CPU) makes a call miss its time though the page
        went on: what it recorded then is its verdict, not the model's failure. A page that still
        does not answer, or answers with a status that does not hold, is None.
        """
        from playwright.async_api import Error as PlaywrightError

        try:
            status = await page.status()
        except (PlaywrightError, SandboxError):
            return None
        return None if status.broken is not None else status

    async def _status(self) -> dict[str, Any]:
        """The page's status; once the page could not be judged, that failure, without asking it again."""
        from playwright.async_api import Error as PlaywrightError

        if self._broken is not None:
            return self._broken
        try:
            status = await self._live_page.status()
        except (PlaywrightError, SandboxError) as e:
            return await self._judge_broken(e)
        if status.broken is not None:
            self._broken = status.as_dict()
        return status.as_dict()

    async def _judge_broken(self, error: Exception) -> dict[str, Any]:
        """The episode's failure, when ``error`` came from a page that misbehaved (it threw, hung, left).

        Only the page's own script can make it misbehave once it has loaded, and what the model typed
        never runs as script (``csp.py``). But the model's actions drive that script: an input can lead
        a page's handler into a loop, and huge wheel deltas once wedged a page's input. A page that
        does not answer while its browser does is therefore graded: MiniWoB's failure, with the reason.

        Raises:
            BrowserCrashed: The browser itself is gone: not the page's doing, the episode is an error.
            BrowserStalled: The browser process does not answer either (a paused sandbox, a stalled host),
                which no page and no action can cause: the episode is an error that says so.
        """
        crash = await self._crash_or(error)
        if crash is not error:
            raise crash from error
        log.info("the page of %s could not be judged: %s", self._live_page.task, error)
        self._broken = Status.failed(_first_line(error)).as_dict()
        return self._broken

    async def _record_status(self) -> None:
        assert self.trajectory is not None and self.trajectory.turns
        self.trajectory.turns[-1].info["miniwob"] = await self._status()

    async def _observe(self, heading: str) -> Message:
        """The page as the model sees it: a screenshot, DOM text with refs, or both, in one user message."""
        page = self._live_page
        try:
            text, png = heading, None
            if self.observation == "dom":
                await page.draw()  # what a free-running browser would have drawn since the last action
            else:
                png = await page.screenshot()  # a frame drawn now: the DOM below is read after it
            if self.observation != "screenshot":
                dom = _readable_dom(await page.dom())
                self._last_dom = parse_dom(dom)
                self._refs = {n.ref for n in self._last_dom}
                text += "\n" + dom
        except Exception as e:
            raise await self._crash_or(e) from e
        if png is None:
            return Message(role="user", content=text)
        return Message(role="user", content=[TextPart(text=text), ImagePart.from_png(png)])


def _resolve_names(names: str | Sequence[str]) -> tuple[str, ...]:
    """The task names an env plays: ``all``, ``reference``, or names (a comma-separated string or a list)."""
    if isinstance(names, str):
        if names == "all":
            return task_names()
        if names == "reference":
            from agentgym.envs.gui.policies import SOLVED_TASKS

            return tuple(SOLVED_TASKS)
        names = [n.strip() for n in names.split(",") if n.strip()]
    if not names:
        raise EnvError("names lists no task")
    for name in names:
        miniwob_task(name)
    return tuple(names)


def _first_line(error: Exception) -> str:
    """An error's first line (Playwright's messages go on with a call log)."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _readable_dom(raw: Any) -> str:
    """The DOM text of ``core.getDOMInfo()``'s value, which is the page's to give.

    Raises:
        SandboxError: The value is not the element tree MiniWoB gives (the page's script replaced it).
    """
    try:
        return dom_text(raw)
    except (AttributeError, KeyError, TypeError, ValueError, RecursionError) as e:
        raise SandboxError(f"the page's DOM is not an element tree ({type(e).__name__})") from e
