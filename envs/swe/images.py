"""Which Docker image a SWE task runs in, made ready for agentgym's sandboxes.

Three ways to get the repository's image, tried in this order for a task:

1. ``image``: an existing image, used as it is (present in the engine, or pulled when a registry answers).
2. ``dockerfile``: a user's Dockerfile (its text, or the path of a file whose directory is the build
   context), built with ``docker build`` and cached by the hash of the Dockerfile and its context.
3. ``source_archive``: an sdist (``{"package", "version", "sha256", "filename"}``), turned into an image by
   :func:`~agentgym.envs.swe.sdist_image.build_sdist_image` (Debian base, the sdist's tests'
   dependencies, the repository at ``/testbed`` as a git repo at the release); a synthesized task's
   ``bug_patch`` (in ``source_archive``) is then applied in a layer of its own and the tree made the
   one commit of a new repository (:func:`with_bug`), whose hash is the task's ``base_commit``.

With none of them, the task is taken to be an official SWE-bench instance, whose image follows
swebench's naming scheme (``swebench/sweb.eval.x86_64.<instance_id>:latest``, ``__`` spelled
``_1776_``): used when present in the engine, else pulled when a registry answers. There is no
registry on an air-gapped machine: then the image must be loaded beforehand (``docker load``).

Whatever the way, the image gets one thin layer on top (:func:`ready_image`, cached by the base
image's id) so that agentgym's sandboxes can work in it: ``/testbed`` is owned by the uid that code
runs as (so the model can edit it and git trusts it), git marks ``/testbed`` a safe directory, and
git ignores Python's caches everywhere (``__pycache__``, ``.pytest_cache``), so running the tests
adds nothing to a patch even in a repository with no ``.gitignore`` (an sdist's); and the
repository's history ends at the task's base commit (no later commit, ref, reflog or unreachable
object: :data:`_STRIP`), so a fix the image's history holds is not the model's to copy.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import logging
import shlex
import threading
from pathlib import Path

from agentgym.errors import EnvError, SandboxError
from agentgym.sandboxes import CODE_USER, engine

from .tasks import REPO_DIR, SWETask

log = logging.getLogger(__name__)

SWEBENCH_NAMESPACE = "swebench"
READY_REPOSITORY = "agentgym/swe-ready"
DOCKERFILE_REPOSITORY = "agentgym/swe-dockerfile"
TASK_REPOSITORY = "agentgym/swe-task"
MAX_CONTEXT_BYTES = 64 << 20  # a Dockerfile's build context larger than this is refused, not hashed

_READY_DOCKERFILE = """\
FROM {base}
USER 0
RUN test -d {repo}/.git || {{ echo "the image has no git repository at {repo}" >&2; exit 1; }} \\
 && command -v git >/dev/null || {{ echo "the image has no git" >&2; exit 1; }}
RUN git config --system --add safe.directory {repo}
{strip}RUN find {repo} -xdev \\! -user {uid} -exec chown -h {uid}:{gid} {{}} + \\
 && printf '__pycache__/\\n*.py[co]\\n.pytest_cache/\\n' > /etc/agentgym-gitignore \\
 && git config --system core.excludesFile /etc/agentgym-gitignore
"""
_lock = threading.Lock()
_STRIP = """\
RUN cd {repo} && base=$(git rev-parse --verify -q {commit}^{{commit}}) \\
 || {{ echo "the image has no commit {commit} at {repo}" >&2; exit 1; }}; \\
 {{ [ "$(git rev-parse HEAD)" = "$base" ] || git -c advice.detachedHead=false checkout -q -f "$base"; }} \\
 && git checkout -q --detach \\
 && git for-each-ref --format='%(refname)' | while read -r ref; do git update-ref -d "$ref"; done \\
 && git update-ref --no-deref HEAD "$base" \\
 && rm -rf .git/logs .git/ORIG_HEAD .git/FETCH_HEAD .git/MERGE_HEAD .git/CHERRY_PICK_HEAD .git/refs/stash \\
    .git/packed-refs .git/rr-cache .git/worktrees \\
 && git -c gc.reflogExpire=now -c gc.reflogExpireUnreachable=now reflog expire --expire=now --all \\
 && git repack -a -d -q && git prune --expire=now \\
 && test "$(git rev-list --all --reflog | sort)" = "$(git rev-list "$base" | sort)" \\
 || {{ echo "history past {commit} is left at {repo}" >&2; exit 1; }}
