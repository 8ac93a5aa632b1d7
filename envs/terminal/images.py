"""The image a Harbor task runs in, made with no image registry.

Where it comes from, for one task:

1. ``[environment].docker_image``, when the engine has it;
2. else ``environment/Dockerfile``, built with its folder as the context;
3. else the ``docker_image`` again, standing for a one-line ``FROM`` Dockerfile.

Nothing is pulled: a Terminal-Bench task's ``FROM python:3.13-slim-bookworm`` names an image that an
air-gapped machine does not have. The user maps each such public name to a local image
(``base_images``, ``--base-image PUBLIC=LOCAL``) and every ``FROM`` line of the build is rewritten in a
temporary copy of the context; a mapped value that is an agentgym recipe (``python``, or
``agentgym/python`` without a tag) is that recipe's image, built if missing
(:func:`~agentgym.sandboxes.build_image`). A base that is neither on the engine nor mapped is refused
before any build, in one line that says how to provide it.

Every image gets the same last steps (:data:`READY_STEPS`): the build fails when there is no
``python3`` (agentgym's in-sandbox supervisor runs on it), and the image's working directory is made
writable to all, so that the task's files (``/app``) are the agent's to change (its commands run as an
unprivileged uid) and stay root's to grade.
The result is tagged ``agentgym/terminal-<task>:<hash>`` over the task's build context, the base
mapping (with the local images' ids) and those steps, and built once: an existing tag is used as it is.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from agentgym.errors import EnvError
from agentgym.sandboxes import build_image, builder, engine

from .task import HarborTask

REPOSITORY = "agentgym/terminal"
NO_PYTHON = "agentgym: the image has no python3"
READY_STEPS = f"""
USER 0
RUN command -v python3 >/dev/null 2>&1 || {{ echo "{NO_PYTHON}" >&2; exit 1; }}; \\
    if [ "$PWD" != / ]; then chmod -R a+rwX "$PWD"; fi
