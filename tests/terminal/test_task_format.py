"""Harbor task folders: the fixtures load, and what the terminal env cannot run as written is refused at load,
naming the field or file. No Docker: nothing here runs a task."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from agentgym.envs.terminal import HONOURED, TaskConfig, TaskFormatError, load_task, load_tasks
from agentgym.envs.terminal.config import NetworkMode
from agentgym.envs.terminal.honoured import is_honoured
from agentgym.errors import DataError
from tests.terminal.harbor_check import schema

TASKS = Path(__file__).parent / "tasks"
BASE_IMAGE = "python:3.13-slim-bookworm"


def make_task(root: Path, toml: str = "", *, name: str = "t", dockerfile: bool = True,
              instruction: str | None = "Do it.\n", test: bool = True) -> Path:
    """A minimal valid task folder (given no arguments), to break one thing at a time."""
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "task.toml").write_text(toml)
    if instruction is not None:
        (folder / "instruction.md").write_text(instruction)
    if dockerfile:
        (folder / "environment").mkdir()
        (folder / "environment" / "Dockerfile").write_text(f"FROM {BASE_IMAGE}\n")
    if test:
        (folder / "tests").mkdir()
        (folder / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    return folder


def refusal(folder: Path) -> TaskFormatError:
    with pytest.raises(TaskFormatError) as caught:
        load_task(folder)
    assert str(folder) in str(caught.value)  # names the task
    return caught.value


# The fixtures


def test_every_fixture_loads():
    tasks = load_tasks(TASKS)
    assert len(tasks) >= 12
    assert len(tasks) == len([p for p in TASKS.iterdir() if p.is_dir()])
    for task in tasks:
        assert task.instruction.strip()
        assert task.test_script.is_file()
        assert task.environment_dir is not None or task.docker_image is not None
        assert task.solution is None or task.solution.name == "solve.sh"


def test_the_fixtures_span_the_format():
    tasks = {task.path.name: task for task in load_tasks(TASKS)}
    assert tasks["prebuilt-image"].docker_image == BASE_IMAGE
    assert not (TASKS / "prebuilt-image" / "environment").exists()
    assert tasks["no-oracle"].solution is None
    assert tasks["quick-verifier"].config.verifier.timeout_sec <= 10
    assert "reward.json" in (TASKS / "word-stats" / "tests" / "test.sh").read_text()
    assert len(list((TASKS / "sort-names" / "tests").iterdir())) > 2
    assert "COPY" in (TASKS / "csv-column-sum" / "environment" / "Dockerfile").read_text()
    assert tasks["offline-checksum"].config.environment.network_mode == NetworkMode.NO_NETWORK
    assert tasks["greeting-env"].config.verifier.env == {"EXPECTED_GREETING": "bonjour"}
    assert tasks["greeting-env"].config.solution.env == {"GREETING": "bonjour"}
    environment = tasks["count-primes"].config.environment
    assert (environment.cpus, environment.memory_mb, environment.storage_mb) == (2, 2048, 4096)


def test_terminal_bench_2_spellings_read_as_harbor_reads_them():
    config = load_task(TASKS / "legacy-fields").config
    assert config.schema_version == "1.0"  # from `version`
    assert (config.environment.memory_mb, config.environment.storage_mb) == (1024, 2048)  # "1G", "2G"
    assert config.environment.network_mode == NetworkMode.NO_NETWORK  # allow_internet = false
    assert config.environment.allow_internet is None
    assert config.environment.gpus == 0
    assert config.metadata["expert_time_estimate_min"] == 5.0


def test_task_section_names_the_task_and_the_canary_is_dropped():
    task = load_task(TASKS / "registry-named")
    assert task.name == "agentgym-fixtures/reverse-lines"
    assert task.instruction.startswith("Write the lines")
    assert "canary" in (TASKS / "registry-named" / "instruction.md").read_text()


def test_fixture_scripts_are_bash_and_executable_and_images_build_offline():
    scripts = sorted(TASKS.glob("*/**/*.sh"))
    assert scripts
    for script in scripts:
        assert script.read_text().startswith("#!/bin/bash\n"), script
        assert script.stat().st_mode & stat.S_IXUSR, script
    for dockerfile in TASKS.glob("*/environment/Dockerfile"):
        lines = dockerfile.read_text().splitlines()
        assert lines[0] == f"FROM {BASE_IMAGE}", dockerfile
        assert not any(word in line for line in lines for word in ("pip", "apt", "curl", "wget")), dockerfile


# Unknown and unhonoured fields


@pytest.mark.parametrize(("toml", "field"), [
    ("timeout = 5\n", "timeout"),
    ("[environment]\ngpu_count = 1\n", "environment.gpu_count"),
    ("[verifier]\ntimeout = 5\n", "verifier.timeout"),
    ("[task]\nname = 'a/b'\nhomepage = 'x'\n", "task.homepage"),
    ("[environment.healthcheck]\ncommand = 'true'\nevery = 2\n", "environment.healthcheck.every"),
])
def test_an_unknown_field_is_refused_by_name(tmp_path, toml, field):
    error = refusal(make_task(tmp_path, toml))
    assert field in error.fields
    assert f"unknown field {field}" in str(error)


def test_a_badly_typed_field_is_named_as_task_toml_spells_it(tmp_path):
    error = refusal(make_task(tmp_path, "[environment]\ncpus = 'many'\n[[steps]]\nname = 'a'\nmin_reward = 'x'\n"))
    assert error.fields == ("environment.cpus", "steps[0].min_reward")  # no union member names (".int")


@pytest.mark.parametrize(("toml", "field"), [
    ("[environment]\nworkdir = '/work'\n", "environment.workdir"),
    ("[environment]\nos = 'windows'\n", "environment.os"),
    ("[environment]\ngpus = 1\n", "environment.gpus"),
    ("[environment]\ngpu_types = ['H100']\n", "environment.gpu_types"),
    ("[environment]\nnetwork_mode = 'allowlist'\nallowed_hosts = ['example.com']\n", "environment.network_mode"),
    ("[environment]\nnetwork_mode = 'allowlist'\nallowed_hosts = ['example.com']\n", "environment.allowed_hosts"),
    ("[environment]\nskills_dir = '/skills'\n", "environment.skills_dir"),
    ("[environment.env]\nA = 'b'\n", "environment.env"),
    ("[environment.healthcheck]\ncommand = 'true'\n", "environment.healthcheck"),
    ("[[environment.mcp_servers]]\nname = 'm'\nurl = 'http://127.0.0.1:1/'\n", "environment.mcp_servers"),
    ("[agent]\nuser = 'agent'\n", "agent.user"),
    ("[agent]\nnetwork_mode = 'no-network'\n", "agent.network_mode"),
    ("[verifier]\nuser = 1000\n", "verifier.user"),
    ("[verifier.environment]\ncpus = 1\n", "verifier.environment"),
    ("[[verifier.collect]]\ncommand = 'true'\n", "verifier.collect"),
    ("[verifier.env]\nTOKEN = '${TOKEN}'\n", "verifier.env"),
    ("[solution.env]\nKEY = '${KEY:-x}'\n", "solution.env"),
    ("[agent]\ntimeout_sec = 0\n", "agent.timeout_sec"),
    ("[environment]\nmemory_mb = -1\n", "environment.memory_mb"),
    ("artifacts = ['/app/out']\n", "artifacts"),
    ("[[steps]]\nname = 'one'\n", "steps"),
    ("multi_step_reward_strategy = 'final'\n", "multi_step_reward_strategy"),
])
def test_a_field_set_but_not_honoured_is_refused_by_name(tmp_path, toml, field):
    error = refusal(make_task(tmp_path, toml))
    assert field in error.fields
    assert field in str(error)


def test_every_refusal_is_named_at_once(tmp_path):
    error = refusal(make_task(tmp_path, "[environment]\nworkdir = '/w'\ngpus = 2\n[agent]\nuser = 'a'\n"))
    assert set(error.fields) == {"environment.workdir", "environment.gpus", "agent.user"}


@pytest.mark.parametrize("toml", [
    "[environment]\nos = 'Linux'\ngpus = 0\nmcp_servers = []\nnetwork_mode = 'public'\n",
    "[verifier]\nenvironment_mode = 'shared'\n[verifier.env]\nLEVEL = 'debug'\n",
    "[verifier]\nenvironment_mode = 'separate'\n",
    "[environment.env]\n[solution.env]\n[agent]\ntimeout_sec = 60\n",
    "[environment]\nallow_internet = true\n",
])
def test_fields_at_their_default_or_an_honoured_value_load(tmp_path, toml):
    load_task(make_task(tmp_path, toml))


def test_honoured_names_are_harbor_fields():
    fields = schema(TaskConfig)
    for name in HONOURED:
        assert name.removesuffix(".*") in fields, name
    assert not is_honoured("environment.workdir")
    assert is_honoured("metadata.anything.below")


@pytest.mark.parametrize(("toml", "words"), [
    ("version = '1.0'\nschema_version = '1.1'\n", "disagree"),
    ("[environment]\nmemory = 2048\n", "size string"),
    ("[environment]\nmemory = '1G'\nmemory_mb = 512\n", "Conflicting"),
    ("[environment]\nallow_internet = 'yes'\n", "allow_internet"),
    ("[environment]\nnetwork_mode = 'public'\nallowed_hosts = ['example.com']\n", "allowed_hosts"),
    ("[task]\nname = 'no-slash'\n", "org/name"),
    ("version = \n", "not TOML"),
])
def test_what_harbor_would_drop_or_refuse_is_refused(tmp_path, toml, words):
    assert words in str(refusal(make_task(tmp_path, toml)))


# The folder


def test_a_missing_or_empty_instruction_is_refused(tmp_path):
    assert refusal(make_task(tmp_path / "a", instruction=None)).fields == ("instruction.md",)
    canary_only = "<!-- canary GUID 1234 -->\n\n  \n"
    assert "empty" in str(refusal(make_task(tmp_path / "b", instruction=canary_only)))


def test_a_missing_verifier_is_refused(tmp_path):
    assert refusal(make_task(tmp_path, test=False)).fields == ("tests/test.sh",)


def test_the_image_source_must_be_given(tmp_path):
    both = load_task(make_task(tmp_path / "a", f"[environment]\ndocker_image = '{BASE_IMAGE}'\n"))
    assert both.docker_image == BASE_IMAGE and both.environment_dir is not None  # as Terminal-Bench 2 ships
    neither = refusal(make_task(tmp_path / "b", dockerfile=False))
    assert "neither" in str(neither)
    image_only = load_task(make_task(tmp_path / "c", f"[environment]\ndocker_image = '{BASE_IMAGE}'\n",
                                     dockerfile=False))
    assert (image_only.docker_image, image_only.environment_dir) == (BASE_IMAGE, None)


def test_files_harbor_would_act_on_are_refused(tmp_path):
    compose = make_task(tmp_path / "a")
    (compose / "environment" / "docker-compose.yaml").write_text("services: {}\n")
    assert refusal(compose).fields == ("environment/docker-compose.yaml",)
    prior = make_task(tmp_path / "b")
    (prior / "trajectory.json").write_text("{}")
    assert refusal(prior).fields == ("trajectory.json",)


def test_a_folder_of_tasks_holds_only_tasks_with_unique_names(tmp_path):
    make_task(tmp_path, name="one")
    make_task(tmp_path, name="two")
    (tmp_path / ".hidden").mkdir()
    assert [task.name for task in load_tasks(tmp_path)] == ["one", "two"]
    assert [task.name for task in load_tasks(tmp_path / "one")] == ["one"]
    (tmp_path / "stray").mkdir()
    with pytest.raises(TaskFormatError, match=r"no task\.toml"):
        load_tasks(tmp_path)
    shutil.rmtree(tmp_path / "stray")
    for name in ("one", "two"):
        (tmp_path / name / "task.toml").write_text("[task]\nname = 'org/same'\n")
    with pytest.raises(TaskFormatError, match="org/same"):
        load_tasks(tmp_path)


def test_a_format_error_is_a_data_error(tmp_path):
    with pytest.raises(DataError):
        load_tasks(tmp_path / "absent")


# The build context's hash


def test_build_context_hash_follows_the_environment_and_nothing_else(tmp_path):
    folder = tmp_path / "csv-column-sum"
    shutil.copytree(TASKS / "csv-column-sum", folder)
    original = load_task(folder).build_context_hash()

    (folder / "tests" / "test.sh").write_text("#!/bin/bash\necho 0 > /logs/verifier/reward.txt\n")
    (folder / "solution" / "solve.sh").write_text("#!/bin/bash\n")
    (folder / "instruction.md").write_text("Something else.\n")
    (folder / "tests" / "extra.txt").write_text("more tests\n")
    assert load_task(folder).build_context_hash() == original

    context = folder / "environment" / "sales.csv"
    seen = {original}
    for change in (lambda: context.write_text(context.read_text() + "6,south,1.00\n"),
                   lambda: os.chmod(context, 0o755),
                   lambda: (folder / "environment" / "notes.txt").write_text(""),
                   lambda: (folder / "environment" / "notes.txt").rename(folder / "environment" / "other.txt"),
                   lambda: (folder / "environment" / "sub").mkdir()):
        change()
        digest = load_task(folder).build_context_hash()
        assert digest not in seen
        seen.add(digest)


def test_identical_contexts_hash_alike_and_image_tasks_by_their_image():
    tasks = {task.path.name: task for task in load_tasks(TASKS)}
    assert tasks["hello-file"].build_context_hash() == tasks["sleep-ticks"].build_context_hash()
    assert tasks["hello-file"].build_context_hash() != tasks["csv-column-sum"].build_context_hash()
    assert tasks["prebuilt-image"].build_context_hash() not in {
        task.build_context_hash() for name, task in tasks.items() if name != "prebuilt-image"}