"""
"""Leaves the repository's history at the task's base and no further: HEAD detached at it, no other ref,
no reflog, stash or leftovers of a merge, every object not reachable from it pruned and the packs
rewritten (the lower layers' files are hidden by this one, so a fix that was a later commit of the
image cannot be read from the container: ``git log HEAD@{1}``, ``git fsck --lost-found``)."""
_ready: dict[str, str] = {}  # task's base image reference -> ready image tag, for this process
_for_task: dict[str, str] = {}  # a task's image fields -> its ready image tag, for this process


def swebench_image_name(instance_id: str, namespace: str = SWEBENCH_NAMESPACE) -> str:
    """The official SWE-bench instance image's name (swebench's ``ImageSpec.name`` for a remote image)."""
    key = f"sweb.eval.x86_64.{instance_id}:latest".lower()
    return f"{namespace}/{key}".replace("__", "_1776_")


def base_image(task: SWETask) -> str:
    """The image holding the task's repository at ``/testbed``, built or found (blocking).

    Raises:
        EnvError: The image cannot be had; the message says which way was tried and why it failed.
    """
    if task.image:
        return _existing(task.image, f"task {task.instance_id}'s image")
    if task.dockerfile:
        return build_dockerfile(task.dockerfile)
    if task.source_archive:
        from .sdist_image import build_sdist_image

        archive = task.source_archive
        extra = tuple(r for r in archive.get("extra_requirements", "").splitlines() if r.strip())
        release = build_sdist_image(archive["package"], archive.get("version"), sha256=archive.get("sha256"),
                                    extra_requirements=extra)
        return with_bug(release, task) if archive.get("bug_patch") else release
    return _existing(swebench_image_name(task.instance_id),
                     f"the official SWE-bench image of {task.instance_id} (the task names no image, "
                     "dockerfile or source_archive)")


def with_bug(release: str, task: SWETask) -> str:
    """A synthesized task's image: its sdist's image with the task's ``bug_patch`` applied at ``/testbed``
    and the tree made the one commit of a new repository
    (:func:`~agentgym.envs.swe.sdist_image.root_commit_script`), as the synthesizer made it, so its
    hash is the task's ``base_commit``; the build fails if it is not. The release's history and
    objects are gone from the container's view (``.git`` is made anew in this layer). Tagged
    ``agentgym/swe-task:<hash of the release image id and the task>``, built once.

    Raises:
        EnvError: The bug does not apply, or the commit is not the task's base commit.
    """
    from .sdist_image import root_commit_script

    assert task.source_archive is not None
    bug = base64.b64encode(task.source_archive["bug_patch"].encode()).decode()
    dockerfile = f"""FROM {release}
USER 0
RUN cd {REPO_DIR} && echo {bug} | base64 -d > /tmp/agentgym-bug.patch && git apply /tmp/agentgym-bug.patch \\
 && rm /tmp/agentgym-bug.patch && {root_commit_script()} \\
 && test "$(git rev-parse HEAD)" = {shlex.quote(task.base_commit)}