"""
"""Appended to the last stage: python3 must run, and the working directory is made writable to all: the
agent's uid may change it, and so may the verifier's root, which has no file-permission override
(:mod:`~agentgym.envs.terminal.verifier`) and so writes only what it owns or what all may write."""
_FROM = re.compile(r"^(\s*FROM\s+)((?:--\S+\s+)*)(\S+)(.*)$", re.IGNORECASE)
_STAGE = re.compile(r"^\s+AS\s+(\S+)", re.IGNORECASE)
_lock = threading.Lock()


@dataclass(frozen=True)
class TaskImage:
    """A task's ready image: its tag, and the working directory the agent's shell starts in."""

    ref: str
    workdir: str


def image_for(task: HarborTask, base_images: Mapping[str, str]) -> TaskImage:
    """The task's ready image (see the module docstring), found or built (blocking).

    Raises:
        EnvError: A base image is missing (the message names it and how to provide it), the image has
            no ``python3``, or the build failed or ran past ``build_timeout_sec``.
    """
    with _lock:
        if task.docker_image and _exists(task.docker_image):
            dockerfile, context = f"FROM {task.docker_image}\n", None
        elif task.environment_dir is not None:
            context = task.environment_dir
            dockerfile = (context / "Dockerfile").read_text(encoding="utf-8")
        else:
            assert task.docker_image is not None  # load_task refuses a task with neither
            dockerfile, context = f"FROM {task.docker_image}\n", None
        dockerfile, bases = rewrite_from(dockerfile, {name: local_image(ref) for name, ref in base_images.items()})
        for base in bases:
            if not _exists(base):
                raise EnvError(missing_base(task, base))
        digest = hashlib.sha256(task.build_context_hash().encode())
        for base in sorted(bases):
            digest.update(f"\0{base}={_image_id(base)}".encode())
        digest.update(dockerfile.encode() + READY_STEPS.encode())
        tag = f"{REPOSITORY}-{slug(task.name)}:{digest.hexdigest()[:12]}"
        if not _exists(tag):
            _build(task, dockerfile + READY_STEPS, context, tag)
        workdir = engine.client().images.get(tag).attrs["Config"].get("WorkingDir") or "/"
        return TaskImage(tag, workdir)


def rewrite_from(dockerfile: str, mapping: Mapping[str, str]) -> tuple[str, list[str]]:
    """``dockerfile`` with each ``FROM`` image that ``mapping`` names replaced, and the images its stages
    start from (stage names and ``scratch`` left out; a name with a ``$`` is left to the build).

    ``FROM [--platform=...] IMAGE [AS NAME]`` is understood; a later ``FROM NAME`` of an earlier stage is a
    stage reference, not an image.
    """
    stages: set[str] = set()
    bases: list[str] = []
    lines = dockerfile.splitlines(keepends=True)
    for index, line in enumerate(lines):
        match = _FROM.match(line.rstrip("\n"))
        if not match:
            continue
        head, flags, image, rest = match.groups()
        if image.lower() not in stages:
            image = mapping.get(image, image)
            if image != "scratch" and "$" not in image and image not in bases:
                bases.append(image)
        lines[index] = f"{head}{flags}{image}{rest}" + ("\n" if line.endswith("\n") else "")
        stage = _STAGE.match(rest)
        if stage:
            stages.add(stage.group(1).lower())
    text = "".join(lines)
    return text if text.endswith("\n") else text + "\n", bases


def local_image(ref: str) -> str:
    """A mapped base: an agentgym recipe (``python``, ``agentgym/python``) is its image, built when missing."""
    name = ref.removeprefix("agentgym/") if ":" not in ref else ""
    return build_image(name) if name in builder.recipe_names() else ref


def missing_base(task: HarborTask, base: str) -> str:
    return (f"task {task.name}: the base image {base!r} is not on the Docker engine and nothing is pulled: "
            f"load or build it there (docker load), or map it to a local image with "
            f"--base-image {base}=LOCAL (base_images={{{base!r}: LOCAL}})")


def slug(name: str) -> str:
    """A task name as a Docker repository name component."""
    return re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-._")[:80] or "task"


def _build(task: HarborTask, dockerfile: str, context: Path | None, tag: str) -> None:
    """Build ``dockerfile`` in a temporary copy of ``context`` (empty without one), within the task's
    ``build_timeout_sec``."""
    import docker

    deadline = time.monotonic() + task.config.environment.build_timeout_sec
    with tempfile.TemporaryDirectory(prefix="agentgym-terminal-") as scratch:
        root = Path(scratch) / "context"
        if context is not None:
            shutil.copytree(context, root, symlinks=True)
        else:
            root.mkdir()
        (root / "Dockerfile").write_text(dockerfile, encoding="utf-8")
        output: list[str] = []
        try:
            for chunk in engine.client().api.build(path=str(root), dockerfile="Dockerfile", tag=tag, rm=True,
                                                   forcerm=True, decode=True):
                output.append(chunk.get("stream", ""))
                if "error" in chunk:
                    tail = "".join(output)[-1500:]
                    if NO_PYTHON in tail or NO_PYTHON in chunk["error"]:
                        raise EnvError(f"task {task.name}: its image has no python3 on PATH, which agentgym's "
                                       "in-sandbox supervisor runs on: install python3 in its Dockerfile, or map "
                                       "its base image to one that has it (--base-image)")
                    raise EnvError(f"task {task.name}: building its image failed: {chunk['error'].strip()}\n{tail}")
                if time.monotonic() > deadline:
                    raise EnvError(f"task {task.name}: building its image ran past build_timeout_sec "
                                   f"({task.config.environment.build_timeout_sec:g} s)")
        except docker.errors.DockerException as e:
            raise EnvError(f"task {task.name}: building its image failed: {e}") from e
    if not _exists(tag):
        raise EnvError(f"task {task.name}: the build produced no image {tag}")


def _exists(ref: str) -> bool:
    import docker

    try:
        engine.client().images.get(ref)
    except docker.errors.ImageNotFound:
        return False
    except docker.errors.DockerException as e:
        raise EnvError(f"the Docker engine did not answer: {e}") from e
    return True


def _image_id(ref: str) -> str:
    return str(engine.client().images.get(ref).id)
