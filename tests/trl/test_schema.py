"""Tools with pydantic-model parameters on the environment_factory path: described, called, trained.

transformers, which TRL uses to show tools to the model, cannot describe a pydantic model; the
generated method hints such a parameter as a JSON object and puts the model's schema in its
description. A hint transformers still cannot read is refused when the class is generated.
"""

from __future__ import annotations

import json
from typing import Any, Literal, Optional

import pytest

from agentgym.errors import EnvError
from agentgym.trl import environment_class, environment_spec, task_dataset
from agentgym.trl.schema import plain_hint
from agentgym.types import Task
from tests.trl.conftest import grpo_config
from tests.trl.envs import Booking, Dated, Passenger

TASK = Task(id="fly", prompt="Book a flight for Ada, 36.")


def test_pydantic_models_in_hints_become_json_objects() -> None:
    assert plain_hint(Passenger) is dict
    assert plain_hint(list[Passenger]) == list[dict]
    assert plain_hint(Passenger | None) == Optional[dict]  # noqa: UP045 (what typing.Union builds)
    assert plain_hint(dict[str, Passenger]) == dict[str, dict]
    assert plain_hint(list[int]) == list[int]
    assert plain_hint(Literal["a", "b"]) == Literal["a", "b"]


def test_transformers_alone_cannot_describe_the_tool() -> None:
    """Why the generated method is needed: this is what failed inside the first GRPO step."""
    from transformers.utils.chat_template_utils import TypeHintParsingException, get_json_schema

    with pytest.raises(TypeHintParsingException):
        get_json_schema(Booking.book)


def test_the_generated_method_shows_every_field_of_the_model() -> None:
    from transformers.utils import get_json_schema

    schema = get_json_schema(environment_class(Booking).book)["function"]
    passenger = schema["parameters"]["properties"]["passenger"]
    assert passenger["type"] == "object"
    described, shown = passenger["description"].split(" JSON schema: ")
    assert described == "The traveller."
    assert json.loads(shown) == {
        "description": "Who flies.", "type": "object", "required": ["name", "age"],
        "properties": {"name": {"type": "string", "description": "Full name."}, "age": {"type": "integer"}},
    }
    companions = schema["parameters"]["properties"]["companions"]
    assert companions["type"] == "array" and companions["items"] == {"type": "object"}
    assert '"age": {"type": "integer"}' in companions["description"]
    assert schema["parameters"]["required"] == ["passenger"]


def test_the_object_the_model_writes_is_validated_into_the_model() -> None:
    env = environment_class(Booking)()
    env.reset(**task_dataset(Booking, [TASK])[0])
    answer = env.book(passenger={"name": "Ada"})
    assert answer == "Error: invalid arguments for book: passenger.age: Field required"
    assert env.book(passenger={"name": "Ada", "age": 36}, companions=[{"name": "Bo", "age": 5}]) == (
        "Booked Ada, Bo (first aged 36).")  # the tool got Passenger objects (it read .name and .age)


def test_a_grpo_step_runs_on_an_env_with_pydantic_parameters(agent: Any, tmp_path: Any) -> None:
    from trl import GRPOTrainer

    model, tokenizer = agent
    spec = environment_spec(Booking, [TASK], repeat=8)
    trainer = GRPOTrainer(model, args=grpo_config(tmp_path, max_steps=1), processing_class=tokenizer,
                          **spec.trainer_kwargs())
    trainer.train()
    assert [h["env/crashed"] for h in trainer.state.log_history if "env/crashed" in h] == [0.0]


def test_a_hint_transformers_cannot_describe_is_refused_up_front_naming_the_tool() -> None:
    with pytest.raises(EnvError, match=r"tool 'depart' of Dated cannot be shown to a model through TRL"):
        environment_class(Dated)
