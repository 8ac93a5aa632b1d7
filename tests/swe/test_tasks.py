"""SWE-bench-format tasks: JSONL, a dataset saved to disk (as SWE-bench, SWE-Gym, SWE-smith publish them), errors."""

from __future__ import annotations

import json

import pytest

from agentgym.envs.swe.images import swebench_image_name
from agentgym.envs.swe.tasks import SWETask, load_tasks
from agentgym.errors import DataError

ROW = {
    "instance_id": "astropy__astropy-12907", "repo": "astropy/astropy",
    "base_commit": "d16bfe05a744909de4b27f5875fe0d4ed41ce607",
    "problem_statement": "Modeling's `separability_matrix` does not compute separability correctly for nested "
                         "CompoundModels",
    "patch": "diff --git a/x b/x\n", "test_patch": "diff --git a/t b/t\n", "version": "4.3",
    "FAIL_TO_PASS": '["astropy/modeling/tests/test_separable.py::test_separable[compound_model6-result6]"]',
    "PASS_TO_PASS": '["astropy/modeling/tests/test_separable.py::test_coord_matrix"]',
    "hints_text": "", "created_at": "2022-03-03T15:14:54Z",
    "environment_setup_commit": "298ccb478e6bf092953bca67a3d29dc6c35f6752",
}


def test_jsonl_rows_become_tasks_with_lists_decoded(tmp_path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(ROW) + "\n" + json.dumps({**ROW, "instance_id": "b__b-1", "FAIL_TO_PASS": ["t::a"],
                                                          "version": 1.0, "extra_field": 7}) + "\n")
    tasks = load_tasks(path)
    assert [t.id for t in tasks] == ["astropy__astropy-12907", "b__b-1"]
    first = SWETask.of(tasks[0])
    assert first.FAIL_TO_PASS == ["astropy/modeling/tests/test_separable.py::test_separable[compound_model6-result6]"]
    assert first.PASS_TO_PASS == ["astropy/modeling/tests/test_separable.py::test_coord_matrix"]
    assert "separability_matrix" in tasks[0].prompt and "/testbed" in tasks[0].prompt
    assert ROW["patch"] not in tasks[0].prompt  # the gold patch is data, never shown
    second = SWETask.of(tasks[1])
    assert second.version == "1.0" and second.model_extra == {"extra_field": 7}


def test_a_dataset_saved_to_disk_loads_like_the_hub(tmp_path) -> None:
    datasets = pytest.importorskip("datasets")
    rows = [ROW, {**ROW, "instance_id": "django__django-11099"}]
    datasets.Dataset.from_list(rows).save_to_disk(str(tmp_path / "flat"))
    datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)}).save_to_disk(str(tmp_path / "dict"))
    flat = load_tasks(tmp_path / "flat")
    split = load_tasks(str(tmp_path / "dict"), split="test", limit=1)
    assert [t.id for t in flat] == ["astropy__astropy-12907", "django__django-11099"]
    assert [t.id for t in split] == ["astropy__astropy-12907"]
    assert SWETask.of(flat[1]).PASS_TO_PASS == ["astropy/modeling/tests/test_separable.py::test_coord_matrix"]
    with pytest.raises(DataError, match="no split 'train'; it has test"):
        load_tasks(tmp_path / "dict", split="train")


def test_bad_rows_and_sources_are_clear_errors(tmp_path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({**ROW, "FAIL_TO_PASS": "[]"}) + "\n")
    with pytest.raises(DataError, match=r"bad.jsonl:1: .*FAIL_TO_PASS is empty"):
        load_tasks(path)
    path.write_text(json.dumps({k: v for k, v in ROW.items() if k != "base_commit"}) + "\n")
    with pytest.raises(DataError, match="missing field 'base_commit'"):
        load_tasks(path)
    path.write_text(json.dumps({**ROW, "FAIL_TO_PASS": "not json"}) + "\n")
    with pytest.raises(DataError, match="not a JSON list of test ids"):
        load_tasks(path)
    with pytest.raises(DataError, match="could not read SWE tasks from directory"):
        (tmp_path / "empty").mkdir()
        load_tasks(tmp_path / "empty")


def test_official_image_name_follows_swebench() -> None:
    from swebench.task.checks import expected_image

    for instance in ("django__django-11099", "astropy__astropy-12907", "psf__requests-2317"):
        assert swebench_image_name(instance) == expected_image(instance)
    assert swebench_image_name("django__django-11099") == "swebench/sweb.eval.x86_64.django_1776_django-11099:latest"


def test_a_test_command_that_is_not_pytest_is_refused_at_load(tmp_path) -> None:
    from agentgym.envs.swe.tasks import SWETask
    from agentgym.errors import DataError

    row = {"instance_id": "a-1", "repo": "a/a", "base_commit": "0" * 40, "problem_statement": "x",
           "FAIL_TO_PASS": ["t.py::test_a"]}
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({**row, "test_cmd": "python -m unittest"}) + "\n")
    with pytest.raises(DataError, match="does not run pytest"):
        load_tasks(path)
    for ok in ("python3 -m pytest -rA", "PYTHONPATH=src pytest -x", "cd sub && py.test"):
        assert SWETask.model_validate({**row, "test_cmd": ok}).test_cmd == ok
    assert SWETask.model_validate({**row, "test_cmd": "./run.sh", "eval_script": "./run.sh"}).eval_script
