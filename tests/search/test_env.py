"""The search env over the real corpus: tools, errors, paging, rewards, and scripted policies."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from agentgym import Message, ToolCall, make
from agentgym.envs.search import SearchEnv
from agentgym.envs.search.data import Corpus
from agentgym.envs.search.env import paginate
from agentgym.envs.search.policies import BaselinePolicy, ReferencePolicy
from agentgym.errors import EnvError
from agentgym.evaluation import evaluate
from agentgym.rollout import rollout
from agentgym.types import Task


def call(name: str, **arguments: object) -> Message:
    tool_call = ToolCall(id=f"c-{name}", name=name, arguments=json.dumps(arguments))
    return Message(role="assistant", tool_calls=[tool_call])


def task_for(corpus: Corpus, question_id: str) -> Task:
    q = next(q for q in corpus.questions if q.id == question_id)
    data = {"answer": list(q.answers), "paragraph_ids": [q.paragraph_id], "split": q.split}
    return Task(id=f"{q.split}/{q.id}", prompt=q.question, data=data)


SUPER_BOWL = "56be4db0acb8001400a502ec"  # "Which NFL team represented the AFC at Super Bowl 50?"


async def test_registered_with_tools_and_splits(corpus: Corpus) -> None:
    env = make("search", split="reddit")
    assert isinstance(env, SearchEnv) and env.sandbox_image is None
    assert [t.name for t in env.tools] == ["search", "open", "answer"]
    assert [t.final for t in env.tools] == [False, False, True]
    assert len(env.tasks()) == 9767 and {t.data["split"] for t in env.tasks()} == {"reddit"}
    assert len(make("search").tasks()) == 48201
    with pytest.raises(EnvError, match="unknown split"):
        make("search", split="wiki")
    with pytest.raises(EnvError, match="unknown search backend"):
        make("search", backend="bing")


async def test_own_tasks_from_a_jsonl_file(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    mine = [Task(id="mine/1", prompt="Who won Super Bowl 50?", data={"answer": ["Denver Broncos"]})]
    path.write_text("".join(t.model_dump_json() + "\n" for t in mine))
    env = make("search", tasks_path=path, sandbox_backend="auto")  # what `agentgym eval` always passes
    assert list(env.tasks()) == mine


async def test_an_episode_searches_opens_and_is_scored(corpus: Corpus) -> None:
    env = make("search")
    messages = await env.reset(task_for(corpus, SUPER_BOWL))
    assert messages[0].role == "system" and "answer" in messages[0].text
    result = await env.step(call("search", query="Super Bowl 50 AFC champion", k=3))
    listing = json.loads(result.observation[0].text)["results"]
    assert len(listing) == 3 and {"id", "title", "snippet", "score"} <= set(listing[0])
    assert [r["score"] for r in listing] == sorted((r["score"] for r in listing), reverse=True)
    assert "squad-0" in [r["id"] for r in listing]
    page = (await env.step(call("open", id_or_url="squad-0"))).observation[0].text
    assert page.startswith("Super Bowl 50\nsquad-0 (page 1 of 1)") and "Denver Broncos defeated" in page
    final = await env.step(call("answer", answer="the Denver Broncos"))
    assert final.terminated and final.reward == 1.0
    assert final.info["reward"]["components"] == {"em": 1.0, "f1": 1.0}
    assert env.trajectory is not None and env.trajectory.info["retrieval_hit"] is True


async def test_partial_answers_get_f1_and_em_can_be_the_reward(corpus: Corpus) -> None:
    for metric, expected in (("f1", 2 / 3), ("em", 0.0)):
        env = make("search", metric=metric)
        await env.reset(task_for(corpus, SUPER_BOWL))
        result = await env.step(call("answer", answer="Broncos"))
        assert result.reward == pytest.approx(expected)
        assert result.info["reward"]["components"] == {"em": 0.0, "f1": pytest.approx(2 / 3)}


async def test_bad_calls_come_back_to_the_model_as_errors(corpus: Corpus) -> None:
    env = make("search")
    await env.reset(task_for(corpus, SUPER_BOWL))
    cases = [
        (call("search", query="  "), "query is empty"),
        (call("search", query="broncos", k=0), "k must be between 1 and 20"),
        (call("search", query="broncos", k="many"), "invalid arguments"),
        (call("open", id_or_url="squad-999999"), "no document 'squad-999999'"),
        (call("open", id_or_url="squad-0", page=2), "page 2 does not exist: squad-0 has 1 page(s)"),
    ]
    for action, message in cases:
        result = await env.step(action)
        assert not result.terminated and message in result.observation[0].text
    assert env.trajectory is not None
    assert env.trajectory.tool_errors == {"tool_raised": 4, "invalid_arguments": 1}


async def test_any_text_is_a_valid_query(corpus: Corpus) -> None:
    env = make("search")
    await env.reset(task_for(corpus, SUPER_BOWL))
    result = await env.step(call("search", query="?! -- ()"))
    assert json.loads(result.observation[0].text)["results"] == []
    for query in ['IN super bowl AND OR NOT', 'title:"super bowl 50', "Super Bowl 50's (AFC) champion*"]:
        result = await env.step(call("search", query=query, k=3))
        assert len(json.loads(result.observation[0].text)["results"]) == 3, query


async def test_long_documents_are_read_in_pages(corpus: Corpus) -> None:
    longest = max(corpus.paragraphs, key=lambda p: len(p.text))
    env = make("search", page_chars=400, max_turns=50)
    await env.reset(task_for(corpus, SUPER_BOWL))
    pages = []
    n = len(paginate(longest.text, 400))
    assert n >= 3
    for page in range(1, n + 1):
        text = (await env.step(call("open", id_or_url=longest.id, page=page))).observation[0].text
        header, _, body = text.partition("\n\n")
        assert header.endswith(f"(page {page} of {n})") and len(body) <= 400
        pages.append(body)
    assert " ".join(pages).split() == longest.text.split()


async def test_turn_rewards_for_the_first_hit_and_against_repeats(corpus: Corpus) -> None:
    env = make("search", hit_reward=0.2, repeat_penalty=0.1)
    await env.reset(task_for(corpus, SUPER_BOWL))
    miss = await env.step(call("search", query="lipstick holder size", k=3))
    hit = await env.step(call("search", query="Super Bowl 50 AFC champion", k=5))
    hit_again = await env.step(call("search", query="AFC champion Super Bowl 50 Denver", k=5))
    repeat = await env.step(call("search", query="  super bowl 50 AFC   champion ", k=5))
    assert [miss.reward, hit.reward, hit_again.reward, repeat.reward] == [0.0, 0.2, 0.0, -0.1]
    assert env.trajectory is not None
    infos = [t.info for t in env.trajectory.turns]
    assert [i["retrieval_hit"] for i in infos] == [False, True, True, True]
    assert [i["repeated_query"] for i in infos] == [False, False, False, True]
    done = await env.step(call("answer", answer="Denver Broncos"))
    assert env.trajectory.reward == pytest.approx(0.2 - 0.1 + 1.0) and done.terminated


async def test_reference_beats_baseline_on_a_sample_of_the_full_corpus(corpus: Corpus) -> None:
    tasks = random.Random(7).sample(list(make("search").tasks()), 300)
    assert len({t.data["split"] for t in tasks}) == 5
    reference, trajectories = await evaluate("search", ReferencePolicy(), tasks=tasks, progress=False)
    baseline, _ = await evaluate("search", BaselinePolicy(), tasks=tasks, progress=False)
    assert reference.episodes == baseline.episodes == 300 and reference.outcomes == {"terminated": 300}
    assert reference.reward_components["em"] > 0.5  # 0.62 over all 48,201 questions
    assert baseline.reward_components["f1"] < 0.02
    assert all(len(t.turns) == 3 for t in trajectories)


async def test_text_reply_ends_the_episode_as_the_answer(corpus: Corpus) -> None:
    env = make("search")
    await env.reset(task_for(corpus, SUPER_BOWL))
    result = await env.step(Message(role="assistant", content="Denver Broncos"))
    assert result.terminated and result.reward == 1.0


async def test_reference_answers_from_the_page_it_opened_and_never_guesses(corpus: Corpus) -> None:
    env = make("search")
    for question in corpus.questions[:40]:
        task = task_for(corpus, question.id)
        trajectory = await rollout(env, ReferencePolicy(), task)
        assert [t.action.tool_calls[0].name for t in trajectory.turns] == ["search", "open", "answer"]
        page = trajectory.turns[1].observation[0].text
        answer = json.loads(trajectory.turns[2].action.tool_calls[0].arguments)["answer"]
        if any(a in page for a in question.answers):
            assert answer in page and trajectory.reward_components["em"] == 1.0
        else:
            assert answer == "unknown"
    await env.close()
    await env.close()


def test_agentgym_eval_runs_the_reference_from_the_command_line(tmp_path: Path) -> None:
    out = tmp_path / "run.jsonl"
    done = subprocess.run([sys.executable, "-m", "agentgym.cli", "eval", "search", "--model", "reference",
                           "--limit", "20", "--out", str(out)], cwd=tmp_path, text=True, capture_output=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    summary = json.loads(out.with_suffix(".summary.json").read_text())
    assert summary["episodes"] == 20 and summary["outcomes"] == {"terminated": 20}
    assert summary["reward_components"]["em"] > 0.5 and "reward[f1]" in done.stdout


async def test_an_episode_that_runs_out_of_turns_scores_zero(corpus: Corpus) -> None:
    env = make("search", max_turns=2)
    await env.reset(task_for(corpus, SUPER_BOWL))
    await env.step(call("search", query="Super Bowl 50"))
    result = await env.step(call("open", id_or_url="squad-0"))
    assert result.truncated and not result.terminated and result.reward == 0.0
    assert result.info["reward"]["components"] == {"em": 0.0, "f1": 0.0}


def test_backends_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentgym.envs.search.providers import Brave
    from agentgym.envs.search.simulated import SimulatedSearch

    monkeypatch.setenv("BRAVE_API_KEY", "k")
    env = make("search", backend="brave")
    assert isinstance(env.backend, Brave) and env.backend.base_url == "https://api.search.brave.com"
    simulated = make("search", backend="simulated:openai/gpt-4o-mini").backend
    assert isinstance(simulated, SimulatedSearch) and simulated.model == "openai/gpt-4o-mini"
    monkeypatch.delenv("SERPER_API_KEY", raising=False)
    with pytest.raises(EnvError, match="set SERPER_API_KEY"):
        make("search", backend="serper")
