"""GUI rewards: the MiniWoB task's own verdict, and UI-R1-style components for one predicted action.

:func:`task_reward` is the GUI env's verifier: the raw reward the page gave (1 solved, -1 failed,
fractions for partly right answers on a few tasks); an episode the page never judged (``finish`` before
its verdict, the turns run out) scores the env's ``unjudged_reward``, MiniWoB's failure value -1 by default.

The action-prediction components follow UI-R1 (Lu et al., 2025): a rule-based reward for one action
given the screen and the instruction, the sum of

- ``action_type``: the predicted action is of the gold action's type (``click``, ``type``, ``press``,
  ``scroll``, ``finish``);
- ``click_in_box``: for a gold click, the predicted point lies inside the target element's box (a
  ``click_element`` of the target's ref counts; so does one whose element's centre lies in the box);
  for other gold actions, the predicted argument equals the gold one (the typed text, the key), and
  a scroll goes the gold one's way on each axis by about its amount;
- ``format``: the reply was exactly one well-formed call of a known action tool.

Each is a verifier over an :class:`~agentgym.rewards.Episode` of the ``gui-predict`` env, so they
compose through :class:`~agentgym.rewards.Rubric` like any other component; :func:`score_action`
computes all three from plain values.
"""

from __future__ import annotations

import json
from typing import Any

from agentgym.envs.gui.observe import parse_dom
from agentgym.rewards import Episode
from agentgym.types import Reward, Trajectory

ACTION_TYPES = {"click": "click", "click_element": "click", "type": "type", "press": "press",
                "scroll": "scroll", "finish": "finish"}
"""Tool name → action type; ``click`` and ``click_element`` are both clicks."""


def last_status(trajectory: Trajectory) -> dict[str, Any] | None:
    """The page status the env recorded last (``turn.info["miniwob"]``), for scoring a saved trajectory."""
    for turn in reversed(trajectory.turns):
        if "miniwob" in turn.info:
            return dict(turn.info["miniwob"])
    return None


UNJUDGED_REWARD = -1.0
"""What an episode the page never judged scores by default: MiniWoB's failure value.

MiniWoB has no give-up: its timer ends an unfinished episode with -1. Were quitting (or running out
the turns) worth 0, any attempt with under even odds would lose to it, and RL would learn to give up."""


def task_reward(episode: Episode) -> Reward:
    """The MiniWoB task's own reward: the page's raw reward once it ended the episode, else the unjudged reward.

    The unjudged reward is the env's ``unjudged_reward`` (recorded in its final state as
    ``unjudged_reward``), :data:`UNJUDGED_REWARD` for a saved trajectory scored again. Components:
    ``task`` (the same value), ``done`` (1 when the page ended the episode) and ``time_scaled``
    (the page's time-discounted reward, meaningful only with the page's timer on).
    """
    status = episode.state if isinstance(episode.state, dict) else last_status(episode.trajectory)
    if not status or not status.get("done"):
        value = float((status or {}).get("unjudged_reward", UNJUDGED_REWARD))
        return Reward(value=value, components={"task": value, "done": 0.0, "time_scaled": value},
                      info={"miniwob_reason": "the page never judged the episode"})
    raw = float(status["raw_reward"])
    return Reward(value=raw, components={"task": raw, "done": 1.0, "time_scaled": float(status["reward"])},
                  info={"miniwob_reason": status.get("reason")})


def _point_of(name: str, args: dict[str, Any], dom_text: str) -> tuple[float, float] | None:
    """Where a predicted click lands: its point, or the centre of the element it names."""
    if name == "click":
        try:
            return float(args["x"]), float(args["y"])
        except (KeyError, TypeError, ValueError):
            return None
    ref = args.get("ref")
    node = parse_dom(dom_text).get(ref) if isinstance(ref, int) else None
    return node.center if node is not None else None


def score_action(calls: list[dict[str, Any]], gold: dict[str, Any], dom_text: str = "") -> dict[str, float]:
    """UI-R1 components for predicted ``calls`` (``{"name", "arguments"}`` dicts) against ``gold``.

    ``gold`` is a record's gold action: ``type``, and ``box`` (x, y, w, h) and ``ref`` for a click,
    ``text`` for type, ``key`` for press. ``dom_text`` resolves a predicted ``click_element`` ref.
    """
    valid = len(calls) == 1 and calls[0]["name"] in ACTION_TYPES and isinstance(calls[0]["arguments"], dict)
    out = {"format": float(valid), "action_type": 0.0, "click_in_box": 0.0}
    if not valid:
        return out
    name, args = calls[0]["name"], calls[0]["arguments"]
    kind = ACTION_TYPES[name]
    if kind != gold["type"]:
        return out
    out["action_type"] = 1.0
    if kind == "click":
        if name == "click_element" and args.get("ref") == gold.get("ref"):
            out["click_in_box"] = 1.0
        else:
            point = _point_of(name, args, dom_text)
            x, y, w, h = gold["box"]
            out["click_in_box"] = float(point is not None and x <= point[0] <= x + w and y <= point[1] <= y + h)
    elif kind in ("type", "press"):
        field = "text" if kind == "type" else "key"
        out["click_in_box"] = float(args.get(field) == gold.get(field))
    elif kind == "scroll":
        out["click_in_box"] = float(_same_scroll(args, gold))
    else:
        out["click_in_box"] = 1.0
    return out


SCROLL_TOLERANCE_PX = 50.0
"""How far a predicted scroll's delta may be from the gold one (or half the gold delta, if more)."""


def _same_scroll(args: dict[str, Any], gold: dict[str, Any]) -> bool:
    """A predicted scroll goes the gold scroll's way on each axis, by about its amount.

    Each delta has the gold one's sign (where the gold one is not 0) and lies within :data:`SCROLL_TOLERANCE_PX`, or
    half the gold delta if more, of it: a scroll down is no answer to a scroll up.
    """
    try:
        wanted = json.loads(gold.get("arguments") or "{}")
        pairs = [(float(args.get(axis, 0.0)), float(wanted.get(axis, 0.0))) for axis in ("dx", "dy")]
    except (TypeError, ValueError, AttributeError):
        return False
    return all((g == 0 or p * g > 0) and abs(p - g) <= max(SCROLL_TOLERANCE_PX, abs(g) / 2) for p, g in pairs)


def _components(episode: Episode) -> dict[str, float]:
    """The three components of a gui-predict episode (one turn, one predicted action)."""
    trajectory = episode.trajectory
    turn = trajectory.turns[0] if trajectory.turns else None
    calls: list[dict[str, Any]] = []
    if turn is not None and not turn.tool_errors:
        for call in turn.action.tool_calls:
            try:
                calls.append({"name": call.name, "arguments": json.loads(call.arguments or "{}")})
            except ValueError:
                calls.append({"name": call.name, "arguments": None})
    if turn is not None and turn.tool_errors:
        calls = [{"name": "", "arguments": None}]
    data = episode.task.data
    return score_action(calls, data["gold"], data.get("dom", ""))


def action_type(episode: Episode) -> float:
    """UI-R1's action-type reward: the predicted action is of the gold action's type."""
    return _components(episode)["action_type"]


def click_in_box(episode: Episode) -> float:
    """UI-R1's coordinate reward: the click lands in the target's box (or the typed text / key is the gold one)."""
    return _components(episode)["click_in_box"]


def action_format(episode: Episode) -> float:
    """UI-R1's format reward: exactly one well-formed call of a known action tool."""
    return _components(episode)["format"]
