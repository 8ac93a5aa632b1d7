"""MiniWoB tasks played as a person plays them, on both backends: a list's option chosen by its ref."""

import json

import pytest

from agentgym.envs.gui import GUIEnv, parse_dom
from agentgym.envs.gui.coverage import measure
from agentgym.types import Message, ToolCall, assistant

pytestmark = pytest.mark.docker


def call(name: str, **arguments) -> Message:
    return assistant(tool_calls=[ToolCall(id="c1", name=name, arguments=json.dumps(arguments))])


async def test_click_element_on_an_option_chooses_it(backend):
    """A select's options are in the DOM text (MiniWoB leaves a closed select's out) and ``click_element`` on
    one makes it the select's value, as the page sees it: the page's Submit reads that option."""
    async with GUIEnv(names="choose-list", observation="dom", sandbox_backend=backend) as env:
        opening = (await env.reset(env.tasks()[0], seed=1))[1].text
        wanted = opening.split("Select ", 1)[1].split(" from the list")[0]
        options = parse_dom(opening).find(tag="option")
        assert len(options) >= 3 and [o.value for o in options].count(True) == 1
        (option,) = [o for o in options if o.text == wanted]
        assert not option.value  # the page does not start on the answer for this seed
        shown = await env.step(call("click_element", ref=option.ref))
        dom = parse_dom(shown.observation[-1].text)
        (select,) = dom.find(tag="select")
        assert select.value == wanted and dom.get(option.ref).value is True
        assert await env._live_page.page.evaluate("document.getElementById('options').value") == wanted
        (submit,) = dom.find(tag="button")
        end = await env.step(call("click_element", ref=submit.ref))
        assert end.terminated and env.trajectory.outcome_reward == 1.0


async def test_the_reference_chooses_from_a_list_and_a_wrong_choice_fails(backend):
    tasks = await measure("choose-list", samples=3, seed=10, sandbox=backend)
    (coverage,) = tasks.values()
    assert coverage.reference == [1.0] * 3 and coverage.wrong == [-1.0] * 3, coverage
