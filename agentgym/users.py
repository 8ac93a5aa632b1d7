"""A simulated user played by any policy, as in tau2-bench and MINT: the env's side of a conversation.

Give an env ``user=SimulatedUser(...)`` and every plain-text reply of the agent goes to the user,
whose answer becomes the next observation; the episode ends when the user says ``stop`` (then the
agent's last reply is its final answer) or when the agent calls a final tool::

    user = SimulatedUser("openai/gpt-4o-mini")                 # an LLM plays the customer
    env = agentgym.make("myorg/Airline-v0", user=user)

The user sees the conversation from its own side: its instructions as the system prompt, the agent's
texts as the other party's turns, its own earlier messages (the task's prompt first) as its turns;
tool calls and tool results stay hidden from it, as they would from a customer. Its tokens, cost and
retries are recorded under the ``"user"`` role (``trajectory.usage_by_role``), apart from the agent's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentgym.policies.base import Policy
from agentgym.types import Message, Task

if TYPE_CHECKING:
    from agentgym.env import Env

STOP = "###STOP###"

USER_PROMPT = """You are a user talking to an AI assistant (the other party). Stay in character; \
write only what the user would say, briefly, one message at a time. Never invent facts your \
instructions do not give you. When your goal is reached, or cannot be reached, reply with {stop} alone.

Your instructions:
{instructions}"""


def default_instructions(task: Task) -> str:
    """The user's private instructions: ``task.data["user_instructions"]``, else the task's prompt."""
    return str(task.data.get("user_instructions") or task.prompt)


class SimulatedUser:
    """The env's side of a conversation, played by a policy.

    Args:
        policy: A litellm model string (a :class:`~agentgym.policies.LiteLLMPolicy` is made from it with
            ``**options``), or any :class:`~agentgym.policies.Policy`, scripted ones included.
        instructions: The user's private goal for a task; :func:`default_instructions` by default.
        prompt: The user's system prompt, with ``{instructions}`` and ``{stop}`` slots.
        stop: The token by which the user ends the conversation.
        **options: For :class:`~agentgym.policies.LiteLLMPolicy` (``api_base``, ``temperature``...).
    """

    role = "user"

    def __init__(self, policy: str | Policy, *, instructions: Callable[[Task], str] = default_instructions,
                 prompt: str = USER_PROMPT, stop: str = STOP, **options: Any) -> None:
        from agentgym.policies.litellm import as_policy

        self.policy: Policy = as_policy(policy, **options)
        self.instructions = instructions
        self.prompt = prompt
        self.stop = stop

    def conversation(self, env: Env) -> list[Message]:
        """The episode so far as the user sees it: roles swapped, tool traffic left out."""
        assert env.task is not None and env.trajectory is not None
        system = self.prompt.format(instructions=self.instructions(env.task), stop=self.stop)
        out = [Message(role="system", content=system)]
        for message in env.trajectory.all_messages():
            if message.role == "user" and message.text:
                out.append(Message(role="assistant", content=message.text))
            elif message.role == "assistant" and message.text:
                out.append(Message(role="user", content=message.text))
        return out

    async def respond(self, env: Env, text: str) -> list[Message] | None:
        assert env.task is not None
        reply = await self.policy.act(self.conversation(env), [], task=env.task)
        env.record_usage(self.role, reply.usage)
        said = reply.message.text.strip()
        if self.stop in said or not said:
            return None
        return [Message(role="user", content=said)]
