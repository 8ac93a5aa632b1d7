"""A small environment for core tests: no sandbox, one counting tool, one final tool."""

from __future__ import annotations

from agentgym import Env, Episode, Reward, Task, ToolError, ToolResult, tool


def reached_the_target(episode: Episode) -> Reward:
    """1 when the submitted total is the target and is what the adds really made (the env's final state)."""
    hit = episode.final_answer == str(episode.task.data["target"]) == str(episode.state)
    return Reward(value=1.0 if hit else 0.0, components={"exact": float(hit)})


class Counter(Env):
    """Count to the target: call `add` until the total reaches it, then `submit` the total."""

    max_turns = 5
    verifier = reached_the_target

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.total = 0

    def tasks(self) -> list[Task]:
        return [Task(id=f"count-{n}", prompt=f"Reach {n}.", data={"target": n}) for n in (2, 3, 4)]

    async def setup(self, task: Task) -> None:
        self.total = 0

    @tool
    async def add(self, amount: int) -> ToolResult:
        """Add to the running total.

        Args:
            amount: How much to add; between 1 and 3.
        """
        if not 1 <= amount <= 3:
            raise ToolError("amount must be between 1 and 3")
        self.total += amount
        return ToolResult(f"total is {self.total}", reward=0.1)

    @tool(final=True)
    async def submit(self, total: int) -> str:
        """Submit the total and end the episode.

        Args:
            total: The total you reached.
        """
        self.final_answer = str(total)
        return "ok"

    async def final_state(self) -> int:
        return self.total
