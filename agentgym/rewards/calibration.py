"""Calibration: a reward for stating how sure you are, scored by a proper scoring rule.

The final answer carries a stated confidence in [0, 1], read by :func:`stated_confidence` from, in
order: a ``confidence`` argument of the episode's last tool call (an env may give its final tool
one), or a ``<confidence>0.8</confidence>`` tag (or a ``Confidence: 80%`` line) in the last
assistant message or the final answer. The tag needs no change to any env, so the code, search and
MCP envs all accept it: the model writes it beside its final call.

:class:`Calibration` scores it against correctness with the Brier rule, ``1 − (c − y)²``, or the
log rule, ``1 + ln p(y) / ln 100`` with ``p(y)`` clipped at 0.01 (the reward of "Beyond Binary Rewards" / the
confidence-dichotomy paper's calibration term). Both are proper: a policy right 70 % of the time
scores highest in expectation by saying 0.7, so always saying 0.5, or always 1.0, is worse than
honest confidence. An episode that states no confidence scores 0, the worst either rule gives.
:func:`calibration_report` turns many episodes into ECE and a reliability diagram's bins.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

from agentgym.parsing import parse_tool_calls
from agentgym.rewards.verifier import Episode, VerifierLike, as_verifier
from agentgym.types import Reward, Trajectory

_TAG = re.compile(r"<confidence>\s*([0-9]*\.?[0-9]+)\s*(%?)\s*</confidence>", re.IGNORECASE)
_LINE = re.compile(r"(?im)^\s*confidence\s*[:=]\s*([0-9]*\.?[0-9]+)\s*(%?)\s*$")


def _as_probability(number: str, percent: str) -> float | None:
    value = float(number) / (100.0 if percent else 1.0)
    return value if 0.0 <= value <= 1.0 else None


def _from_text(text: str) -> float | None:
    found = _TAG.findall(text) or _LINE.findall(text)
    return _as_probability(*found[-1]) if found else None


def stated_confidence(trajectory: Trajectory) -> float | None:
    """The confidence the model stated with its final answer, or ``None`` (none, or not in [0, 1]).

    Only the end of the episode is read: a confidence stated in an early turn and never repeated is
    not one the final answer carries.
    """
    last = next((t.action for t in reversed(trajectory.turns) if t.action.role == "assistant"), None)
    if last is not None:
        calls = parse_tool_calls(last)
        if calls and "confidence" in calls[-1].arguments:
            raw = calls[-1].arguments["confidence"]
            if isinstance(raw, int | float) and not isinstance(raw, bool):
                return float(raw) if 0.0 <= raw <= 1.0 else None
            return _from_text(f"<confidence>{raw}</confidence>") if isinstance(raw, str) else None
        found = _from_text(last.text)
        if found is not None:
            return found
    return _from_text(trajectory.final_answer or "")  # raw: final_text drops the tag


LOG_FLOOR = 0.01
"""The log rule clips the probability given to what happened here, so its reward stays in [0, 1]; it is
an affine map of the log score, so still proper for confidences in [0.01, 0.99]."""


def proper_score(confidence: float, correct: bool, rule: Literal["brier", "log"] = "brier") -> float:
    """The reward in [0, 1] of saying ``confidence`` when the answer was ``correct``."""
    p = confidence if correct else 1.0 - confidence
    if rule == "brier":
        return 1.0 - (1.0 - p) ** 2
    if rule == "log":
        return 1.0 + math.log(max(p, LOG_FLOOR)) / -math.log(LOG_FLOOR)
    raise ValueError(f"unknown scoring rule {rule!r}: brier or log")


class Calibration:
    """A proper scoring rule of the stated confidence against the ``correct`` verifier's verdict.

    ``correct`` scores of 0.5 or more count as right. Components: ``confidence`` (−1 when none was
    stated) and ``correct``, which :func:`agentgym.evaluation.metrics.summarize` reads to report ECE.

    Args:
        correct: The verifier that says whether the answer was right.
        rule: ``"brier"`` (bounded, forgiving) or ``"log"`` (punishes confident mistakes harder).
    """

    name = "calibration"

    def __init__(self, *, correct: VerifierLike, rule: Literal["brier", "log"] = "brier") -> None:
        proper_score(0.5, True, rule)  # refuses an unknown rule now, not at the first score
        self.correct, self.rule = correct, rule

    async def score(self, episode: Episode) -> Reward:
        right = (await as_verifier(self.correct).score(episode)).value >= 0.5
        confidence = stated_confidence(episode.trajectory)
        value = 0.0 if confidence is None else proper_score(confidence, right, self.rule)
        stated = -1.0 if confidence is None else confidence
        return Reward(value=value, components={"confidence": stated, "correct": float(right)})


class ReliabilityBin(BaseModel):
    """One bin of a reliability diagram: stated confidences in ``[low, high)`` and how often they were right."""

    low: float
    high: float
    count: int
    mean_confidence: float
    accuracy: float


class CalibrationReport(BaseModel):
    """Expected calibration error over the episodes that stated a confidence, and the diagram's bins."""

    stated: int
    unstated: int
    ece: float
    bins: list[ReliabilityBin]

    def diagram(self) -> str:
        """The reliability diagram as text: one row per non-empty bin."""
        return "\n".join(f"  [{b.low:.1f}, {b.high:.1f})  n={b.count:<4d} conf {b.mean_confidence:.2f}  "
                         f"acc {b.accuracy:.2f}  " + "#" * round(20 * b.accuracy) for b in self.bins if b.count)


