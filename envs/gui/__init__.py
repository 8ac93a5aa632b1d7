"""GUI: MiniWoB++ tasks in a real browser, with screenshot and DOM observations and UI-R1 action rewards.

    env = agentgym.make("gui", names="click-button,enter-text", observation="both")
    env = agentgym.make("gui-predict", path="runs/gui-actions.jsonl")   # score one predicted action
"""

from agentgym.envs.gui.env import BrowserCrashed, BrowserStalled, GUIEnv
from agentgym.envs.gui.observe import Dom, Node, dom_text, parse_dom
from agentgym.envs.gui.rewards import action_format, action_type, click_in_box, score_action, task_reward
from agentgym.envs.gui.tasks import miniwob_task, task_names

__all__ = [
    "BrowserCrashed",
    "BrowserStalled",
    "Dom",
    "GUIEnv",
    "Node",
    "action_format",
    "action_type",
    "click_in_box",
    "dom_text",
    "miniwob_task",
    "parse_dom",
    "score_action",
    "task_names",
    "task_reward",
]
