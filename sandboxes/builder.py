"""Sandbox images built with no image registry: recipes in ``images/``, tagged by their content hash.

``image="python"`` names a recipe (``images/python.json``). Its tag is
``agentgym/python:<hash>``, where the hash covers the recipe and this builder, so that changing
either makes a new image and an unchanged pair is built once. When a registry answers, the image is
the recipe's public ``base_image`` pulled and re-tagged; when none does (air-gapped CI), it is a
Debian root filesystem made by ``debootstrap --variant=minbase`` and loaded with ``docker import``.
Both give the python recipe's ``python3`` on the ``PATH``, runnable by any uid: all the in-sandbox agent needs.
A recipe's ``apt_packages`` are installed after debootstrap with ``apt-get`` in the chroot, from the
suite, its updates and its security suite: packages whose maintainer scripts debootstrap cannot run
(Chromium's dependencies: dconf) or that need security updates (Chromium) come that way.

A recipe names no host: the Debian mirrors are this machine's (:mod:`~agentgym.sandboxes.mirrors`:
an option, a variable, else apt's sources). They are not part of the tag. A mirror decides where the
bytes come from, not what they are (debootstrap and apt check every package against the archive's
signed index), and a tag must mean the same on every machine: engines copy images by tag, and SWE
images' tags are hashes over this one. Like any build from a live archive, two builds of one tag may
hold different point releases of a package; the tag pins the recipe, not the archive's day.

Any other image string (one with ``:`` or ``/``, e.g. ``python:3.12-slim``) is used as it is.

Every engine needs the image in its own store (see :mod:`~agentgym.sandboxes.hosts`). An engine that
lacks a recipe's image gets it copied from another known engine that has it (the default one and
the configured ones, local ones first): ``docker save`` there streamed into ``docker load`` here
through this process: 4 s for the python image, against 107 s to build it there (docs/docker-hosts.md).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import logging
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from agentgym.errors import SandboxError
from agentgym.sandboxes import engine, hosts, mirrors
from agentgym.sandboxes.hosts import Endpoint
from agentgym.sandboxes.mirrors import DebianMirrors

if TYPE_CHECKING:
    import docker

log = logging.getLogger(__name__)

RECIPES = Path(__file__).parent / "images"
REPOSITORY = "agentgym"
# Parts of a minbase root nobody needs at run time; dropping them halves the image.
PRUNE_PATHS = (
    "usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/locale",
    "var/cache/apt", "var/lib/apt/lists", "var/log",
)


class Recipe(BaseModel):
    """How to make one sandbox image.

    Attributes:
        name: The recipe's file name without ``.json``; the image repository is ``agentgym/<name>``.
        description: What the image is for.
        suite: Debian suite for debootstrap (the mirror is this machine's, see the module doc).
        packages: Debian packages installed on top of minbase by debootstrap.
        apt_packages: Debian packages then installed by ``apt-get install --no-install-recommends``
            in the chroot, with the security suite enabled.
        base_image: Public image used instead when a registry answers.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")  # a recipe with a host in it is refused

    name: str
    description: str = ""
    suite: str = "bookworm"
    packages: tuple[str, ...] = ("python3",)
    apt_packages: tuple[str, ...] = ()
    base_image: str | None = None


def recipe_names() -> list[str]:
    """Names of the shipped recipes."""
    return sorted(p.stem for p in RECIPES.glob("*.json"))


def load_recipe(name: str) -> Recipe:
    """Read recipe ``name``; a :class:`SandboxError` lists the known ones when it is missing."""
    path = RECIPES / f"{name}.json"
    if not path.is_file():
        raise SandboxError(f"no sandbox image recipe {name!r}; known: {', '.join(recipe_names())}")
    try:
        return Recipe(name=name, **json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, TypeError) as e:  # pydantic's ValidationError is a ValueError
        raise SandboxError(f"recipe {path} is not valid: {e}") from e


def is_recipe(image: str) -> bool:
    """Whether ``image`` names a recipe rather than an image reference."""
    return ":" not in image and "/" not in image


@functools.cache
def image_tag(name: str) -> str:
    """``agentgym/<name>:<hash of recipe + builder>``; a new hash means a rebuild."""
    digest = hashlib.sha256()
    digest.update((RECIPES / f"{name}.json").read_bytes())
    digest.update(Path(__file__).read_bytes())
    return f"{REPOSITORY}/{name}:{digest.hexdigest()[:12]}"


def resolve(image: str) -> str:
    """The image reference for ``image``: the recipe's tag, or ``image`` itself."""
    if is_recipe(image):
        load_recipe(image)
        return image_tag(image)
    return image


def ensure(image: str, endpoint: Endpoint | None = None) -> str:
    """Make sure ``image`` exists on the engine at ``endpoint`` (default: ``DOCKER_HOST``'s), or get it there.

    A recipe's image is copied from another engine that has it, else built; any other image is
    pulled. Blocking (build: about a minute). Parallel processes wait on one file lock per tag,
    so only one of them builds or copies at a time.

    Raises:
        SandboxError: The image could not be copied, built or pulled.
    """
    import docker

    api = engine.client(endpoint)
    ref = resolve(image)
    if image_exists(api, ref):
        return ref
    if not is_recipe(image):
        try:
            api.images.pull(ref)
        except docker.errors.DockerException as e:
            raise SandboxError(f"image {ref!r} is not present and could not be pulled: {e}") from e
        return ref
    return build_image(image, endpoint=endpoint)


def build_image(name: str, *, registry: bool | None = None, endpoint: Endpoint | None = None,
                copy: bool = True, mirror: str | None = None, security_mirror: str | None = None) -> str:
    """Build recipe ``name`` on the engine at ``endpoint`` unless its tag is there; return the tag.

    Args:
        name: Recipe name, e.g. ``"python"``.
        registry: Pull the recipe's ``base_image`` (True), debootstrap (False), or try the
            registry briefly and fall back to debootstrap (None).
        endpoint: The engine (default: the one ``DOCKER_HOST`` names).
        copy: First try to copy the image from another known engine that has it.
        mirror: The Debian mirror for debootstrap (default: ``AGENTGYM_DEBIAN_MIRROR``, else apt's sources).
        security_mirror: The security suite's mirror (default: ``AGENTGYM_DEBIAN_SECURITY_MIRROR``, else apt's).

    Raises:
        SandboxError: Neither way worked; the message says why.
    """
    recipe = load_recipe(name)
    tag = image_tag(name)
    endpoint = endpoint or hosts.default()
    api = engine.client(endpoint)
    with build_lock(tag):  # one per tag, not per engine: builds and copies on this machine take turns
        if image_exists(api, tag):
            return tag
        if copy and copy_image(tag, endpoint) is not None:
            return tag
        started = time.monotonic()
        if registry is None:
            registry = _registry_up(api)
        use_registry = registry and recipe.base_image is not None
        if use_registry:
            log.warning("building sandbox image %s from %s", tag, recipe.base_image)
            _from_registry(api, recipe, tag)
        else:
            found = mirrors.debian_mirrors(recipe.suite, archive=mirror, security=security_mirror)
            log.warning("building sandbox image %s with debootstrap from %s (no registry; about a minute)",
                        tag, found.archive)
            _from_debootstrap(api, recipe, tag, found)
        log.warning("built %s in %.0f s", tag, time.monotonic() - started)
    return tag


def copy_image(ref: str, endpoint: Endpoint) -> Endpoint | None:
    """Copy ``ref`` onto ``endpoint`` from the first other known engine that has it; return that engine.

    Known engines: the default one and the configured ones (local ones first, the cheapest to
    read). The image streams through this process (``docker save | docker load``), never whole in
    memory. Returns ``None`` when no other engine has it or none answers.

    Raises:
        SandboxError: A source had the image but loading it failed.
    """
    import docker

    candidates = sorted({hosts.default(), *hosts.configured()} - {endpoint}, key=lambda e: not e.local)
    for source in candidates:
        try:
            if not engine.available(source) or not image_exists(engine.client(source), ref):
                continue
        except SandboxError:
            continue
        started = time.monotonic()
        log.warning("copying sandbox image %s from %s to %s", ref, source.url, endpoint.url)
        try:
            chunks = engine.client(source).api.get_image(ref)
            for _ in engine.client(endpoint).api.load_image(chunks):
                pass
        except docker.errors.DockerException as e:
            raise SandboxError(f"could not copy {ref} from {source.url} to {endpoint.url}: {e}") from e
        if not image_exists(engine.client(endpoint), ref):
            raise SandboxError(f"copying {ref} from {source.url} to {endpoint.url} left no such image there")
        log.warning("copied %s in %.1f s", ref, time.monotonic() - started)
        return source
    return None


def stale_images(endpoint: Endpoint | None = None) -> list[str]:
    """Tags of agentgym recipe images on the engine at ``endpoint`` whose hash is no longer current."""
    api = engine.client(endpoint)
    current = {image_tag(n) for n in recipe_names()}
    stale: list[str] = []
    for img in api.images.list(name=REPOSITORY + "/*"):
        stale.extend(t for t in img.tags if t.startswith(REPOSITORY + "/") and t not in current)
    return sorted(stale)


def image_exists(api: docker.DockerClient, ref: str) -> bool:
    """Whether the engine behind ``api`` has the image ``ref``."""
    import docker

    try:
        api.images.get(ref)
    except docker.errors.ImageNotFound:
        return False
    return True


def _registry_up(api: docker.DockerClient) -> bool:
    """Whether the engine's registry answers: its first configured mirror, else its index (``docker info``)."""
    import docker

    try:
        info = api.info()
    except (docker.errors.DockerException, OSError):  # an engine that cannot say has no registry to offer
        return False
    mirrors_ = (info.get("RegistryConfig") or {}).get("Mirrors") or []
    parsed = urllib.parse.urlparse(next(iter(mirrors_), info.get("IndexServerAddress") or ""))
    if not parsed.hostname:
        return False
    try:
        with socket.create_connection((parsed.hostname, parsed.port or 443), timeout=3):
            return True
    except OSError:
        return False


def _from_registry(api: docker.DockerClient, recipe: Recipe, tag: str) -> None:
    import docker

    assert recipe.base_image is not None
    try:
        img = api.images.pull(recipe.base_image)
    except docker.errors.DockerException as e:
        raise SandboxError(f"could not pull {recipe.base_image}: {e}; try build_image(registry=False)") from e
    repository, version = tag.split(":")
    img.tag(repository, version)


def _from_debootstrap(api: docker.DockerClient, recipe: Recipe, tag: str, found: DebianMirrors) -> None:
    if shutil.which("debootstrap") is None:
        raise SandboxError("building with no registry needs debootstrap: apt-get install debootstrap")
    with tempfile.TemporaryDirectory(prefix="agentgym-rootfs-") as tmp:
        root = Path(tmp) / "root"
        include = ["--include=" + ",".join(recipe.packages)] if recipe.packages else []
        _run("debootstrap", ["debootstrap", "--variant=minbase", *include, recipe.suite, str(root), found.archive])
        if recipe.apt_packages:
            _apt_install(root, recipe, found)
        for rel in PRUNE_PATHS:
            shutil.rmtree(root / rel, ignore_errors=True)
        tar = subprocess.Popen(
            ["tar", "--numeric-owner", "-C", str(root), "-c", "."], stdout=subprocess.PIPE
        )
        assert tar.stdout is not None
        repository, version = tag.split(":")
        try:
            api.api.import_image(
                src=iter(lambda: tar.stdout.read(1 << 20), b""),  # type: ignore[union-attr]
                repository=repository, tag=version, stream_src=True,
                changes=['ENV PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"'],
            )
        finally:
            tar.stdout.close()
            tar.wait()


def _apt_install(root: Path, recipe: Recipe, found: DebianMirrors) -> None:
    """``apt-get install`` the recipe's ``apt_packages`` in the chroot at ``root``, security updates included."""
    (root / "etc/apt/sources.list").write_text(
        f"deb {found.archive} {recipe.suite} main\n"
        f"deb {found.archive} {recipe.suite}-updates main\n"
        f"deb {found.security} {recipe.suite}-security main\n",
        encoding="utf-8",
    )
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", "DEBIAN_FRONTEND": "noninteractive"}
    chroot = ["chroot", str(root), "apt-get", "-qq", "-o", "APT::Sandbox::User=root"]
    _run("apt-get update", [*chroot, "update"], env)
    _run("apt-get install", [*chroot, "install", "-y", "--no-install-recommends", *recipe.apt_packages], env)
    _run("apt-get clean", [*chroot, "clean"], env)
    (root / "etc/resolv.conf").unlink(missing_ok=True)  # the host's, copied by debootstrap; Docker provides its own


def _run(what: str, cmd: list[str], env: dict[str, str] | None = None) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        tail = (done.stdout + done.stderr)[-2000:]
        raise SandboxError(f"{what} failed ({done.returncode}): {tail}")


@contextlib.contextmanager
def build_lock(tag: str) -> Iterator[None]:
    """Hold this machine's lock for building or copying the image ``tag``: processes take turns, none builds twice."""
    name = tag.replace("/", "_").replace(":", "_")
    path = Path(tempfile.gettempdir()) / f"agentgym-build-{name}.lock"
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
