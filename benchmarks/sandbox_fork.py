"""What ``sandbox.fork(n)`` costs for a repository the size of toolz, against fresh sandboxes re-applying the edits.

A parent sandbox holds a repository (by default a synthetic one of toolz's size with its git
history: ~300 files, ~1.5 MB; ``--tree DIR`` takes a real one, e.g. an extracted sdist) and a few
edits (three files changed, one added, one deleted). Each repeat times, for every ``n``:

- **fork**: ``await parent.fork(n)`` until all n forks hold the files (their copy checked);
- **fork from a warm pool** (``tmpfs`` only): ``await parent.fork(n, pool=pool)`` with n sandboxes
  ready in ``pool`` (refilled, untimed, between repeats): the copy alone;
- **fresh + re-apply**: n new sandboxes started together, each given the repository as it was
  before the edits and then the edits (the cheapest replay: the edited files' final contents);
- **fresh only**: n new sandboxes started together, nothing copied: the floor both pay.

Two places the repository can live:

- ``tmpfs`` (docker and local): in the working directory, on the sandbox's tmpfs (the default
  sandbox). "Fresh + re-apply" uploads the repository (one tar, unpacked inside) and the edits.
- ``root`` (docker): at ``/testbed`` in an image, the container's root writable
  (``Limits(writable_root=True)``, the SWE env's setting). Fork commits the container; "fresh +
  re-apply" starts from the image and applies the edits only.

Times are wall seconds; each figure is the median (and range) of ``--repeat`` repeats, and the
ratio is taken within each repeat. CPU-ms (:mod:`cpu_accounting`: this process, its children, its
containers) is reported beside each: it leaves out what dockerd, containerd and runc spend starting
containers, so it shows what the copy costs, not the whole of a fresh start. Commands::

    python benchmarks/sandbox_fork.py                          # docker and local, n = 1, 4, 8
    python benchmarks/sandbox_fork.py --tree toolz-1.2.0/  # a real tree instead
    python benchmarks/sandbox_fork.py --quick --out "$(mktemp -d)/f.json"   # smoke test
"""

from __future__ import annotations

import argparse
import asyncio
import io
import random
import tarfile
import time
from pathlib import Path
from typing import Any

from cpu_accounting import CpuMeter
from results_file import run_args, run_info, run_options, save_results
from stats import fmt, spread

from agentgym.sandboxes import Limits, Sandbox, SandboxPool, engine
from agentgym.sandboxes.backends import start

LIMITS = Limits(memory_mb=256, pids=64, disk_mb=256, wall_seconds=900, exec_timeout=60)
IMAGE_REPO = "agentgym-bench-fork"  # the ``root`` scenario's base image, removed at the end
TESTBED = "/testbed"
CHECK = "cat {dir}/EDITED && test ! -e {dir}/{deleted} && wc -c < {dir}/{changed}"


