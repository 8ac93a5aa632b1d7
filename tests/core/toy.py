"""A small environment for core tests: no sandbox, one counting tool, one final tool."""

from __future__ import annotations

from agentgym import Env, Reward, Task, ToolError, ToolResult, tool


class Counter(Env):
    """Count to the target: call `add` until the total reaches it, then `submit` the total."""

    max_turns = 5

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

    async def score(self) -> Reward:
        assert self.task is not None
        hit = self.final_answer == str(self.task.data["target"]) == str(self.total)
        return Reward(value=1.0 if hit else 0.0, components={"exact": float(hit)})
