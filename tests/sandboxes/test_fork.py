"""Fork: n sandboxes that start from one's files, share nothing, belong to no pool and leave nothing behind.

The contract itself (forks see the edits made before and not each other's after) is a conformance
check run on every backend (``fork_copies_files_and_forks_are_independent``); these are the rest.
"""

from __future__ import annotations

import asyncio

import pytest

from agentgym.errors import SandboxError
from agentgym.sandboxes import Lease, commit, engine, fork, reaper
from agentgym.sandboxes.backends import start
from agentgym.sandboxes.local import create as create_local
from agentgym.sandboxes.pool import SandboxPool
from agentgym.sandboxes.supervised import SupervisedSandbox
from agentgym.sandboxes.supervisor import copier
from tests.conftest import docker_or_skip
from tests.sandboxes.conftest import SMALL

# A tree like a small package's: nested directories, many files, a symlink, a hard link, a FIFO, odd modes and names.
TREE = """
import os
for i in range(240):
    d = f"repo/pkg{i % 12}/sub{i % 3}"
    os.makedirs(d, exist_ok=True)
    with open(f"{d}/mod{i}.py", "w") as f:
        f.write(f"value = {i}\\n" * (i % 50 + 1))
os.symlink("pkg0/sub0/mod0.py", "repo/link.py")
os.link("repo/pkg1/sub1/mod1.py", "repo/hard.py")
os.chmod("repo/pkg2/sub2/mod2.py", 0o600)
os.chmod("repo/pkg3", 0o500)
open("/tmp/cache.bin", "wb").write(os.urandom(2_500_000))  # larger than one read of the copier
open(b"repo/caf\\xe9-not-utf8", "w").write("odd name")
os.mkfifo("repo/pipe")
"""
LISTING = (  # every entry's path, type, mode, links, target and mtime, then every file's hash
    "cd repo && find . -printf '%p %y %m %n %l %T@\\n' | sort && find . -type f -exec sha256sum {} + | sort"
    " && sha256sum /tmp/cache.bin"
)


def entries(listing: str) -> list[tuple[str, float | None]]:
    """The listing's lines, each with its mtime (seconds, to the microsecond a tar header keeps) split off."""
    out: list[tuple[str, float | None]] = []
    for line in listing.splitlines():
        head, _, last = line.rpartition(" ")
        out.append((head, round(float(last), 6)) if "." in last and head.startswith(".") else (line, None))
    return out


async def test_a_fork_copies_a_tree_exactly_in_any_number_of_chunks(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fork, "CHUNK_BYTES", 50_000)  # about a dozen chunks: each must follow the last
    parent = await start(backend, "python", SMALL.model_copy(update={"output_bytes": 1 << 20}))
    try:
        made = await parent.run_python(TREE)
        assert made.error is None, made.error
        [child] = await parent.fork(1)
        try:
            want, got = await parent.exec(LISTING), await child.exec(LISTING)
            assert want.exit_code == 0 and not want.truncated and len(want.stdout.splitlines()) > 500
            pairs = list(zip(entries(want.stdout), entries(got.stdout), strict=True))
            assert [w[0] for w, _ in pairs] == [g[0] for _, g in pairs]  # names, kinds, modes, links, hashes
            assert all(w[1] is None or abs(w[1] - g[1]) < 2e-6 for w, g in pairs)  # type: ignore[operator]
            assert child.limits == parent.limits
        finally:
            await child.close()
    finally:
        await parent.close()


async def test_a_fork_of_a_fork_sees_both_generations_of_edits(backend: str) -> None:
    parent = await start(backend, "python", SMALL)
    try:
        await parent.write_file("a.txt", "parent")
        [child] = await parent.fork()
        await child.write_file("b.txt", "child")
        await parent.write_file("c.txt", "parent, after")
        [grandchild] = await child.fork()
        try:
            seen = await grandchild.exec("cat a.txt b.txt; ls")
            assert seen.stdout == "parentchilda.txt\nb.txt\n"
        finally:
            await grandchild.close()
            await child.close()
    finally:
        await parent.close()