def calibration_report(confidences: Sequence[float | None], correct: Sequence[bool], *,
                       bins: int = 10) -> CalibrationReport:
    """ECE (equal-width bins, weighted by count) of ``confidences`` against ``correct``.

    ``None`` confidences (nothing stated) are counted in ``unstated`` and left out of the ECE.
    """
    if len(confidences) != len(correct):
        raise ValueError("confidences and correct differ in length")
    pairs = [(c, y) for c, y in zip(confidences, correct, strict=True) if c is not None and 0.0 <= c <= 1.0]
    out, ece = [], 0.0
    for b in range(bins):
        low, high = b / bins, (b + 1) / bins
        inside = [(c, y) for c, y in pairs if low <= c < high or (b == bins - 1 and c == 1.0)]
        conf = sum(c for c, _ in inside) / len(inside) if inside else 0.0
        acc = sum(y for _, y in inside) / len(inside) if inside else 0.0
        ece += len(inside) / len(pairs) * abs(conf - acc) if pairs else 0.0
        out.append(ReliabilityBin(low=low, high=high, count=len(inside), mean_confidence=conf, accuracy=acc))
    return CalibrationReport(stated=len(pairs), unstated=len(confidences) - len(pairs), ece=ece, bins=out)


def calibration_reports(components: Sequence[dict[str, float]]) -> dict[str, CalibrationReport]:
    """A report per :class:`Calibration` found in trajectories' ``reward_components``, by criterion name.

    A calibration criterion records ``<name>.confidence`` (−1: none stated) and ``<name>.correct``
    inside a rubric, or bare ``confidence`` and ``correct`` as an env's whole verifier (name ``""``).
    """
    prefixes = {key[: -len("confidence")] for c in components for key in c if key.endswith("confidence")}
    out = {}
    for prefix in sorted(prefixes):
        keys = (f"{prefix}confidence", f"{prefix}correct")
        rows = [c for c in components if all(k in c for k in keys)]
        if rows and (prefix == "" or prefix.endswith(".")):
            confidences = [None if c[keys[0]] < 0 else c[keys[0]] for c in rows]
            out[prefix.rstrip(".")] = calibration_report(confidences, [c[keys[1]] >= 0.5 for c in rows])
    return out
