"""The data that crosses agentgym's boundaries: messages, tool calls, tasks, steps and trajectories.

Everything here is a pydantic v2 model so that it validates on the way in, serialises to JSON on the
way out, and round-trips losslessly through the JSONL files the runner writes. Field names follow the
OpenAI chat format (``role``, ``content``, ``tool_calls``, ``tool_call_id``) and Gymnasium's step
vocabulary (``observation``, ``reward``, ``terminated``, ``truncated``, ``info``).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentgym.errors import DataError

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
    def coerce(cls, value: Any) -> Message:
        """A :class:`Message` from itself, an OpenAI-format dict, or an OpenAI SDK message object.

        Raises:
            ValueError: ``value`` is none of these, or not a valid message.
        """
        if isinstance(value, Message):
            return value
        if callable(getattr(value, "model_dump", None)):  # the OpenAI SDK's ChatCompletionMessage
            value = value.model_dump()
        if not isinstance(value, Mapping):
            raise ValueError(f"expected a Message or an OpenAI-format message dict, got {type(value).__name__}")
        try:
            return cls.from_openai(dict(value))
        except ValidationError as e:
            raise ValueError(_reason(e)) from e

    @classmethod
    def from_openai(cls, data: dict[str, Any]) -> Message:
        calls = [ToolCall.from_openai(c) for c in data.get("tool_calls") or []]
        return cls(
            role=data.get("role"),  # type: ignore[arg-type]  # validated: a missing role is refused
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
    unpriced_calls: int = 0
    """Calls whose price is unknown (a model litellm has no price for): their cost is not in ``cost_usd``,
    so a total over them is unknown, not free."""

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cost_usd=self.cost_usd + other.cost_usd,
            retries=self.retries + other.retries,
            unpriced_calls=self.unpriced_calls + other.unpriced_calls,
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


ToolErrorKind = Literal["malformed_json", "unknown_tool", "invalid_arguments", "tool_raised", "no_tool_call",
                        "turn_limit"]


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
    policy_seconds: float = 0.0
    """Seconds spent waiting on the policy, every call counted: those that failed, with their retries
    and backoff, too. For an env with a sandbox, the sandbox was held all that time."""
    failed_usage: Usage = Field(default_factory=Usage)
    """What model calls that produced no turn cost: the retries of a call that failed after them."""
    info: dict[str, Any] = Field(default_factory=dict)

    @property
    def usage(self) -> Usage:
        """What the policy spent over every turn, its failed call included (env-side calls: ``usage_by_role``)."""
        total = self.failed_usage
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


def iter_json_lines(path: str | Path) -> Iterator[tuple[int, Any]]:
    """Each non-blank line of a JSONL file (gzipped when it ends in ``.gz``) as ``(line number, value)``.

    Every line is decoded on its own, so an error names the line it is on, not "line 1" of a
    one-line document.

    Raises:
        DataError: The file cannot be read, or a line is not UTF-8 or not JSON; the message names
            the file and the line.
    """
    path = Path(path)
    try:
        with (gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")) as f:
            for lineno, raw in enumerate(f, 1):
                yield lineno, _decode_line(path, lineno, raw)
    except (OSError, EOFError) as e:  # EOFError: a gzip file cut short
        raise DataError(f"cannot read {path}: {getattr(e, 'strerror', None) or e}") from e


def _decode_line(path: Path, lineno: int, raw: bytes) -> Any:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DataError(f"{path}:{lineno}: not UTF-8 text (byte {raw[e.start]:#04x} at column {e.start + 1})") from e
    if not text.strip():
        return None
    try:
        value = json.loads(text.rstrip("\r\n"))  # so that a column past the end is on this line
    except json.JSONDecodeError as e:
        raise DataError(f"{path}:{lineno}: not valid JSON: {e.msg} (column {e.colno})") from e
    where = _lone_surrogate(value)
    if where is not None:
        raise DataError(f"{path}:{lineno}: {where or 'the value'} holds a lone surrogate (a \\ud800-\\udfff escape "
                        "that is half of a pair): not text that can be written back as UTF-8")
    return value


def _lone_surrogate(value: Any, where: str = "") -> str | None:
    """The field (``prompt``, ``data.x``) of the first string in ``value`` that is not valid Unicode, else None.

    JSON's ``\\ud800`` escape decodes to half a surrogate pair, which parses but which no file,
    process or socket takes: such a task would fail where it is first written (the run record),
    not where it was read.
    """
    if isinstance(value, str):
        try:
            value.encode()
        except UnicodeEncodeError:
            return where
        return None
    if isinstance(value, dict):
        for k, v in value.items():
            found = _lone_surrogate(k, where) if isinstance(k, str) else None
            found = found if found is not None else _lone_surrogate(v, f"{where}.{k}" if where else str(k))
            if found is not None:
                return found
    if isinstance(value, list):
        for i, v in enumerate(value):
            found = _lone_surrogate(v, f"{where}[{i}]")
            if found is not None:
                return found
    return None


def read_tasks(path: str | Path, to_task: Callable[[dict[str, Any]], Task] = Task.model_validate) -> list[Task]:
    """Tasks from a JSONL file, one JSON object a line, each turned into a :class:`Task` by ``to_task``.

    ``to_task`` defaults to reading :class:`Task`'s own fields; an environment with its own row
    format (HumanEval's) passes a converter that raises ``ValueError`` saying what is wrong.

    Raises:
        DataError: A line is unreadable, not an object, or refused by ``to_task``, or two tasks share
            an id (a summary keyed by task would count one twice); the message names file and line.
    """
    tasks: list[Task] = []
    first_line: dict[str, int] = {}
    for lineno, row in iter_json_lines(path):
        if row is None:
            continue
        if not isinstance(row, dict):
            raise DataError(f"{path}:{lineno}: expected a JSON object, got {_json_type(row)} {_clip(row)}")
        try:
            task = to_task(row)
        except ValueError as e:
            raise DataError(f"{path}:{lineno}: {_reason(e)}") from e
        if task.id in first_line:
            raise DataError(f"{path}:{lineno}: duplicate task id {task.id!r} (first on line {first_line[task.id]})")
        first_line[task.id] = lineno
        tasks.append(task)
    return tasks


def _reason(error: ValueError) -> str:
    """One line for a refused row: pydantic's first error with its field, else the error's text."""
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        if first["type"] == "missing":
            return f"missing field {where!r}"
        return f"{where}: {first['msg']} (got {_clip(first.get('input'))})" if where else first["msg"]
    return str(error)


def _json_type(value: Any) -> str:
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "an array"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _clip(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def iter_jsonl(path: str | Path) -> Iterator[Trajectory]:
    """Read trajectories back.

    A torn last line (a run killed mid-write: no newline at its end) is skipped; any other line that
    is not a trajectory raises :class:`~agentgym.errors.DataError` naming it, rather than vanish.
    """
    path = Path(path)
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                yield Trajectory.model_validate_json(raw)
            except ValueError as e:
                if not raw.endswith(b"\n"):  # only the last line can lack its newline
                    return
                raise DataError(f"{path}:{lineno}: not a trajectory: {_reason(e)}") from e


def read_jsonl(path: str | Path) -> list[Trajectory]:
    return list(iter_jsonl(path))
