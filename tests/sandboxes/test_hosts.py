"""Sandboxes on other Docker engines: endpoints, spreading by capacity, images copied, reaping and pruning per engine.

The docker tests start a second engine on this machine (``agentgym/testing/dockerd.py``: its own socket, data
root and exec root, plus a mutual-TLS tcp listener) and never prune the shared one.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentgym.cli import main
from agentgym.errors import SandboxError
from agentgym.sandboxes import SandboxPool, attach, builder, engine, hosts, reaper, shutdown_pools
from agentgym.sandboxes.docker import create
from agentgym.sandboxes.hosts import Endpoint
from agentgym.testing.dockerd import Engine, second_engine
from tests.conftest import docker_or_skip
from tests.sandboxes.conftest import SMALL
from tests.sandboxes.test_leaks import dead_pid


# ------------------------------------------------------------------------------------- no engine needed
def test_endpoints_parse_from_docker_host_forms(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DOCKER_TLS_VERIFY", raising=False)
    assert hosts.parse("unix:///run/a.sock=32") == Endpoint("unix:///run/a.sock", 32)
    assert hosts.parse("unix:///run/a.sock=32").capacity == 32
    assert hosts.parse("ssh://me@box:2222").capacity is None
    plain = hosts.parse("tcp://10.0.0.5:2375=8")
    assert not plain.tls_verify and not plain.local and hosts.parse("unix:///x").local
    monkeypatch.setenv("DOCKER_TLS_VERIFY", "1")
    monkeypatch.setenv("DOCKER_CERT_PATH", "/nowhere")
    secure = hosts.parse("tcp://10.0.0.5:2376")
    assert secure.tls_verify and not hosts.parse("unix:///x").tls_verify
    with pytest.raises(SandboxError, match=r"/nowhere/ca\.pem"):
        secure.certificates()
    for bad, reason in [("http://x:1", "use unix"), ("tcp://host", "no port"), ("unix://", "no socket path"),
                        ("unix:///a=x", "whole number"), ("unix:///a=0", "at least 1")]:
        with pytest.raises(SandboxError, match=reason):
            hosts.parse(bad)


def test_configured_endpoints_come_from_code_then_env_then_docker_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///run/only.sock")
    monkeypatch.delenv(hosts.ENV_VAR, raising=False)
    assert hosts.configured() == (Endpoint("unix:///run/only.sock"),)
    monkeypatch.setenv(hosts.ENV_VAR, "unix:///run/a.sock=4, tcp://10.0.0.5:2375=12")
    assert [str(e) for e in hosts.configured()] == ["unix:///run/a.sock=4", "tcp://10.0.0.5:2375=12"]
    monkeypatch.setenv(hosts.ENV_VAR, "unix:///run/a.sock=4,unix:///run/a.sock=2")
    with pytest.raises(SandboxError, match=f"{hosts.ENV_VAR}: .* given twice"):
        hosts.configured()
    hosts.configure(["unix:///run/b.sock=1"])
    try:
        assert hosts.configured() == (Endpoint("unix:///run/b.sock"),)
    finally:
        hosts.configure(None)
    with pytest.raises(SandboxError, match="no Docker endpoint"):
        hosts.configure([])


def test_placement_follows_capacity_and_waits_when_full() -> None:
    big, small = Endpoint(f"unix:///{uuid.uuid4().hex}/big", 3), Endpoint(f"unix:///{uuid.uuid4().hex}/small", 1)
    slots = [hosts.take([big, small]) for _ in range(4)]
    assert [s.endpoint for s in slots if s] == [big, big, big, small]  # the lowest share once placed; ties: first
    assert hosts.take([big, small]) is None
    slots[3].release()  # type: ignore[union-attr]
    slots[3].release()  # type: ignore[union-attr]  # a second release gives nothing back twice
    assert hosts.live(small) == 0 and hosts.live(big) == 3
    again = hosts.take([big, small])
    assert again is not None and again.endpoint == small
    with pytest.raises(SandboxError, match=r"every Docker endpoint is full \(.*big 3/3, .*small 1/1\)"):
        asyncio.run(hosts.place([big, small], seconds=0.2))
    for slot in [*slots, again]:
        slot.release()  # type: ignore[union-attr]
    assert hosts.live(big) == hosts.live(small) == 0


def test_bad_docker_host_option_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["sandbox", "ls", "--docker-host", "http://nowhere"])
    assert exit_.value.code == 2
    assert "use unix:///path, tcp://host:port or ssh://" in capsys.readouterr().err


# ------------------------------------------------------------------------------- a second engine
@pytest.fixture(scope="module")
def second() -> Iterator[Engine]:
    """The second engine, with the python image it got by copying it from the shared engine."""
    docker_or_skip()
    builder.build_image("python")  # the shared engine has it (built once per machine)
    with second_engine(tls=True) as eng:
        assert not builder.image_exists(engine.client(eng.unix), builder.image_tag("python"))
        said = WhatIsSaid()
        with pytest.MonkeyPatch.context() as patch:  # not a handler: what an earlier test did to logging cannot hide it
            patch.setattr(builder, "log", said)
            builder.ensure("python", eng.unix)
        eng.ensured = said.messages  # type: ignore[attr-defined]
        yield eng


class WhatIsSaid:
    """Stands in for the builder's logger and keeps its messages."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def warning(self, message: str, *args: object) -> None:
        self.messages.append(message % args)


