"""``gui-predict``: score one predicted action against a recorded page, offline, with UI-R1's components.

Each task is one record of an ``agentgym gui dataset`` file: the model sees the instruction and the
page (screenshot, DOM text with refs, or both) as the GUI env would show it, and answers with one
call of the GUI env's action tools. Nothing runs: the call is recorded, the episode ends, and the
verifier scores it against the gold action (``action_type``, ``click_in_box``, ``format``; each 0 or
1, weighted 1/3 so a fully right action scores 1). No browser is needed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from agentgym.env import Dodge, Env
from agentgym.envs.gui.dataset import read_records
from agentgym.envs.gui.env import GUIEnv, Observation
from agentgym.envs.gui.observe import parse_dom
from agentgym.envs.gui.rewards import ACTION_TYPES, action_format, action_type, click_in_box
from agentgym.errors import EnvError
from agentgym.rewards import Rubric
from agentgym.rewards.verifier import ScoreFn, Verifier
from agentgym.types import ImagePart, Message, StepResult, Task, TextPart

if TYPE_CHECKING:
    from agentgym.policies.base import Policy

UI_R1 = Rubric({"action_type": action_type, "click_in_box": click_in_box, "format": action_format},
               weights={"action_type": 1 / 3, "click_in_box": 1 / 3, "format": 1 / 3}, name="ui_r1")
"""UI-R1's rule-based action reward, scaled to 0..1: type right, click in the box, format valid."""


class GUIPredictEnv(GUIEnv):
    """One turn per record: predict the next action on a recorded page; scored by :data:`UI_R1`.

    Args:
        path: An ``agentgym gui dataset`` JSONL file (``--tasks`` gives the same through :meth:`load_tasks`).
        observation: What the model sees: ``"screenshot"``, ``"dom"`` or ``"both"``.
        **kwargs: ``verifier`` (e.g. a :class:`~agentgym.rewards.Rubric` of other weights)... as for ``Env``.
    """

    max_turns = 1
    verifier: ClassVar[Verifier | ScoreFn | None] = UI_R1
    sandbox_spec = None  # no page runs: a recorded one is shown

    def __init__(self, *, path: str | Path | None = None, observation: Observation = "both", **kwargs: Any) -> None:
        kwargs.setdefault("verifier", UI_R1)
        super().__init__(names=["click-button"], observation=observation, **kwargs)
        self.path = Path(path) if path is not None else None

    def tasks(self) -> Sequence[Task]:
        if self.path is None:
            raise EnvError("gui-predict needs a dataset: path=FILE (from `agentgym gui dataset`) or --tasks FILE")
        return self.load_tasks(self.path)

    @classmethod
    def load_tasks(cls, path: str | Path) -> list[Task]:
        """The records of an ``agentgym gui dataset`` file, one task each."""
        return read_records(path)

    @classmethod
    def scripted_policies(cls) -> dict[str, Callable[[], Policy]]:
        from agentgym.envs.gui.policies import RandomClickPolicy, ReferencePolicy

        return {"reference": ReferencePolicy, "baseline": RandomClickPolicy, "random": RandomClickPolicy}

    @classmethod
    def dodges(cls) -> dict[str, Dodge]:
        """None of the live env's: no page runs here (one predicted action is scored); check_env's own apply."""
        return {}

    async def setup(self, task: Task) -> None:
        if "gold" not in task.data:
            raise EnvError(f"task {task.id!r} is not a GUI action record (no data.gold)")
        dom, screenshot = str(task.data.get("dom", "")), task.data.get("screenshot")
        self._last_dom = parse_dom(dom)
        self._refs = {n.ref for n in self._last_dom}
        text = f"Instruction: {task.prompt}"
        if self.observation != "screenshot":
            text += "\n" + dom
        if self.observation == "dom":
            self._opening = Message(role="user", content=text)
        elif not screenshot:
            raise EnvError(f"record {task.id!r} has no screenshot; use observation='dom'")
        else:
            image = ImagePart(image_url={"url": str(screenshot)})
            self._opening = Message(role="user", content=[TextPart(text=text), image])

    async def step(self, action: Message | Mapping[str, Any]) -> StepResult:
        """Record the predicted action (nothing runs) and end the episode with its score."""
        result = await Env.step(self, action)
        if not self.done:
            reward = await self.end("terminated")
            result.reward += reward.value
            result.info["reward"] = reward.model_dump()
        assert self.trajectory is not None
        self.trajectory.outcome = "terminated"  # one prediction is the whole episode, never cut short
        result.terminated, result.truncated = True, False
        return result

    async def final_state(self) -> dict[str, Any]:
        return {}

    async def _act(self, action: Callable[..., Any]) -> None:
        """A prediction is recorded, not performed."""
        return None

    async def _record_status(self) -> None:
        return None


GUIPredictEnv._tools = {name: tool for name, tool in GUIPredictEnv._tools.items()
                        if name in ACTION_TYPES or name == "finish"}
"""The live env's tools but the pointer ones: a record is one click, key or text, never a drag to score."""
