"""Reusable reward components: format validity, ToolRL-style tool-call match, exact answer.

Each is a plain scoring function (or a factory returning one), so each can stand alone as an env's
verifier or be a named criterion of a :class:`~agentgym.rewards.Rubric`.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from typing import Any

from agentgym.errors import DataError
from agentgym.parsing import parse_tool_calls
from agentgym.rewards.verifier import Episode, final_text
from agentgym.types import Reward, Task

FORMAT_ERRORS = frozenset({"malformed_json", "unknown_tool", "invalid_arguments", "no_tool_call"})
"""Tool errors that mean the model wrote a bad action (not that a well-formed call failed)."""


def format_valid(episode: Episode) -> Reward:
    """1.0 when every action was well formed: parseable calls to known tools with valid arguments.

    A tool that ran and raised a :class:`~agentgym.errors.ToolError` is not a format error: the call
    was right, the world said no. An episode with no turns scores 0.
    """
    turns = episode.trajectory.turns
    bad = [kind for turn in turns for kind in turn.tool_errors if kind in FORMAT_ERRORS]
    ok = bool(turns) and not bad
    return Reward(value=float(ok), info={"format_errors": bad} if bad else {})


def answer_format(pattern: str) -> Any:
    """A criterion: 1.0 when the final answer text matches ``pattern`` (``re.fullmatch``, DOTALL)."""
    compiled = re.compile(pattern, re.DOTALL)

    def answer_format(episode: Episode) -> float:
        return float(compiled.fullmatch(final_text(episode.trajectory)) is not None)

    return answer_format


_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """Lower-case, drop punctuation and articles, squeeze spaces (SQuAD's normalisation)."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def gold_answers(task: Task) -> list[str]:
    """The task's accepted answers: ``task.data["answer"]``, one value or a list of them, as strings.

    ``answer`` is the one field every answer-checking part of agentgym reads (:func:`exact_answer`,
    :class:`~agentgym.rewards.LLMJudge`'s reference, the search env's F1).

    Raises:
        DataError: the task has no ``answer`` (the message names a misspelt ``answers``).
    """
    gold = task.data.get("answer")
    if gold is None or gold == []:
        hint = " (it has data['answers']: the field is 'answer', a value or a list)" if "answers" in task.data else ""
        raise DataError(f"task {task.id!r} has no gold answer in data['answer']{hint}")
    return [str(g) for g in gold] if isinstance(gold, list | tuple) else [str(gold)]


def exact_answer(episode: Episode) -> float:
    """1.0 when the final answer equals one of :func:`gold_answers` after :func:`normalize_answer`."""
    answer = normalize_answer(final_text(episode.trajectory))
    return float(any(answer == normalize_answer(g) for g in gold_answers(episode.task)))


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def score_tool_calls(predicted: Sequence[dict[str, Any]], gold: Sequence[dict[str, Any]]) -> Reward:
    """Compare calls ``{"name", "arguments"}`` with gold calls, ToolRL-style, normalised to [0, 1].

    ToolRL (Qian et al., 2025) scores a tool-call turn as name overlap (Jaccard over tool names) plus,
    for each gold call matched to a predicted call of the same name, argument-key overlap (Jaccard)
    and the fraction of gold argument values reproduced exactly. The maximum is ``1 + 2 * len(gold)``;
    we divide by it so the score composes with others in a rubric. Gold calls are matched in order
    to the first unused predicted call with the same name.
    """
    if not gold:
        value = 1.0 if not predicted else 0.0
        return Reward(value=value, components={"name": value, "keys": value, "values": value})
    names = _jaccard({c["name"] for c in predicted}, {c["name"] for c in gold})
    used: set[int] = set()
    keys_total = values_total = 0.0
    for g in gold:
        match = next((i for i, p in enumerate(predicted) if i not in used and p["name"] == g["name"]), None)
        if match is None:
            continue
        used.add(match)
        p_args, g_args = predicted[match].get("arguments") or {}, g.get("arguments") or {}
        keys_total += _jaccard(set(p_args), set(g_args))
        if g_args:
            values_total += sum(1 for k, v in g_args.items() if k in p_args and p_args[k] == v) / len(g_args)
        else:
            values_total += 1.0
    n = len(gold)
    value = (names + keys_total + values_total) / (1 + 2 * n)
    return Reward(value=value, components={"name": names, "keys": keys_total / n, "values": values_total / n})


def tool_call_match(episode: Episode) -> Reward:
    """Every call the model made against ``task.data["gold_calls"]`` (a list of ``{"name", "arguments"}``).

    See :func:`score_tool_calls` for the scoring. Malformed calls count as calls with no name.
    """
    gold = episode.task.data.get("gold_calls")
    if gold is None:
        raise DataError(f"task {episode.task.id!r} has no data['gold_calls'] for tool_call_match")
    predicted = [
        {"name": call.name, "arguments": call.arguments}
        for turn in episode.trajectory.turns
        for call in parse_tool_calls(turn.action)
    ]
    return score_tool_calls(predicted, gold)