def on_engine(endpoint: Endpoint, container_id: str) -> bool:
    return bool(engine.client(endpoint).api.containers(all=True, filters={"id": container_id}))


async def gone(endpoint: Endpoint, container_id: str) -> bool:
    """Whether the container leaves ``endpoint`` within 60 s. A closed sandbox's removal may still be under
    way when close() returns (the engine's own AutoRemove, started as the supervisor exits); a loaded engine takes
    its time."""
    deadline = time.monotonic() + 60
    while on_engine(endpoint, container_id):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.2)
    return True


@pytest.mark.docker
def test_a_new_engine_gets_the_image_copied_not_built(second: Engine) -> None:
    copied = [m for m in second.ensured if m.startswith("copying")]  # type: ignore[attr-defined]
    assert copied == [f"copying sandbox image {builder.image_tag('python')} from {hosts.default().url} "
                      f"to {second.unix.url}"]
    assert not any("debootstrap" in m for m in second.ensured)  # type: ignore[attr-defined]
    assert builder.image_exists(engine.client(second.unix), builder.image_tag("python"))


@pytest.mark.docker
async def test_sandboxes_run_on_the_second_engine_over_the_direct_socket(second: Engine) -> None:
    async with await create("python", SMALL, [second.unix]) as box:
        assert box.endpoint == second.unix
        assert on_engine(second.unix, box.id) and not on_engine(hosts.default(), box.id)
        assert not box.client.protocol.multiplexed  # a local engine: the bind-mounted socket
        assert (await box.run_python("print(6 * 7)")).output == "42\n"
        assert hosts.live(second.unix) == 1
    assert hosts.live(second.unix) == 0
    assert await gone(second.unix, box.id)


@pytest.mark.docker
async def test_a_tls_endpoint_uses_the_attach_stream(second: Engine) -> None:
    assert second.tcp is not None
    async with await create("python", SMALL, [second.tcp]) as box:
        assert box.client.protocol.multiplexed  # not local: the attach stream, over TLS
        assert (await box.run_python("x = 6 * 7\nprint(x)")).output == "42\n"
        result = await box.exec("echo out; echo err >&2; exit 3")
        assert (result.exit_code, result.stdout, result.stderr) == (3, "out\n", "err\n")
        await box.write_file("big.bin", os.urandom(1 << 20))
        assert len(await box.read_file("big.bin")) == 1 << 20
        assert on_engine(second.unix, box.id)
    assert await gone(second.unix, box.id)


@pytest.mark.docker
def test_tls_without_the_client_certificate_is_refused(second: Engine) -> None:
    assert second.tcp is not None
    no_client = Endpoint(second.tcp.url)  # plain http to a TLS listener
    assert not engine.available(no_client)
    with pytest.raises(SandboxError, match=f"no Docker engine answers at {no_client.url}"):
        engine.client(no_client)