def synthetic_tree(files: int, total_bytes: int, seed: int = 0) -> dict[str, bytes]:
    """A repository's shape: packages of modules and tests, docs, and a .git with loose objects and a pack."""
    rng = random.Random(seed)
    sources = files * 2 // 3
    out: dict[str, bytes] = {}
    weights = [rng.paretovariate(1.5) for _ in range(files)]
    scale = total_bytes / sum(weights)
    for i, weight in enumerate(weights):
        if i < sources:
            path = f"pkg/sub{i % 6}/mod{i}.py" if i % 3 else f"pkg/mod{i}.py"
        elif i < files - 20:
            path = f".git/objects/{i % 256:02x}/{rng.getrandbits(152):038x}"
        else:
            path = f"docs/page{i}.rst" if i % 2 else f"tests/test_{i}.py"
        size = max(16, int(weight * scale))
        line = f"def f{i}(x):\n    return x + {i}\n".encode()
        out[path] = (line * (size // len(line) + 1))[:size] if not path.startswith(".git") else rng.randbytes(size)
    return out


def tree_from(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def tar_of(tree: dict[str, bytes], *, owner: int | None = None) -> bytes:
    """The tree as a tar; with ``owner``, its directories too, all owned by that uid."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        if owner is not None:
            for directory in sorted({str(parent) for path in tree for parent in Path(path).parents} - {"."}):
                info = tarfile.TarInfo(directory)
                info.type, info.mode, info.uid, info.gid = tarfile.DIRTYPE, 0o755, owner, owner
                tar.addfile(info)
        for path, data in tree.items():
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(data), 0o644, 1_700_000_000
            if owner is not None:
                info.uid = info.gid = owner
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


class Edits:
    """Three files changed, one added, one deleted: what a model's turns leave in the repository."""

    def __init__(self, tree: dict[str, bytes]) -> None:
        sources = sorted(p for p in tree if p.endswith(".py"))
        self.changed = {p: tree[p] + b"\n# edited by the model\n" for p in sources[:3]}
        self.added = ("EDITED", b"a new file\n")
        self.deleted = sources[3]

    async def apply(self, box: Sandbox, root: str) -> None:
        for path, data in self.changed.items():
            await box.write_file(f"{root}/{path}", data)
        await box.write_file(f"{root}/{self.added[0]}", self.added[1])
        await expect(box, f"rm {root}/{self.deleted}")

    async def check(self, box: Sandbox, root: str) -> None:
        changed = next(iter(self.changed))
        out = await expect(box, CHECK.format(dir=root, deleted=self.deleted, changed=changed))
        if out != f"a new file\n{len(self.changed[changed])}\n":
            raise RuntimeError(f"sandbox {box.id} does not hold the edited repository: {out!r}")


async def expect(box: Sandbox, cmd: str) -> str:
    result = await box.exec(cmd)
    if result.exit_code != 0:
        raise RuntimeError(f"{cmd!r} failed in {box.id}: {result.output}")
    return result.stdout


async def upload(box: Sandbox, archive: bytes, root: str) -> None:
    await box.write_file("/tmp/repo.tar", archive)
    await expect(box, f"mkdir -p {root} && tar -xf /tmp/repo.tar -C {root} && rm /tmp/repo.tar")


async def start_many(backend: str, image: str, limits: Limits, n: int) -> list[Sandbox]:
    return list(await asyncio.gather(*(start(backend, image, limits) for _ in range(n))))


def base_image(archive: bytes) -> str:
    """An image with the repository at /testbed, owned by the code's uid (as the SWE images make it)."""
    from agentgym.sandboxes import builder

    api = engine.client().api
    container = api.create_container(builder.image_tag("python"), command=["true"],
                                     host_config=api.create_host_config(network_mode="none"))
    try:
        api.put_archive(container["Id"], "/", archive)
        return str(api.commit(container["Id"], repository=IMAGE_REPO, tag="toolz")["Id"])
    finally:
        api.remove_container(container["Id"], force=True)


async def scenario(
    backend: str, place: str, tree: dict[str, bytes], ns: list[int], repeat: int
) -> list[dict[str, Any]]:
    edits = Edits(tree)
    if place == "root":
        image = await asyncio.to_thread(base_image, tar_of({f"testbed/{p}": d for p, d in tree.items()}, owner=65534))
        limits, root, archive = LIMITS.model_copy(update={"writable_root": True}), TESTBED, b""
    else:
        image, limits, root, archive = "python", LIMITS, "repo", tar_of(tree)
    parent = await start(backend, image, limits)
    pools = {n: SandboxPool(backend, image, limits, size=n) for n in ns} if place == "tmpfs" else {}
    try:
        if archive:
            await upload(parent, archive, root)
        await edits.apply(parent, root)
        await edits.check(parent, root)
        runs: dict[int, list[dict[str, float]]] = {n: [] for n in ns}
        for _ in range(repeat):
            for n in ns:
                run = await measure(backend, image, limits, parent, edits, root, archive, n)
                if n in pools:
                    run.update(await measure_warm(parent, edits, root, pools[n], n))
                    run["fresh_reapply_over_warm_fork"] = run["fresh_reapply_s"] / run["fork_warm_pool_s"]
                runs[n].append(run)
    finally:
        await parent.close()
        await asyncio.gather(*(p.shutdown() for p in pools.values()))
        if place == "root":
            await asyncio.to_thread(engine.client().api.remove_image, image)
    rows = []
    for n in ns:
        row: dict[str, Any] = {"backend": backend, "place": place, "n": n, "runs": runs[n]}
        for key in runs[n][0]:
            row[key] = spread([r[key] for r in runs[n]])
        rows.append(row)
    return rows


async def measure(backend: str, image: str, limits: Limits, parent: Sandbox, edits: Edits, root: str,
                  archive: bytes, n: int) -> dict[str, float]:
    meter, started = CpuMeter(), time.perf_counter()
    forks = await parent.fork(n)
    fork_s, fork_cpu = time.perf_counter() - started, meter.stop()["total"]
    await asyncio.gather(*(edits.check(f, root) for f in forks))
    await asyncio.gather(*(f.close() for f in forks))

    async def fresh_reapplied(box: Sandbox) -> None:
        if archive:
            await upload(box, archive, root)
        await edits.apply(box, root)

    meter, started = CpuMeter(), time.perf_counter()
    boxes = await start_many(backend, image, limits, n)
    await asyncio.gather(*(fresh_reapplied(b) for b in boxes))
    fresh_reapply_s, fresh_reapply_cpu = time.perf_counter() - started, meter.stop()["total"]
    await asyncio.gather(*(edits.check(b, root) for b in boxes))
    await asyncio.gather(*(b.close() for b in boxes))

    started = time.perf_counter()
    boxes = await start_many(backend, image, limits, n)
    fresh_only_s = time.perf_counter() - started
    await asyncio.gather(*(b.close() for b in boxes))
    return {"fork_s": fork_s, "fresh_reapply_s": fresh_reapply_s, "fresh_only_s": fresh_only_s,
            "fresh_reapply_over_fork": fresh_reapply_s / fork_s, "fork_cpu_ms": fork_cpu * 1e3,
            "fresh_reapply_cpu_ms": fresh_reapply_cpu * 1e3}


async def measure_warm(parent: Sandbox, edits: Edits, root: str, pool: SandboxPool, n: int) -> dict[str, float]:
    await pool.fill()  # the last repeat's forks are wiped and back, or replaced
    meter, started = CpuMeter(), time.perf_counter()
    forks = await parent.fork(n, pool=pool)  # type: ignore[call-arg]
    warm_s, warm_cpu = time.perf_counter() - started, meter.stop()["total"]
    await asyncio.gather(*(edits.check(f, root) for f in forks))
    await asyncio.gather(*(f.close() for f in forks))
    return {"fork_warm_pool_s": warm_s, "fork_warm_pool_cpu_ms": warm_cpu * 1e3}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", nargs="+", default=["docker", "local"])
    parser.add_argument("--n", type=int, nargs="+", default=[1, 4, 8], help="forks per call")
    parser.add_argument("--files", type=int, default=300, help="files in the synthetic repository")
    parser.add_argument("--bytes", type=int, default=1_500_000, help="bytes in the synthetic repository")
    parser.add_argument("--tree", type=Path, help="a real directory to use as the repository instead")
    run_options(parser, "sandbox_fork", repeat=5, quick="a small tree, n = 1 and 2, 2 repeats")
    args = parser.parse_args()
    if args.quick:
        args.n, args.repeat, args.files, args.bytes = [1, 2], 2, 30, 60_000
    tree = tree_from(args.tree) if args.tree else synthetic_tree(args.files, args.bytes)
    info = run_info()
    rows: list[dict[str, Any]] = []
    for backend in args.backend:
        for place in ("tmpfs", "root") if backend == "docker" else ("tmpfs",):
            rows += asyncio.run(scenario(backend, place, tree, args.n, args.repeat))
    shape = {"files": len(tree), "bytes": sum(map(len, tree.values())), "source": str(args.tree or "synthetic")}
    print(f"\nrepository: {shape['files']} files, {shape['bytes'] / 1e6:.2f} MB ({shape['source']}); "
          f"seconds, median (min–max) of {args.repeat}")
    print(f"{'backend':<7} {'place':<6} {'n':>2} {'fork':>18} {'fork, warm pool':>20} {'fresh + re-apply':>18} "
          f"{'fresh only':>18} {'fresh+re-apply/fork':>20} {'…/warm fork':>18} {'CPU-ms fork':>12} {'warm':>8} "
          f"{'fresh+re-apply':>15}")
    for r in rows:
        warm = fmt(r["fork_warm_pool_s"], "{:.3f}") if "fork_warm_pool_s" in r else "-"
        warm_cpu = f"{r['fork_warm_pool_cpu_ms']['median']:.0f}" if "fork_warm_pool_s" in r else "-"
        warm_ratio = fmt(r["fresh_reapply_over_warm_fork"], "{:.1f}") if "fork_warm_pool_s" in r else "-"
        print(f"{r['backend']:<7} {r['place']:<6} {r['n']:>2} {fmt(r['fork_s'], '{:.2f}'):>18} {warm:>20} "
              f"{fmt(r['fresh_reapply_s'], '{:.2f}'):>18} {fmt(r['fresh_only_s'], '{:.2f}'):>18} "
              f"{fmt(r['fresh_reapply_over_fork'], '{:.2f}'):>20} {warm_ratio:>18} {r['fork_cpu_ms']['median']:>12.0f} "
              f"{warm_cpu:>8} {r['fresh_reapply_cpu_ms']['median']:>15.0f}")
    save_results({"info": info, "args": run_args(args), "tree": shape, "rows": rows},
                 args.out)


if __name__ == "__main__":
    main()
