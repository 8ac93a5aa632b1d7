"""The data that crosses agentgym's boundaries: messages, tool calls, tasks, steps and trajectories.

Everything here is a pydantic v2 model so that it validates on the way in, serialises to JSON on the
way out, and round-trips losslessly through the JSONL files the runner writes. Field names follow the
OpenAI chat format (``role``, ``content``, ``tool_calls``, ``tool_call_id``) and Gymnasium's step
vocabulary (``observation``, ``reward``, ``terminated``, ``truncated``, ``info``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["system", "user", "assistant", "tool"]


class TextPart(BaseModel):
    """A run of text inside a multi-part message."""

    type: Literal["text"] = "text"
    text: str


class ImagePart(BaseModel):
    """An image inside a multi-part message, as a URL or a ``data:image/png;base64,...`` URI."""

    type: Literal["image_url"] = "image_url"
    image_url: dict[str, str]

    @classmethod
    def from_png(cls, png: bytes) -> ImagePart:
        import base64

        return cls(image_url={"url": "data:image/png;base64," + base64.b64encode(png).decode()})


ContentPart = TextPart | ImagePart


class ToolCall(BaseModel):
    """One call of a tool, as the model wrote it.

    ``arguments`` keeps the model's raw JSON text: a call whose arguments do not parse is still a
    call, and the environment answers it with an error observation instead of losing it.
    """

    id: str
    name: str
    arguments: str = "{}"

    def to_openai(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}

    @classmethod
    def from_openai(cls, data: dict[str, Any]) -> ToolCall:
        fn = data.get("function") or {}
        args = fn.get("arguments", "{}")
        if not isinstance(args, str):
            args = json.dumps(args)
        return cls(id=data.get("id") or "", name=fn.get("name") or "", arguments=args)


class Message(BaseModel):
    """A chat message in OpenAI's shape; ``content`` is text or a list of text and image parts."""

    role: Role
    content: str | list[ContentPart] | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None

    @property
    def text(self) -> str:
        """The message's text, with image parts left out."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "".join(p.text for p in self.content if isinstance(p, TextPart))

    def to_openai(self) -> dict[str, Any]:
        """The message as the OpenAI chat-completions API expects it."""
        out: dict[str, Any] = {"role": self.role}
        if isinstance(self.content, list):
            out["content"] = [p.model_dump() for p in self.content]
        else:
            out["content"] = self.content
        if self.tool_calls:
            out["tool_calls"] = [c.to_openai() for c in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None and self.role != "tool":
            out["name"] = self.name
        return out

    @classmethod
    def from_openai(cls, data: dict[str, Any]) -> Message:
        calls = [ToolCall.from_openai(c) for c in data.get("tool_calls") or []]
        return cls(
            role=data["role"],
            content=data.get("content"),
            tool_calls=calls,
            tool_call_id=data.get("tool_call_id"),
            name=data.get("name"),
        )


def system(text: str) -> Message:
    return Message(role="system", content=text)


def user(text: str) -> Message:
    return Message(role="user", content=text)


def assistant(text: str | None = None, tool_calls: list[ToolCall] | None = None) -> Message:
    return Message(role="assistant", content=text, tool_calls=tool_calls or [])


class ToolSpec(BaseModel):
    """A tool as the model sees it: OpenAI function-calling JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]
    final: bool = False

    def to_openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


class Task(BaseModel):
    """One problem for an environment: the prompt the model reads plus whatever its verifier needs.

    ``data`` holds environment-specific fields (tests, gold answers, a repository) and is never shown
    to the model unless the environment puts it in ``prompt``.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    prompt: str
    data: dict[str, Any] = Field(default_factory=dict)
    system: str | None = None


class Usage(BaseModel):
    """Tokens and money spent by one model call (or a sum of them)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    retries: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cost_usd=self.cost_usd + other.cost_usd,
            retries=self.retries + other.retries,
        )