async def test_forks_belong_to_no_pool_and_a_wipe_removes_what_they_were_given(backend: str) -> None:
    pool = SandboxPool(backend, "python", SMALL, size=1)
    try:
        parent = await pool.acquire()
        await parent.write_file("secret.txt", "the parent's")
        forks = await parent.fork(2)
        assert all(isinstance(f, SupervisedSandbox) and not isinstance(f, Lease) for f in forks)
        lent = pool.counts().lent
        await forks[0].close()  # destroyed, not handed to the parent's pool
        assert pool.counts().lent == lent and not await forks[0].is_alive()
        # Were a fork ever wiped for reuse, the files it was given go like any its code wrote.
        assert forks[1].recyclable == parent.recyclable
        if forks[1].recyclable:
            assert await forks[1].wipe() is None
            try:
                assert (await forks[1].exec("ls -A")).stdout == ""
            finally:
                await forks[1].destroy()
        else:
            await forks[1].close()
        assert (await parent.read_file("secret.txt")) == b"the parent's"
        await parent.close()
    finally:
        await pool.shutdown()


async def test_forks_taken_from_a_warm_pool_go_back_to_it_wiped(backend: str) -> None:
    pool = SandboxPool(backend, "python", SMALL, size=2)
    parent = await start(backend, "python", SMALL)
    try:
        await pool.fill()
        spares = {box.id for box in pool._ready}
        await parent.write_file("repo/a.py", "edited")
        forks = await parent.fork(2, pool=pool)
        assert {f.id for f in forks} == spares  # warm: no sandbox was started for them
        assert [await f.read_file("repo/a.py") for f in forks] == [b"edited", b"edited"]
        await forks[0].write_file("repo/a.py", "fork 0")
        assert await forks[1].read_file("repo/a.py") == b"edited"
        await asyncio.gather(*(f.close() for f in forks))
        again = [await pool.acquire() for _ in range(2)]
        try:
            assert {b.id for b in again} == spares  # back in the pool, and wiped:
            assert [(await b.exec("ls -A")).stdout for b in again] == ["", ""]
        finally:
            await asyncio.gather(*(b.close() for b in again))
    finally:
        await parent.close()
        await pool.shutdown()


async def test_a_pool_of_other_limits_is_refused_and_keeps_nothing_lent() -> None:
    pool = SandboxPool("local", "python", SMALL.model_copy(update={"memory_mb": 300}), size=1)
    parent = await create_local(SMALL)
    try:
        with pytest.raises(ValueError, match="the pool gives LocalSandbox sandboxes with"):
            await parent.fork(1, pool=pool)
        assert pool.counts().lent == 0
    finally:
        await parent.close()
        await pool.shutdown()


async def test_a_copy_that_fails_leaves_no_fork_and_the_parent_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    parent = await create_local(SMALL)
    started: list[SupervisedSandbox] = []
    real_start_like = parent._start_like

    async def start_like(n: int) -> list[SupervisedSandbox]:
        started.extend(await real_start_like(n))
        return started

    async def bad_snapshot(sandbox: SupervisedSandbox) -> list[str]:
        return ["bm90IGEgdGFyIHN0cmVhbQ=="]  # "not a tar stream"

    monkeypatch.setattr(parent, "_start_like", start_like)
    monkeypatch.setattr(fork, "snapshot_of", bad_snapshot)
    try:
        await parent.write_file("kept.txt", "yes")
        with pytest.raises(SandboxError, match="could not restore the files"):
            await parent.fork(2)
        assert len(started) == 2 and not any([await f.is_alive() for f in started])
        assert (await parent.exec("cat kept.txt")).stdout == "yes"
        with pytest.raises(ValueError, match="at least 1"):
            await parent.fork(0)
    finally:
        await parent.close()


async def test_when_one_fork_cannot_start_the_others_are_destroyed() -> None:
    made: list[SupervisedSandbox] = []
    calls = 0

    async def flaky() -> SupervisedSandbox:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise SandboxError("no room for a second one")
        made.append(await create_local(SMALL))
        return made[-1]

    with pytest.raises(SandboxError, match="no room"):
        await fork.start_all(3, flaky)
    assert len(made) == 2 and not any([await f.is_alive() for f in made])


