"""Every speed benchmark script runs in a tiny configuration (``--quick``) and writes the JSON the docs read.

These check what the scripts produce (the keys, that work was metered), never how fast anything is:
timing targets live in the scripts' output, not in tests.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from agentgym.sandboxes import engine
from tests.benchmarks.scripts import BENCHMARKS, run_script
from tests.conftest import docker_or_skip

REPO = Path(__file__).parents[2]


def _peer_harness() -> ModuleType:
    """``benchmarks/peer_harness.py``: where the script looks for the OpenEnv harness, so the test looks there too."""
    spec = importlib.util.spec_from_file_location("peer_harness", BENCHMARKS / "peer_harness.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HARNESS = _peer_harness().bench_py()
HARNESS_PY = _peer_harness().venv_python()

pytestmark = pytest.mark.docker


def run_quick(script: str, tmp_path: Path, *args: str) -> dict[str, Any]:
    docker_or_skip()
    return run_script(script, tmp_path / f"{script}.json", "--quick", *args)


def is_spread(value: Any) -> bool:
    """A median with its range, as every repeated figure is reported."""
    return isinstance(value, dict) and value["min"] <= value["median"] <= value["max"]


def test_code_env_throughput(tmp_path: Path) -> None:
    result = run_quick("code_env_throughput", tmp_path)
    assert result["info"]["commit"]
    levels = {(r["backend"], r["sessions"]): r for r in result["levels"]}
    assert set(levels) == {("docker", 1), ("docker", 2), ("local", 1), ("local", 2)}
    for (backend, _), level in levels.items():
        episodes = level["episodes"]
        for key in ("reset_p50_ms", "reset_p95_ms", "step_p50_ms", "steps_per_s", "steps_per_cpu_s",
                    "steps_per_cpu_s_with_daemons", "cpu_ms_per_episode"):
            assert is_spread(episodes[key]), key
            assert episodes[key]["median"] > 0, key
        assert is_spread(level["step_only"]["steps_per_cpu_s"])
        assert len(level["runs"]["episodes"]) == 2
        assert level["memory"]["per_idle_sandbox_mb"]["median"] > 1
        cpu = level["runs"]["episodes"][0]["cpu_s"]
        # the sandboxes' work is charged: to the run's own containers on docker, to its children on local
        if backend == "docker":
            assert cpu["own_containers_seen"] >= 1 and cpu["containers"] > 0
        else:
            assert cpu["child_processes"] > 0 and cpu["containers"] == 0


def test_wipe_cost(tmp_path: Path) -> None:
    result = run_quick("wipe_cost", tmp_path)
    rows = {r["backend"]: r for r in result["levels"]}
    assert set(rows) == {"docker", "local"}
    for row in rows.values():
        assert row["summary"]["wipes"]["min"] >= 1
        assert is_spread(row["summary"]["cpu_ms_per_wipe"]) and row["summary"]["cpu_ms_per_wipe"]["min"] > 0
        assert is_spread(row["summary"]["close_to_answer_p50_ms"])


def test_episode_cost(tmp_path: Path) -> None:
    # against a supervisor that is this one in another folder (the A/B path, which must charge both alike),
    # and with python calls through the supervisor
    other = tmp_path / "supervisor"
    other.mkdir()
    for module in (REPO / "sandboxes" / "supervisor").glob("*.py"):
        (other / module.name).write_text(module.read_text())
    # 200 steps, not the script's 20: their cost must stand out of a loaded machine's noise in short windows
    # (20 print(1) calls cost about what the wipe's jitter does)
    result = run_quick("episode_cost", tmp_path, "--against", str(other), "--through-agent", "--steps", "0", "200")
    arms = ("this checkout", other.name, "this checkout, python calls through the agent")  # by name, not path
    assert {(r["steps"], r["agent"]) for r in result["levels"]} == {(n, a) for n in (0, 200) for a in arms}
    by_arm = {}
    for agent in arms:
        rows = by_arm[agent] = {r["steps"]: r["summary"] for r in result["levels"] if r["agent"] == agent}
        for steps, row in rows.items():
            parts = {role: row[f"{role}_ms_per_episode"]["median"] for role in ("client", "agent", "sessions")}
            assert parts["sessions"] > 0, (steps, parts)  # the wipe's fork, in the zygote's count, was charged
            assert sum(parts.values()) == pytest.approx(row["total_ms_per_episode"]["median"], rel=0.5)
            # every new session copies pages of the zygote: its faults are counted, and what one costs
            assert row["sessions_faults_per_episode"]["median"] > 50 and row["fault_us"]["median"] > 0
        # steps are charged to the client and to the sessions that run them
        for role in ("client", "sessions"):
            assert rows[200][f"{role}_ms_per_episode"]["median"] > rows[0][f"{role}_ms_per_episode"]["median"], role
    # ... and to the agent only when the calls go through it: a direct session's calls never wake it
    through = by_arm[arms[2]]
    assert through[200]["agent_ms_per_episode"]["median"] > through[0]["agent_ms_per_episode"]["median"]
    for direct in arms[:2]:
        assert by_arm[direct][200]["agent_ms_per_episode"]["median"] < through[200]["agent_ms_per_episode"]["median"]


def test_humaneval_reference(tmp_path: Path) -> None:
    result = run_quick("humaneval_reference", tmp_path)
    rows = {r["run"]: r for r in result["rows"]}
    assert set(rows) == {"agentgym docker", "agentgym local", "naive docker run --rm"}
    for row in rows.values():
        assert [r["episodes"] for r in row["runs"]] == [8, 8]
        assert all(0 <= r["passed"] <= 8 for r in row["runs"])
        assert is_spread(row["vs_naive"]) and is_spread(row["summary"]["episodes_per_s"])
    assert all(r["passed"] == 8 for kind in ("agentgym docker", "agentgym local") for r in rows[kind]["runs"])
    naive = rows["naive docker run --rm"]
    assert naive["vs_naive"]["median"] == 1
    assert naive["runs"][0]["cpu_s"]["containers"] > 0  # the naive containers, under the run's cgroup parent
    assert not list(Path("/sys/fs/cgroup/cpuacct").glob("agentgym-bench-*"))  # and that parent is removed


def test_openenv_side_by_side(tmp_path: Path) -> None:
    if not (HARNESS.exists() and HARNESS_PY.exists()):
        pytest.skip(f"the OpenEnv peer harness is not set up ({HARNESS}, {HARNESS_PY}): see its README")
    result = run_quick("openenv_side_by_side", tmp_path)
    assert set(result["summary"]) == {"coding-docker", "agentgym-docker", "agentgym-local"}
    for ratio in result["ratios"].values():
        assert is_spread(ratio["steps_per_s"]) and is_spread(ratio["steps_per_cpu_s"])
    assert all(row["errors"] == 0 for row in result["runs"][0])


def test_docker_endpoints(tmp_path: Path) -> None:
    result = run_quick("docker_endpoints", tmp_path)
    rows = {r["path"]: r for r in result["rows"]}
    assert {path: row["attach_stream"] for path, row in rows.items()} == {
        "unix direct": False, "unix attach": True, "tcp+tls attach": True}
    for row in rows.values():
        for key in ("ping_p50_ms", "exec_p50_ms", "exec_p95_ms", "start_p50_ms"):
            assert is_spread(row["summary"][key]) and row["summary"][key]["median"] > 0, key
    assert result["image_copy_s"] > 0


def test_sandbox_fork(tmp_path: Path) -> None:
    result = run_quick("sandbox_fork", tmp_path)
    assert result["tree"]["files"] == 30 and result["tree"]["bytes"] > 0
    rows = {(r["backend"], r["place"], r["n"]): r for r in result["rows"]}
    assert set(rows) == {(b, p, n) for b, p in (("docker", "tmpfs"), ("docker", "root"), ("local", "tmpfs"))
                         for n in (1, 2)}
    for (_, place, _), row in rows.items():
        assert len(row["runs"]) == 2
        keys = ["fork_s", "fresh_reapply_s", "fresh_only_s", "fresh_reapply_over_fork", "fork_cpu_ms",
                "fresh_reapply_cpu_ms"]
        warm = ["fork_warm_pool_s", "fork_warm_pool_cpu_ms", "fresh_reapply_over_warm_fork"]
        keys += warm if place == "tmpfs" else []
        assert all(is_spread(row[k]) and row[k]["min"] > 0 for k in keys)
        assert ("fork_warm_pool_s" in row) == (place == "tmpfs")
    images = engine.client().api.images(all=True, filters={"reference": "agentgym-bench-fork"})
    assert images == []  # the root scenario's base image is removed


def test_ray_executor(tmp_path: Path) -> None:
    result = run_quick("ray_executor", tmp_path)
    rows = {(r["setup"], r["workload"]): r for r in result["rows"]}
    setups, workloads = ("local", "ray-1", "ray-2"), ("toy", "toy-serial", "humaneval")
    assert set(rows) == {(s, w) for s in setups for w in workloads}
    for (_, workload), row in rows.items():
        assert [r["episodes"] for r in row["runs"]] == [{"toy": 15, "toy-serial": 3, "humaneval": 8}[workload]]
        assert is_spread(row["summary"]["episodes_per_s"]) and row["summary"]["episodes_per_s"]["min"] > 0
    assert [len(c["node_start_s"]) for c in result["clusters"].values()] == [1, 2]
    assert set(result["ray_adds_ms_per_episode"]) == {"ray-1", "ray-2"}
    assert all(is_spread(v) for v in result["ray_adds_ms_per_episode"].values())
    driver = result["driver"]
    assert driver["us_per_episode"] > 0 and driver["episode_spec_bytes"] > 1000 < driver["trajectory_json_bytes"]


def test_swe_synthesis(tmp_path: Path) -> None:
    result = run_quick("swe_synthesis", tmp_path)
    assert result["info"]["commit"] and result["info"]["count"] == 1
    [row] = result["packages"]
    assert (row["package"], row["tasks"]) == ("toolz", 1)
    assert row["mutants_tried"] >= 1 and row["tasks_per_minute"] > 0 and row["seconds_per_mutant"] > 0
    assert len(row["fail_to_pass_per_task"]) == 1 and row["fail_to_pass_per_task"][0] >= 1


def test_before_after(tmp_path: Path) -> None:
    """The same checkout as both arms: every figure is read from both, and each ratio is one of a round."""
    result = run_quick("before_after", tmp_path, "--versions", f"{REPO},{REPO}")
    assert result["versions"] == [REPO.name, REPO.name]
    figures = {row["figure"]: row for row in result["rows"]}
    assert {f"{backend} x{n} cpu_ms_per_wipe" for backend in ("docker", "local") for n in (1, 8)} <= set(figures)
    for row in figures.values():
        assert row["benchmark"] == "wipe" and row["kind"] == "cost"
        assert is_spread(row["old"]) and is_spread(row["new"]) and is_spread(row["new_over_old"])
        assert row["new_over_old"]["median"] == row["new"]["median"] / row["old"]["median"]  # one round


def test_code_grading_cost(tmp_path: Path) -> None:
    """Both modes grade the 20,000-call task and the HumanEval tasks as passed; the dry run keeps them isolated."""
    result = run_quick("code_grading_cost", tmp_path)
    assert result["info"]["commit"] and result["sandbox"] == "local"
    for mode in ("isolated", "inprocess"):
        figures = result["modes"][mode]
        assert figures["20000_calls_passed"] is True and figures["humaneval_passed"] == "3/3"
        assert figures["20000_calls_s"] > 0 and figures["humaneval_s_per_task"] > 0
    assert result["dry_run"]["kept_isolated"] == "3/3"


def test_harbor_terminal(tmp_path: Path) -> None:
    result = run_quick("harbor_terminal", tmp_path)
    assert result["info"]["commit"] and result["tasks"] == 4
    assert (result["oracle_passed"], result["baseline_passed"], result["oracle_failed"]) == (4, 0, [])
    assert result["samples"] == 2 and all(is_spread(result[k]) for k in ("grading_ms", "docker_run_ms"))
    assert result["grading_vs_docker_run"]["min"] > 0
    assert (result["group"], result["rounds"]) == (3, 1) and result["reuse_vs_fresh"]["min"] > 0
    assert all(is_spread(result["group_episode_s"][arm]) for arm in ("reused", "fresh"))