"""
    with _lock:
        image_id = engine.client().images.get(release).id.split(":")[-1]
        tag = f"{TASK_REPOSITORY}:{_digest(image_id.encode(), dockerfile.encode())}"
        if not _exists(tag):
            _build(dockerfile.encode(), tag, dockerfile_path=None, network="none",
                   what=f"task {task.instance_id}'s bug over {release} (must give commit {task.base_commit})")
    return tag


def image_for(task: SWETask) -> str:
    """The ready image (see the module docstring) that sandboxes for ``task`` start from (blocking).

    Found or built once per process and task: later episodes of the task ask the engine nothing.
    """
    key = json.dumps([task.instance_id, task.image, task.dockerfile, task.source_archive, task.base_commit])
    if key not in _for_task:
        _for_task[key] = ready_image(base_image(task), task.base_commit)
    return _for_task[key]


def ready_image(base: str, base_commit: str | None = None) -> str:
    """``base`` with the thin layer agentgym's sandboxes need; built once per base image id (and commit).

    With ``base_commit``, the layer also strips the repository's history past that commit
    (:data:`_STRIP`): what the model's container shows of git ends at the task's base.

    Raises:
        EnvError: ``base`` has no git repository at ``/testbed``, no git or no ``base_commit``, or the
            build failed.
    """
    with _lock:
        key = f"{base}@{base_commit or ''}"
        if key in _ready:
            return _ready[key]
        api = engine.client()
        image_id = api.images.get(base).id.split(":")[-1]
        strip = _STRIP.format(repo=REPO_DIR, commit=shlex.quote(base_commit)) if base_commit else ""
        dockerfile = _READY_DOCKERFILE.format(base=base, repo=REPO_DIR, uid=CODE_USER[0], gid=CODE_USER[1],
                                              strip=strip)
        tag = f"{READY_REPOSITORY}:{_digest(image_id.encode(), dockerfile.encode())}"
        if not _exists(tag):
            log.warning("preparing %s for SWE sandboxes as %s", base, tag)
            _build(dockerfile.encode(), tag, dockerfile_path=None, network="none", what=f"the ready layer over {base}")
        _ready[key] = tag
        return tag


def build_dockerfile(dockerfile: str) -> str:
    """Build a user's Dockerfile (its text, or a path; the file's directory is the context); its tag.

    The tag is ``agentgym/swe-dockerfile:<hash>`` over the Dockerfile and every file of its context,
    so an unchanged Dockerfile is built once. The build has the host's network (``docker build``
    steps that install packages need it; the sandboxes that run from the image have none).

    Raises:
        EnvError: The file or its context cannot be read, or the build failed (with docker's words).
    """
    text = dockerfile.lstrip()
    if "\n" in dockerfile or text.upper().startswith(("FROM ", "ARG ", "#")):
        content, context = dockerfile.encode(), None
    else:
        path = Path(dockerfile)
        if not path.is_file():
            raise EnvError(f"dockerfile {dockerfile!r} is neither a file nor a Dockerfile's text")
        content, context = path.read_bytes(), path
    tag = f"{DOCKERFILE_REPOSITORY}:{_digest(content, *_context_files(context.parent if context else None))}"
    with _lock:
        if not _exists(tag):
            log.warning("building the SWE image %s from a Dockerfile", tag)
            _build(content, tag, dockerfile_path=context, network="host", what="the task's Dockerfile")
    return tag


def _context_files(context: Path | None) -> list[bytes]:
    """What the build context holds, as hashable parts (path, then content, per file)."""
    if context is None:
        return []
    parts: list[bytes] = []
    total = 0
    for file in sorted(p for p in context.rglob("*") if p.is_file()):
        total += file.stat().st_size
        if total > MAX_CONTEXT_BYTES:
            raise EnvError(f"the build context {context} holds more than {MAX_CONTEXT_BYTES >> 20} MiB")
        parts += [str(file.relative_to(context)).encode(), file.read_bytes()]
    return parts


def _build(dockerfile: bytes, tag: str, *, dockerfile_path: Path | None, network: str, what: str) -> None:
    """``docker build``: of ``dockerfile`` alone, or of the file at ``dockerfile_path`` in its directory."""
    import docker

    api = engine.client().api
    where = ({"fileobj": io.BytesIO(dockerfile)} if dockerfile_path is None
             else {"path": str(dockerfile_path.parent), "dockerfile": dockerfile_path.name})
    try:
        stream = api.build(**where, tag=tag, rm=True, forcerm=True, network_mode=network, decode=True)
        output: list[str] = []
        for chunk in stream:
            if "error" in chunk:
                tail = "".join(output)[-1500:]
                raise EnvError(f"building {what} failed: {chunk['error'].strip()}\n{tail}")
            output.append(chunk.get("stream", ""))
    except docker.errors.DockerException as e:
        raise EnvError(f"building {what} failed: {e}") from e
    if not _exists(tag):
        raise EnvError(f"building {what} produced no image {tag}")


def _existing(ref: str, what: str) -> str:
    import docker

    if _exists(ref):
        return ref
    try:
        engine.client().images.pull(ref)
    except docker.errors.DockerException as e:
        raise EnvError(f"{what} {ref!r} is not in the Docker engine and could not be pulled ({e}); with no "
                       "registry reachable, load it first (docker load) or give the task a dockerfile") from e
    return ref


def _exists(ref: str) -> bool:
    import docker

    try:
        engine.client().images.get(ref)
    except docker.errors.ImageNotFound:
        return False
    except docker.errors.DockerException as e:
        raise SandboxError(f"the Docker engine did not answer: {e}") from e
    return True


def _digest(*parts: bytes) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()[:12]