class StepResult(BaseModel):
    """What ``Env.step`` returns, in Gymnasium's words.

    ``observation`` is the list of messages the environment answers with (one ``tool`` message per
    tool call, or a ``user`` message). ``terminated`` means the episode reached its end (a final tool,
    a solved task); ``truncated`` means it was cut off (turn limit, timeout) before that.
    """

    observation: list[Message]
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    info: dict[str, Any] = Field(default_factory=dict)


class Reward(BaseModel):
    """An outcome score: the value used for training, its named components, and details for people.

    ``components`` maps each part of a composed reward (a rubric's criteria, a gate) to its score, so
    that an evaluation summary can report every part, not only the total.
    """

    value: float
    components: dict[str, float] = Field(default_factory=dict)
    info: dict[str, Any] = Field(default_factory=dict)


ToolErrorKind = Literal["malformed_json", "unknown_tool", "invalid_arguments", "tool_raised", "no_tool_call"]


class Turn(BaseModel):
    """One model action and the environment's answer to it."""

    action: Message
    observation: list[Message] = Field(default_factory=list)
    reward: float = 0.0
    tool_errors: list[ToolErrorKind] = Field(default_factory=list)
    policy_seconds: float = 0.0
    env_seconds: float = 0.0
    usage: Usage = Field(default_factory=Usage)
    info: dict[str, Any] = Field(default_factory=dict)


Outcome = Literal["terminated", "truncated", "timeout", "error", "cancelled"]


class Trajectory(BaseModel):
    """A whole episode: the opening messages, every turn, the final reward and how it ended.

    ``outcome`` says how the episode ended; ``failure`` says why, in words, when it did not end
    normally (an API error, a crashed sandbox, a timeout). ``reward`` is the episode's return: the
    sum of turn rewards plus the outcome reward the verifier gave.

    ``final_answer`` is the answer the verifier grades: what the final tool set (or returned), or the
    text of a reply that ended the episode. ``attempts`` holds the score of every final answer given,
    in order: more than one when the env's feedback let the model try again. ``usage`` is what the
    policy spent; model calls made on the env's side (a simulated user, a feedback model) are counted
    apart in ``usage_by_role``.
    """

    task_id: str
    env: str
    policy: str = ""
    seed: int | None = None
    messages: list[Message] = Field(default_factory=list)
    turns: list[Turn] = Field(default_factory=list)
    reward: float = 0.0
    outcome_reward: float = 0.0
    reward_components: dict[str, float] = Field(default_factory=dict)
    final_answer: str | None = None
    attempts: list[float] = Field(default_factory=list)
    usage_by_role: dict[str, Usage] = Field(default_factory=dict)
    outcome: Outcome = "terminated"
    failure: str | None = None
    seconds: float = 0.0
    sandbox_seconds: float = 0.0
    info: dict[str, Any] = Field(default_factory=dict)

    @property
    def usage(self) -> Usage:
        """What the policy spent over every turn (env-side model calls are in ``usage_by_role``)."""
        total = Usage()
        for turn in self.turns:
            total = total + turn.usage
        return total

    @property
    def tool_errors(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for turn in self.turns:
            for kind in turn.tool_errors:
                counts[kind] = counts.get(kind, 0) + 1
        return counts

    @property
    def success(self) -> bool:
        return self.outcome_reward >= 1.0

    def all_messages(self) -> list[Message]:
        """The conversation as the model saw it: opening messages, then each action and its answer."""
        out = list(self.messages)
        for turn in self.turns:
            out.append(turn.action)
            out.extend(turn.observation)
        return out


def write_jsonl(path: str | Path, trajectories: list[Trajectory], *, append: bool = False) -> None:
    """Write trajectories one JSON object a line."""
    with open(path, "a" if append else "w", encoding="utf-8") as f:
        for t in trajectories:
            f.write(t.model_dump_json() + "\n")


def iter_jsonl(path: str | Path) -> Iterator[Trajectory]:
    """Read trajectories back; a torn last line (a run killed mid-write) is skipped, not fatal."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                yield Trajectory.model_validate_json(line)
            except ValueError:
                continue


def read_jsonl(path: str | Path) -> list[Trajectory]:
    return list(iter_jsonl(path))