@pytest.mark.docker
async def test_an_ssh_endpoint_goes_through_the_ssh_command(
    second: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An ``ssh`` that logs its arguments and, instead of a network hop, runs what the remote would run.
    calls = tmp_path / "ssh-calls"
    fake = tmp_path / "ssh"
    fake.write_text(f'#!/bin/sh\necho "$@" >> {calls}\nexec docker -H {second.unix.url} system dial-stdio\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    over_ssh = Endpoint("ssh://tester@sandbox-host:2222")
    async with await create("python", SMALL, [over_ssh]) as box:
        assert box.client.protocol.multiplexed
        assert (await box.exec("echo via ssh")).stdout == "via ssh\n"
        assert on_engine(second.unix, box.id)
    assert "-l tester -p 2222 -- sandbox-host docker system dial-stdio" in calls.read_text()


@pytest.mark.docker
async def test_a_pool_spreads_over_two_engines_by_capacity(second: Engine) -> None:
    shared = Endpoint(hosts.default().url, capacity=1)
    other = Endpoint(second.unix.url, capacity=3)
    await shutdown_pools()  # the session's shared pools keep spares on the shared engine: counts start at 0
    assert hosts.live(shared) == hosts.live(other) == 0, "a sandbox from another test is still open"
    pool = SandboxPool("docker", "python", SMALL, size=4, hosts=[shared, other])
    await pool.fill()
    boxes = [await pool.acquire() for _ in range(4)]
    try:
        where = sorted(b.endpoint.url for b in boxes)  # type: ignore[attr-defined]
        assert where == sorted([shared.url] + [other.url] * 3)
        for box in boxes:
            assert on_engine(box.endpoint, box.id)  # type: ignore[attr-defined]
            assert (await box.exec("echo ok")).stdout == "ok\n"
    finally:
        for box in boxes:
            await box.destroy()
        await pool.shutdown()
    assert hosts.live(shared) == hosts.live(other) == 0


def sleeper(endpoint: Endpoint, **overrides: str) -> str:
    """A started container with owner labels (patched by ``overrides``) on ``endpoint`` that never exits by itself."""
    labels = engine.owner_labels(600)
    labels.update({f"{engine.LABEL}.{k}": v for k, v in overrides.items()})
    api = engine.client(endpoint).api
    created = api.create_container(builder.image_tag("python"), command=["sleep", "600"], labels=labels,
                                   host_config=api.create_host_config(network_mode="none", init=True))
    api.start(created["Id"])
    return str(created["Id"])


@pytest.mark.docker
def test_reaper_and_prune_work_per_engine(
    second: Engine, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    mark = uuid.uuid4().hex
    orphan = sleeper(second.unix, owner_pid=str(dead_pid()), test=mark)
    live = sleeper(second.unix, test=mark)
    try:
        assert not on_engine(hosts.default(), orphan)
        assert reaper.reap(second.unix) == [orphan[:12]]
        assert on_engine(second.unix, live) and not on_engine(second.unix, orphan)

        # Over every configured endpoint: the shared engine and the second one.
        monkeypatch.setenv(hosts.ENV_VAR, f"{hosts.default().url},{second.unix.url}=8")
        assert main(["sandbox", "ls"]) == 0
        rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith(live[:12])]
        assert len(rows) == 1 and rows[0].endswith(second.unix.url) and " no " in rows[0]
        only_ours = ["--label", f"{engine.LABEL}.test={mark}"]
        assert main(["sandbox", "prune", "--all", "--dry-run", *only_ours]) == 0
        assert capsys.readouterr().out.splitlines() == [f"would remove {live[:12]}", "1 to remove"]
        assert main(["sandbox", "prune", "--all", "--docker-host", second.unix.url, *only_ours]) == 0
        assert capsys.readouterr().out.splitlines() == [f"removed {live[:12]}", "1 removed"]
        assert not on_engine(second.unix, live)
    finally:
        for container_id in (orphan, live):
            engine.remove_container(container_id, second.unix)


OWNER = """
import asyncio, sys
from agentgym.sandboxes.docker import create
from agentgym.sandboxes.contract import Limits
from agentgym.sandboxes.hosts import Endpoint

async def main():
    endpoint = Endpoint(sys.argv[1], tls_verify=True, cert_path=sys.argv[2])
    box = await create("python", Limits(memory_mb=128, wall_seconds=600), [endpoint])
    print(box.id, flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
"""


@pytest.mark.docker
async def test_a_killed_owner_leaves_nothing_on_a_remote_engine(second: Engine) -> None:
    assert second.tcp is not None and second.tcp.cert_path is not None
    owner = await asyncio.create_subprocess_exec(sys.executable, "-c", OWNER, second.tcp.url, second.tcp.cert_path,
                                                 stdout=subprocess.PIPE)
    assert owner.stdout is not None
    container_id = (await asyncio.wait_for(owner.stdout.readline(), 60)).decode().strip()
    assert container_id and on_engine(second.unix, container_id)
    owner.kill()
    await owner.wait()
    # The TLS connection carrying the attach stream closed: the supervisor reads end of input and Docker removes it.
    deadline = time.monotonic() + 60  # wide enough for a loaded machine
    while on_engine(second.unix, container_id):
        assert time.monotonic() < deadline, "the container outlived its owner"
        await asyncio.sleep(0.2)


@pytest.mark.docker
def test_eval_with_docker_host_runs_its_sandboxes_there(second: Engine, tmp_path: Path) -> None:
    since = int(time.time()) - 1
    out = tmp_path / "run.jsonl"
    env = {**os.environ, hosts.ENV_VAR: "unix:///nowhere.sock"}  # replaced by the option
    run = subprocess.Popen([sys.executable, "-m", "agentgym.cli", "eval", "code", "--model", "reference",
                            "--sandbox", "docker", "--limit", "3", "--docker-host", f"{second.unix.url}=4",
                            "--out", str(out)], env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    stdout, stderr = run.communicate(timeout=600)
    assert run.returncode == 0, stderr
    assert "trajectories:" in stdout
    assert json.loads(out.with_suffix(".summary.json").read_text())["successes"] == 3
    owner = {f"{engine.LABEL}.owner_pid": str(run.pid)}

    def created(endpoint: Endpoint) -> int:
        events = engine.client(endpoint).api.events(
            since=since, until=int(time.time()) + 1, decode=True,
            filters={"type": "container", "event": "create", "label": f"{engine.LABEL}.owner_pid={run.pid}"})
        return sum(1 for _ in events)

    assert created(second.unix) >= 2  # the episodes' sandboxes and the verifiers'
    assert created(hosts.default()) == 0
    assert reaper.list_sandboxes(owner, second.unix) == []  # the run's exit removed them all


@pytest.mark.docker
async def test_an_idle_spare_gives_its_place_to_a_caller(second: Engine) -> None:
    only_one = Endpoint(second.unix.url, capacity=1)
    await shutdown_pools()
    assert hosts.live(only_one) == 0, "a sandbox from another test is still open"
    pool = SandboxPool("docker", "python", SMALL, size=1, hosts=[only_one])
    await pool.fill()  # its spare holds the one place
    other = SandboxPool("docker", "python", SMALL, size=1, hosts=[only_one])
    try:
        with pytest.raises(SandboxError, match=r"every Docker endpoint is full \(.* 1/1\)"):
            await other.fill()  # a spare never waits for a place, nor takes one from another spare
        async with await create("python", SMALL, [only_one]) as box:  # a caller does: the idle spare goes
            assert pool.ready == 0 and hosts.live(only_one) == 1
            assert (await box.exec("echo mine")).stdout == "mine\n"
    finally:
        await pool.shutdown()
        await other.shutdown()
    assert hosts.live(only_one) == 0


@pytest.mark.docker
async def test_an_attach_the_engine_refuses_says_why() -> None:
    docker_or_skip()
    with pytest.raises(SandboxError, match=r"refused to attach: HTTP/1.1 404 .*No such container"):
        await attach.open_stream(hosts.default(), "0" * 64, asyncio.Protocol, 10)
    with pytest.raises(SandboxError, match=r"could not attach to container 000000000000 on unix:///nowhere"):
        await attach.open_stream(Endpoint("unix:///nowhere/d.sock"), "0" * 64, asyncio.Protocol, 10)
