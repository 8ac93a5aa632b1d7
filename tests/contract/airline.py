"""A small port of tau2-bench's airline domain, written against agentgym's public API only.

What it exercises, as an outside author would write it: several tools over an in-memory database (sync
methods, as tau2's are, some of them in a mixin), tools that raise ``ValueError`` for the model's
mistakes (declared in ``model_errors``), a verifier that compares the final database with the one the
task's gold actions produce (tau2's DB check, through ``final_state``), and a customer played by a
policy: a scripted one by default, any litellm model with ``user_model=``. No ``step`` override, no
private member.

    agentgym eval tests.contract.airline:AirlineEnv --model reference
    agentgym eval tests/Airline-v0 --import tests.contract.airline --model reference \\
        --env-arg user_model=openai/gpt-4o-mini
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from typing import Any

import agentgym
from agentgym import Env, Episode, Message, Policy, Reply, Reward, Task, ToolSpec, tool
from agentgym.parsing import native_tool_call
from agentgym.users import SimulatedUser

DB: dict[str, Any] = {
    "users": {
        "mia_li_3668": {"name": "Mia Li", "reservations": ["4WQ150", "8JX2WO"]},
        "omar_rossi_1241": {"name": "Omar Rossi", "reservations": ["FQ8APE"]},
    },
    "flights": {
        "HAT170": {"origin": "JFK", "destination": "SEA", "date": "2024-05-20", "seats": 3},
        "HAT227": {"origin": "JFK", "destination": "SEA", "date": "2024-05-21", "seats": 9},
        "HAT083": {"origin": "ORD", "destination": "LAX", "date": "2024-05-22", "seats": 0},
    },
    "reservations": {
        "4WQ150": {"user_id": "mia_li_3668", "flight": "HAT170", "status": "booked", "refundable": True},
        "8JX2WO": {"user_id": "mia_li_3668", "flight": "HAT083", "status": "booked", "refundable": False},
        "FQ8APE": {"user_id": "omar_rossi_1241", "flight": "HAT227", "status": "booked", "refundable": True},
    },
}


class AirlineDB:
    """The world the agent changes; the tools and the verifier's replay of gold actions share it."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = copy.deepcopy(data)

    def reservation(self, reservation_id: str) -> dict[str, Any]:
        if reservation_id not in self.data["reservations"]:
            raise ValueError(f"reservation {reservation_id} not found")
        return self.data["reservations"][reservation_id]

    def update_reservation_flight(self, reservation_id: str, flight_number: str) -> str:
        reservation = self.reservation(reservation_id)
        flight = self.data["flights"].get(flight_number)
        if flight is None:
            raise ValueError(f"flight {flight_number} not found")
        if flight["seats"] < 1:
            raise ValueError(f"flight {flight_number} is full")
        self.data["flights"][reservation["flight"]]["seats"] += 1
        flight["seats"] -= 1
        reservation["flight"] = flight_number
        return f"reservation {reservation_id} is now on {flight_number}"

    def cancel_reservation(self, reservation_id: str) -> str:
        reservation = self.reservation(reservation_id)
        if not reservation["refundable"]:
            raise ValueError(f"reservation {reservation_id} is not refundable and cannot be cancelled")
        reservation["status"] = "cancelled"
        self.data["flights"][reservation["flight"]]["seats"] += 1
        return f"reservation {reservation_id} is cancelled"


def db_matches(episode: Episode) -> Reward:
    """tau2's check: the final database equals the one the task's gold actions make from the start."""
    expected = AirlineDB(DB)
    for action in episode.task.data["actions"]:
        getattr(expected, action["name"])(**action["arguments"])
    same = episode.state == expected.data
    return Reward(value=float(same), components={"db": float(same)})


class ReadTools:
    """Read-only tools, in a mixin: any class with a ``db`` can offer them."""

    db: AirlineDB

    @tool
    def get_user_details(self, user_id: str) -> str:
        """Get a user's profile and reservation ids.

        Args:
            user_id: The user's id, such as 'sara_doe_496'.
        """
        if user_id not in self.db.data["users"]:
            raise ValueError(f"user {user_id} not found")
        return json.dumps(self.db.data["users"][user_id])

    @tool
    def get_reservation_details(self, reservation_id: str) -> str:
        """Get a reservation: its user, flight, status and whether it is refundable.

        Args:
            reservation_id: The reservation id, such as '8JX2WO'.
        """
        return json.dumps(self.db.reservation(reservation_id))

    @tool
    def search_direct_flight(self, origin: str, destination: str, date: str) -> str:
        """Find direct flights between two airports on a date, with their free seats.

        Args:
            origin: IATA code of the departure airport, such as 'JFK'.
            destination: IATA code of the arrival airport.
            date: The date, as YYYY-MM-DD.
        """
        found = {number: f for number, f in self.db.data["flights"].items()
                 if (f["origin"], f["destination"], f["date"]) == (origin, destination, date)}
        return json.dumps(found)


AGENT_POLICY = """You are an airline customer-service agent. Help the user with their reservations using \
the tools. Check the reservation before changing it. Only cancel refundable reservations."""


