"""Task streams: ``repeat=None`` trains on any number of tasks without listing them as rows in memory.

``examples/train_grpo.py --env search`` once repeated the search env's 48,201 questions 1,000 times
in a list and ran out of memory before its first step; it now trains on a stream, as these tests do.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from agentgym.errors import EnvError
from agentgym.trl import TASK_COLUMN, environment_spec, rollout_spec, task_dataset
from agentgym.types import Task
from tests.trl.conftest import grpo_config


def task_ids(dataset: Any, n: int) -> list[str]:
    return [Task.model_validate_json(row[TASK_COLUMN]).id for row in itertools.islice(iter(dataset), n)]


def test_a_stream_passes_over_the_tasks_in_a_seeded_order() -> None:
    from datasets import IterableDataset

    from agentgym.envs.search.env import corpus_tasks

    stream = task_dataset("search", repeat=None)
    assert isinstance(stream, IterableDataset)
    first = task_ids(stream, 200)
    assert len(set(first)) == 200 and set(first) <= {t.id for t in corpus_tasks("all")}  # no repeats in a pass
    assert len({task_id.split("/")[0] for task_id in first}) == 5  # shuffled: the corpus lists squad first
    assert task_ids(task_dataset("search", repeat=None), 200) == first
    assert task_ids(task_dataset("search", repeat=None, seed=1), 200) != first
    row = next(iter(stream))
    assert row["prompt"][0]["role"] == "system" and row["prompt"][-1][TASK_COLUMN] == row[TASK_COLUMN]


def test_a_stream_of_few_tasks_never_runs_dry() -> None:
    tasks = [Task(id=colour, prompt="Pick a colour.", data={"colour": colour}) for colour in ("red", "blue")]
    ids = task_ids(task_dataset("toy", tasks, repeat=None), 100)
    assert len(ids) == 100 and all(sorted(ids[i:i + 2]) == ["blue", "red"] for i in range(0, 100, 2))
    assert ids[:10] != ["red", "blue"] * 5  # each pass in its own order
    with pytest.raises(EnvError, match="repeat must be at least 1"):
        task_dataset("toy", tasks, repeat=0)


@pytest.mark.parametrize("make_spec", [rollout_spec, environment_spec], ids=["rollout", "environment"])
def test_grpo_trains_on_a_stream_of_every_search_question(
    make_spec: Any, agent: tuple[Any, Any], tmp_path: Any
) -> None:
    from trl import GRPOTrainer

    model, tokenizer = agent
    spec = make_spec("search", repeat=None)
    trainer = GRPOTrainer(model, args=grpo_config(tmp_path, max_steps=1), processing_class=tokenizer,
                          **spec.trainer_kwargs())
    trainer.train()
    assert trainer.state.global_step == 1
    assert any("rewards/agentgym/search-v0/mean" in h for h in trainer.state.log_history)