def test_archive_names_stay_inside_the_places_a_sandbox_may_write() -> None:
    roots = ["/dev/shm", "/tmp", "/work"]
    assert copier.destination("workdir/a/b.py", "/var/tmp/sb", roots) == "/var/tmp/sb/a/b.py"
    assert copier.destination("root/tmp/x", "/work", roots) == "/tmp/x"
    for name in ("workdir/../etc/passwd", "root/etc/passwd", "root/tmpx/y", "workdir/", "other/x", "root/tmp/./x"):
        with pytest.raises(OSError):
            copier.destination(name, "/work", roots)


# ---------------------------------------------------------------------- Docker's container root
def fork_images() -> set[str]:
    return {i["Id"] for i in engine.client().api.images(all=True, filters={"label": commit.IMAGE_LABEL})}


@pytest.mark.docker
async def test_a_writable_root_is_committed_for_the_forks_and_its_images_go_with_the_last() -> None:
    docker_or_skip()
    limits = SMALL.model_copy(update={"writable_root": True})
    parent = await start("docker", "python", limits)
    before = fork_images()
    try:
        made = await parent.exec("echo keep > /var/tmp/keep && echo gone > /var/tmp/gone && echo w > w")
        assert made.exit_code == 0, made
        [child] = await parent.fork()
        first = fork_images() - before
        assert len(first) == 1
        inspect = engine.client().api.inspect_container(child.id)
        assert inspect["Image"] in first and not inspect["HostConfig"]["ReadonlyRootfs"]
        assert inspect["HostConfig"]["Memory"] == SMALL.memory_mb << 20
        assert engine.owner_alive(inspect["Config"]["Labels"])  # owned (and reaped) like any sandbox
        assert (await child.exec("cat /var/tmp/keep /var/tmp/gone w")).stdout == "keep\ngone\nw\n"
        await child.exec("rm /var/tmp/gone && echo child > /var/tmp/mine")
        [grandchild] = await child.fork()
        assert len(fork_images() - before) == 2
        seen = await grandchild.exec("cat /var/tmp/mine w; ls /var/tmp")
        assert seen.stdout == "child\nw\nkeep\nmine\n"
        assert (await parent.exec("ls /var/tmp")).stdout == "gone\nkeep\n"
        with pytest.raises(ValueError, match="writable root forks from a commit"):
            await child.fork(1, pool=SandboxPool("docker", "python", limits, size=1))
        await grandchild.close()
        assert fork_images() - before == first  # the child's container still uses the first image
        await child.close()
        assert fork_images() - before == set()
    finally:
        await parent.close()


@pytest.mark.docker
async def test_forks_closed_together_remove_their_image_once(caplog: pytest.LogCaptureFixture) -> None:
    docker_or_skip()
    parent = await start("docker", "python", SMALL.model_copy(update={"writable_root": True}))
    before = fork_images()
    try:
        forks = await parent.fork(3)
        assert len(fork_images() - before) == 1
        await asyncio.gather(*(f.close() for f in forks))  # three destroys race to remove one image
        assert fork_images() - before == set()
        assert "could not destroy" not in caplog.text
    finally:
        await parent.close()


@pytest.mark.docker
async def test_a_read_only_root_is_not_committed() -> None:
    docker_or_skip()
    parent = await start("docker", "python", SMALL)
    before = fork_images()
    try:
        forks = await parent.fork(2)
        api = engine.client().api
        assert fork_images() == before
        assert {api.inspect_container(f.id)["Image"] for f in forks} == {api.inspect_container(parent.id)["Image"]}
        await asyncio.gather(*(f.close() for f in forks))
    finally:
        await parent.close()


@pytest.mark.docker
async def test_the_reaper_removes_fork_images_whose_owner_is_gone() -> None:
    docker_or_skip()
    from tests.sandboxes.test_leaks import dead_pid, labelled_sleeper

    api = engine.client().api
    images = []
    for owner in (str(dead_pid()), None):  # a dead owner's, then ours
        container = labelled_sleeper(**({"owner_pid": owner} if owner else {}))
        try:
            images.append(api.commit(container, changes=[f"LABEL {commit.IMAGE_LABEL}=test"])["Id"])
        finally:
            engine.remove_container(container)
    leaked, mine = images
    try:
        await asyncio.to_thread(reaper.reap)
        assert leaked not in fork_images() and mine in fork_images()
    finally:
        for image in images:
            commit.remove_images([image])
    assert not {leaked, mine} & fork_images()