class AirlineEnv(ReadTools, Env):
    """tau2-style airline customer service: a simulated customer, tools over a DB, a DB-state verifier."""

    max_turns = 12
    model_errors = (ValueError,)
    verifier = db_matches

    def __init__(self, *, user_model: str | None = None, user_api_base: str | None = None, **kwargs: Any) -> None:
        """
        Args:
            user_model: A litellm model that plays the customer; a scripted customer when omitted.
            user_api_base: The endpoint of ``user_model``.
            **kwargs: As for :class:`agentgym.Env`.
        """
        if user_model is not None:
            kwargs.setdefault("user", SimulatedUser(user_model, api_base=user_api_base))
        else:
            kwargs.setdefault("user", SimulatedUser(ScriptedCustomer()))
        super().__init__(**kwargs)
        self.db = AirlineDB(DB)

    def tasks(self) -> list[Task]:
        return TASKS

    def system_prompt(self, task: Task) -> str:
        return AGENT_POLICY

    async def setup(self, task: Task) -> None:
        self.db = AirlineDB(DB)

    async def final_state(self) -> dict[str, Any]:
        return copy.deepcopy(self.db.data)

    @tool
    def update_reservation_flight(self, reservation_id: str, flight_number: str) -> str:
        """Move a reservation to another flight with a free seat.

        Args:
            reservation_id: The reservation to change.
            flight_number: The new flight, such as 'HAT227'.
        """
        return self.db.update_reservation_flight(reservation_id, flight_number)

    @tool
    def cancel_reservation(self, reservation_id: str) -> str:
        """Cancel a refundable reservation.

        Args:
            reservation_id: The reservation to cancel.
        """
        return self.db.cancel_reservation(reservation_id)

    @tool(final=True)
    async def transfer_to_human_agents(self, summary: str) -> str:
        """Hand the conversation to a human agent and end it, when the request is beyond your tools.

        Args:
            summary: What the user wants, for the human agent.
        """
        return summary

    @classmethod
    def scripted_policies(cls) -> dict[str, Callable[[], Policy]]:
        return {"reference": GoldAgent, "baseline": Refuser}


def _task(task_id: str, opening: str, user_turns: list[str], actions: list[dict[str, Any]]) -> Task:
    instructions = " ".join(user_turns)
    return Task(id=task_id, prompt=opening,
                data={"user_instructions": instructions, "user_turns": user_turns, "actions": actions})


TASKS = [
    _task("change", "Hi, I need to move my Seattle flight to the next day.",
          ["I am mia_li_3668, reservation 4WQ150. Please move it to 2024-05-21."],
          [{"name": "update_reservation_flight",
            "arguments": {"reservation_id": "4WQ150", "flight_number": "HAT227"}}]),
    _task("cancel", "I'd like to cancel a booking.",
          ["My user id is omar_rossi_1241 and the reservation is FQ8APE."],
          [{"name": "cancel_reservation", "arguments": {"reservation_id": "FQ8APE"}}]),
    _task("refuse", "Cancel my Los Angeles trip please.",
          ["I am mia_li_3668, reservation 8JX2WO.", "Fine, keep it then."],
          []),
]


class ScriptedCustomer:
    """Plays the customer with no model: says the task's lines in order, then ends the conversation."""

    name = "scripted-customer"

    async def act(self, messages: list[Message], tools: list[ToolSpec], *, task: Task) -> Reply:
        said = sum(m.role == "assistant" for m in messages) - 1  # its own turns, the opening line excluded
        lines = task.data["user_turns"]
        return Reply(message=Message(role="assistant", content=lines[said] if said < len(lines) else "###STOP###"))


class GoldAgent:
    """The reference agent: asks who the customer is, looks the reservation up, does the task's gold actions."""

    name = "reference"

    async def act(self, messages: list[Message], tools: list[ToolSpec], *, task: Task) -> Reply:
        turn = sum(m.role == "assistant" for m in messages)
        if turn == 0:
            return Reply(message=Message(role="assistant", content="Sure. What are your user id and reservation?"))
        if turn == 1:
            said = next(m.text for m in reversed(messages) if m.role == "user")
            match = re.search(r"\b[0-9A-Z]{6}\b", said)
            reservation = match.group(0) if match else "unknown"
            call = native_tool_call(f"call_{turn}", "get_reservation_details", {"reservation_id": reservation})
            return Reply(message=Message(role="assistant", tool_calls=[call]))
        actions = task.data["actions"]
        if turn - 2 < len(actions):
            action = actions[turn - 2]
            call = native_tool_call(f"call_{turn}", action["name"], action["arguments"])
            return Reply(message=Message(role="assistant", tool_calls=[call]))
        return Reply(message=Message(role="assistant", content="All done. Is there anything else?"))


class Refuser:
    """The baseline agent: changes nothing, whatever is asked."""

    name = "baseline"

    async def act(self, messages: list[Message], tools: list[ToolSpec], *, task: Task) -> Reply:
        return Reply(message=Message(role="assistant", content="Sorry, I cannot help with that."))


agentgym.register("tests/Airline-v0", AirlineEnv, aliases=["airline"])
