"""A new environment in a few lines: tools are typed async methods, the docstring is what the model reads.

Run it with the built-in scripted policy (no key needed):  python examples/custom_env.py
or from the command line:  agentgym eval examples.custom_env:Calculator --model scripted
(``--model policy:examples.custom_env:Scripted`` names any policy class the same way).
"""

import asyncio

import agentgym
from agentgym import Env, Episode, Task, tool
from agentgym.policies import Reply
from agentgym.rollout import rollout
from agentgym.types import Message, ToolCall


def correct(episode: Episode) -> bool:
    """The verifier: the submitted number (the episode's final answer) is the task's answer."""
    return float(episode.final_answer or "nan") == episode.task.data["answer"]


class Calculator(Env):
    """Arithmetic word problems; the model may run Python, then submits a number."""

    sandbox_image = "python"  # a sandbox from the warm pool on reset(), as self.sandbox
    max_turns = 4
    verifier = correct

    @classmethod
    def scripted_policies(cls):
        """Named policies for the CLI: agentgym eval examples.custom_env:Calculator --model scripted"""
        return {"scripted": Scripted}

    def tasks(self) -> list[Task]:
        return [Task(id="apples", prompt="Ann has 17 apples and buys 3 bags of 12. How many now?",
                     data={"answer": 53})]

    @tool
    async def python(self, code: str) -> str:
        """Run code in a persistent Python session; returns what it printed.

        Args:
            code: Python source to run.
        """
        result = await self.sandbox.run_python(code)
        return result.output + (result.error or "")

    @tool(final=True)
    async def submit(self, answer: float) -> str:
        """Give the final answer and end the episode.

        Args:
            answer: The final answer, as a number.
        """
        return str(answer)  # what a final tool returns is the final answer (or set self.final_answer)


class Scripted:
    """Computes with the python tool, then submits what it printed."""

    name = "scripted"

    async def act(self, messages, tools, *, task):
        if messages[-1].role == "user":
            call = ToolCall(id="1", name="python", arguments='{"code": "print(17 + 3 * 12)"}')
        else:
            call = ToolCall(id="2", name="submit", arguments=f'{{"answer": {messages[-1].text.strip()}}}')
        return Reply(message=Message(role="assistant", tool_calls=[call]))


agentgym.register("examples/Calculator-v0", Calculator)


async def main() -> None:
    async with agentgym.make("examples/Calculator-v0") as env:
        trajectory = await rollout(env, Scripted(), env.tasks()[0])
    print(f"outcome={trajectory.outcome} reward={trajectory.reward} turns={len(trajectory.turns)}")


if __name__ == "__main__":
    asyncio.run(main())
