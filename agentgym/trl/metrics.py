"""What a batch's episodes did, beyond their reward, as metrics in TRL's logs.

Both paths log the same columns through TRL's public ``log_metric`` (the callable every reward
function receives), each averaged over the batch's episodes:

- ``env/turns``: turns per episode;
- ``env/tool_calls``: tool calls answered per episode (error answers included);
- ``env/tool_errors/<kind>``: errors per episode for each :data:`~agentgym.types.ToolErrorKind`
  (``malformed_json``, ``unknown_tool``, ``invalid_arguments``, ``tool_raised``, ``no_tool_call``);
- ``env/crashed``: the fraction of episodes the env crashed (no reward, no advantage);
- ``env/components/<name>``: each reward component, averaged over the episodes that were scored.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import get_args

from agentgym.types import ToolErrorKind, Trajectory

ERROR_KINDS: tuple[str, ...] = get_args(ToolErrorKind)


def episode_metrics(trajectory: Trajectory | None, failure: str | None) -> dict[str, float]:
    """One episode's metrics; ``trajectory`` is ``None`` when the env crashed before the episode began."""
    out = {"env/crashed": float(failure is not None)}
    if trajectory is None:
        return out
    out["env/turns"] = float(len(trajectory.turns))
    out["env/tool_calls"] = float(sum(m.role == "tool" for turn in trajectory.turns for m in turn.observation))
    errors = trajectory.tool_errors
    for kind in ERROR_KINDS:
        out[f"env/tool_errors/{kind}"] = float(errors.get(kind, 0))
    if failure is None:  # a crashed episode was never scored: its components would be stale or missing
        for name, value in trajectory.reward_components.items():
            out[f"env/components/{name}"] = float(value)
    return out


def log_batch(log_metric: Callable[[str, float], None], episodes: Sequence[dict[str, float]]) -> None:
    """Log each metric's mean over the episodes that report it."""
    for key in sorted({k for e in episodes for k in e}):
        values = [e[key] for e in episodes if key in e]
        log_metric(key, sum(values) / len(values))
