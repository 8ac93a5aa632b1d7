"""An image per package and version, built here from the package's sdist with no image registry.

The image is the ``swe`` recipe (Debian with ``python3``, ``git`` and ``patch``, made by
``debootstrap`` like the ``python`` one, see ``sandboxes/builder.py``) plus:

- the package's test dependencies (``pytest`` by default) and its own ``Requires-Dist``, installed
  from wheels this host downloaded (the container that installs them has no network at all), by the
  ``pip`` wheel itself (the base has no pip);
- the sdist at ``/testbed`` as a git repository whose one commit is the sdist as released: extracted
  without owners (root-owned files make git refuse the repo, "dubious ownership"), every file
  tracked (ignored ones too), committed with a fixed author and date, so the base commit's hash
  depends on the sdist alone and is the same on every machine. ``/testbed`` belongs to the sandbox's
  code user (uid 65534) and git trusts any directory (``safe.directory *``), so both the agent (root)
  and code can run git there. The package itself is not installed: ``python3 -m pytest`` run in
  ``/testbed`` imports it from the repository (or from ``src/``, see :attr:`SdistImage.test_cmd`).

The tag is ``agentgym-sdist/<package>:<version>-<hash>``, where the hash covers the base image's tag
(itself a hash of its recipe and builder), the sdist's sha256, the pinned test requirements and this
module's source: an unchanged recipe is built once per machine, and what a task names (package,
version, sha256) rebuilds the same repository anywhere. The labels of the image record them. The
repository is not ``agentgym/``: ``agentgym sandbox prune --images`` takes every tag there that no
recipe names for stale, and these are not recipes' images.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import logging
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from agentgym.envs.swe.testrun import DEFAULT_TEST_CMD
from agentgym.errors import SandboxError
from agentgym.sandboxes import CODE_USER, builder, engine

if TYPE_CHECKING:
    import docker

log = logging.getLogger(__name__)

BASE_RECIPE = "swe"
REPOSITORY = "agentgym-sdist"
TESTBED = "/testbed"
TEST_REQUIREMENTS = ("pytest==9.0.3",)
"""Installed in every image: pinned, so a tag names one set of test tools."""
PIP_REQUIREMENT = "pip==26.3"
"""The pip wheel that installs the rest (run from the wheel file; the image keeps no pip)."""
LABEL = "agentgym.sdist"
"""The image label holding :class:`SdistImage` as JSON."""
COMMIT_DATE = "2000-01-01T00:00:00+0000"
COMMIT_AUTHOR = ("agentgym", "agentgym@localhost")
BASE_MESSAGE = "base"
"""The message of a synthesized task's one commit: it names nothing of the bug or how it was made."""


def root_commit_script() -> str:
    """Shell that makes the work tree in the current folder the one commit of a new repository.

    What a synthesized task's base is: no parent (the release it was made from), a neutral message,
    the fixed author and date (so the hash depends on the tree alone, and the synthesizer and the
    task's image make the same commit), no reflog, no object but the tree's, and every file's
    modification time the commit's date (an edited file is not the newest). Prints nothing.
    """
    name, email = COMMIT_AUTHOR
    return (
        f"rm -rf .git && git init --quiet --initial-branch=main && git add --all --force && "
        f"GIT_AUTHOR_DATE='{COMMIT_DATE}' GIT_COMMITTER_DATE='{COMMIT_DATE}' git -c user.name='{name}' "
        f"-c user.email='{email}' commit --quiet --no-gpg-sign -m {BASE_MESSAGE} && rm -rf .git/logs && "
        f"find . -path ./.git -prune -o -exec touch -h -d '{COMMIT_DATE}' {{}} +"
    )
BUILD_DIR = "/agentgym-build"
BUILD_TIMEOUT = 600
DOWNLOAD_TIMEOUT = 300
SDIST_SUFFIXES = (".tar.gz", ".tgz", ".zip")
TEST_EXTRAS = ("test", "tests", "testing")
"""Extras whose requirements an sdist's tests need (``pkg[tests]``): read from its ``PKG-INFO``, installed."""


@dataclasses.dataclass(frozen=True)
class SdistImage:
    """What an sdist image holds, as recorded in its label.

    Attributes:
        tag: The image reference.
        package: The name as asked for (``more-itertools``).
        version: The exact version of the sdist.
        filename: The sdist's file name on PyPI.
        sha256: The sdist's sha256, the one thing that names its content.
        base_commit: The commit at ``/testbed`` holding the sdist as released.
        requirements: What was installed besides the package, exact versions.
        test_cmd: How to run the whole test suite in ``/testbed`` (``PYTHONPATH=src`` first for a
            package laid out under ``src/``).
    """

    tag: str
    package: str
    version: str
    filename: str
    sha256: str
    base_commit: str
    requirements: tuple[str, ...]
    test_cmd: str

    @property
    def source_archive(self) -> dict[str, str]:
        """The task field naming the sdist (``package``, ``version``, ``filename``, ``sha256``)."""
        return {"package": self.package, "version": self.version, "filename": self.filename, "sha256": self.sha256}


@dataclasses.dataclass(frozen=True)
class Sdist:
    """An sdist on this host's disk."""

    package: str
    version: str
    path: Path
    sha256: str
    requires: tuple[str, ...]
    test_requires: tuple[str, ...] = ()


def cache_dir() -> Path:
    """Downloaded sdists and wheels: ``$AGENTGYM_DATA_DIR/swe`` or ``~/.cache/agentgym/swe``."""
    root = os.environ.get("AGENTGYM_DATA_DIR") or Path.home() / ".cache" / "agentgym"
    return Path(root) / "swe"


def build_sdist_image(
    package: str, version: str | None = None, *, sha256: str | None = None,
    test_requirements: tuple[str, ...] = TEST_REQUIREMENTS, extra_requirements: tuple[str, ...] = (),
) -> str:
    """Build (once per machine) the image of ``package``'s sdist at ``version`` (newest when None).

    Blocking: a cold build makes the base (debootstrap, a few minutes, once per machine) and then
    the package's layer (seconds); a warm one only checks the tag. :func:`describe` reads what the
    image holds.

    Args:
        package: The PyPI name.
        version: The exact version; the newest on PyPI when None.
        sha256: The sdist's expected sha256 (a task's ``source_archive``); a different file is an error.
        test_requirements: Pinned requirements for running the tests.
        extra_requirements: More of them, for this package's tests (``hypothesis``, a pytest
            plugin); the sdist's own test extras (:data:`TEST_EXTRAS`) are added without asking.

    Raises:
        SandboxError: The sdist or a wheel could not be downloaded, the sha256 differs, or the build failed.
    """
    sdist = fetch_sdist(package, version)
    if sha256 is not None and sha256 != sdist.sha256:
        raise SandboxError(f"the sdist of {package} {sdist.version} has sha256 {sdist.sha256}, not {sha256}")
    base = builder.ensure(BASE_RECIPE)
    requirements = (PIP_REQUIREMENT, *test_requirements, *sdist.requires, *sdist.test_requires, *extra_requirements)
    tag = sdist_tag(sdist, base, requirements)
    api = engine.client()
    with builder.build_lock(tag):
        if builder.image_exists(api, tag):
            return tag
        started = time.monotonic()
        _build(api, base, tag, sdist, requirements)
        log.warning("built %s in %.0f s", tag, time.monotonic() - started)
    return tag


def describe(tag: str) -> SdistImage:
    """What the sdist image ``tag`` holds, from its label.

    Raises:
        SandboxError: No such image, or it was not built by :func:`build_sdist_image`.
    """
    import docker

    try:
        labels = engine.client().images.get(tag).labels or {}
    except docker.errors.ImageNotFound:
        raise SandboxError(f"no image {tag!r}; build it with build_sdist_image()") from None
    if LABEL not in labels:
        raise SandboxError(f"image {tag!r} is not an sdist image (no {LABEL} label)")
    data = json.loads(labels[LABEL])
    return SdistImage(tag=tag, **{**data, "requirements": tuple(data["requirements"])})


def sdist_tag(sdist: Sdist, base: str, requirements: tuple[str, ...]) -> str:
    """``agentgym-sdist/<package>:<version>-<hash>`` (see the module docstring for what is hashed)."""
    digest = hashlib.sha256()
    for part in (base, sdist.sha256, *requirements):
        digest.update(part.encode() + b"\0")
    digest.update(Path(__file__).read_bytes())
    name = re.sub(r"[^a-z0-9]+", "-", sdist.package.lower()).strip("-")
    version = re.sub(r"[^A-Za-z0-9_.-]", "_", sdist.version)[:100]
    return f"{REPOSITORY}/{name}:{version}-{digest.hexdigest()[:12]}"


def fetch_sdist(package: str, version: str | None = None) -> Sdist:
    """The sdist of ``package`` (``version``, or the newest), from the cache or PyPI via ``pip download``.

    Raises:
        SandboxError: pip could not get it, or what it got is not one sdist.
    """
    folder = cache_dir() / "sdists" / re.sub(r"[^a-z0-9]+", "-", package.lower())
    cached = _sdists_in(folder, version) if version is not None else []
    if not cached:
        spec = f"{package}=={version}" if version is not None else package
        with tempfile.TemporaryDirectory(prefix="agentgym-sdist-") as tmp:
            # Only this package from its sdist: its build backend, which pip may need to read the
            # metadata, comes as a wheel (a source build of it can take longer than the limit).
            _pip("download", "--no-deps", "--no-binary", package, "--dest", tmp, spec)
            got = [p for p in Path(tmp).iterdir() if p.name.endswith(SDIST_SUFFIXES)]
            if len(got) != 1:
                raise SandboxError(f"pip download {spec} gave {[p.name for p in got]}, not one sdist")
            folder.mkdir(parents=True, exist_ok=True)
            target = folder / got[0].name
            os.replace(got[0], target)
        cached = [target]
    path = cached[0]
    found_version, requires, test_requires = _pkg_info(path)
    return Sdist(
        package=package, version=found_version, path=path,
        sha256=hashlib.sha256(path.read_bytes()).hexdigest(), requires=requires, test_requires=test_requires,
    )


def _sdists_in(folder: Path, version: str) -> list[Path]:
    if not folder.is_dir():
        return []
    return [p for p in folder.iterdir() if p.name.endswith(SDIST_SUFFIXES) and _pkg_info(p)[0] == version]


def _pkg_info(path: Path) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """Version, the ``Requires-Dist`` that hold with no extra, and those of its test extras
    (:data:`TEST_EXTRAS`), from the sdist's top ``PKG-INFO``."""
    from email.parser import HeaderParser

    from packaging.requirements import Requirement

    text = _read_member(path, "PKG-INFO")
    meta = HeaderParser().parsestr(text)
    requires: list[str] = []
    test_requires: list[str] = []
    for line in meta.get_all("Requires-Dist") or []:
        req = Requirement(line)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            requires.append(str(req))
        elif any(req.marker.evaluate({"extra": extra}) for extra in TEST_EXTRAS):
            req.marker = None
            test_requires.append(str(req))
    try:
        pyproject = _read_member(path, "pyproject.toml")
    except SandboxError:
        pyproject = ""
    for line in dependency_groups(pyproject):
        if line not in test_requires:
            test_requires.append(line)
    return str(meta["Version"]), tuple(requires), tuple(test_requires)


def dependency_groups(pyproject: str, names: tuple[str, ...] = TEST_EXTRAS) -> list[str]:
    """The requirements of ``pyproject``'s PEP 735 ``[dependency-groups]`` named ``names`` (the test
    extras' names), ``{include-group = ...}`` followed, markers that hold here kept as they are.

    Projects that keep their test requirements in a dependency group rather than an extra (no
    ``Requires-Dist`` says them) get them installed too. A malformed table gives what it can: an
    unreadable ``pyproject.toml`` is no test requirement, not a failed build.
    """
    import tomllib

    from packaging.requirements import InvalidRequirement, Requirement

    try:
        groups = tomllib.loads(pyproject).get("dependency-groups", {}) if pyproject else {}
    except tomllib.TOMLDecodeError:
        return []
    if not isinstance(groups, dict):
        return []
    normal = {re.sub(r"[-_.]+", "-", str(k)).lower(): v for k, v in groups.items()}
    out: list[str] = []
    seen: set[str] = set()

    def take(name: str) -> None:
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen or not isinstance(normal.get(key), list):
            return
        seen.add(key)
        for item in normal[key]:
            if isinstance(item, dict) and isinstance(item.get("include-group"), str):
                take(item["include-group"])
            elif isinstance(item, str):
                try:
                    req = Requirement(item)
                except InvalidRequirement:
                    continue
                if (req.marker is None or req.marker.evaluate()) and str(req) not in out:
                    out.append(str(req))

    for name in names:
        take(name)
    return out


def _read_member(path: Path, name: str) -> str:
    """The text of ``<top>/<name>`` inside the sdist archive."""
    import zipfile

    if path.name.endswith(".zip"):
        with zipfile.ZipFile(path) as zf:
            members = [n for n in zf.namelist() if n.count("/") == 1 and n.endswith("/" + name)]
            if members:
                return zf.read(members[0]).decode("utf-8", errors="replace")
    else:
        with tarfile.open(path) as tf:
            for member in tf.getmembers():
                if member.name.count("/") == 1 and member.name.endswith("/" + name) and member.isfile():
                    extracted = tf.extractfile(member)
                    assert extracted is not None
                    return extracted.read().decode("utf-8", errors="replace")
    raise SandboxError(f"{path.name} has no top-level {name}: not an sdist")


def _pip(*args: str) -> None:
    cmd = [sys.executable, "-m", "pip", *args, "--disable-pip-version-check", "--quiet"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise SandboxError(f"pip {' '.join(args)} took more than {DOWNLOAD_TIMEOUT} s") from None
    if done.returncode != 0:
        raise SandboxError(f"pip {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()[-1500:]}")


def download_wheels(requirements: tuple[str, ...], dest: Path) -> list[Path]:
    """Wheels for ``requirements`` and what they need, for the image's Python (the host's, 3.11).

    Raises:
        SandboxError: pip could not download them (the message is pip's).
    """
    _pip("download", "--only-binary", ":all:", "--dest", str(dest), *requirements)
    return sorted(dest.glob("*.whl"))


SETUP = """\
set -eu
cd {build}
python3 {pip}/pip install --no-index --find-links wheels --no-cache-dir --break-system-packages \\
    --root-user-action=ignore --quiet {requirements}
mkdir {testbed}
tar -xf sdist -C {testbed} --strip-components=1 --no-same-owner
cd {testbed}
git config --system safe.directory '*'
git init --quiet --initial-branch=main
printf '__pycache__/\\n*.pyc\\n.pytest_cache/\\n' >> .git/info/exclude
git add --all --force
GIT_AUTHOR_DATE='{date}' GIT_COMMITTER_DATE='{date}' \\
    git -c user.name='{name}' -c user.email='{email}' commit --quiet --no-gpg-sign -m {message}
chown -R {uid}:{gid} {testbed}
rm -rf {build}
echo "base_commit=$(git rev-parse HEAD)"
"""


def _build(api: docker.DockerClient, base: str, tag: str, sdist: Sdist, requirements: tuple[str, ...]) -> None:
    """Install and commit in a container with no network, then commit the container as ``tag``."""
    import shlex

    import docker

    with tempfile.TemporaryDirectory(prefix="agentgym-sdist-build-") as tmp:
        wheels = download_wheels(requirements, Path(tmp) / "wheels")
        pip_wheel = next((w for w in wheels if w.name.startswith("pip-")), None)
        if pip_wheel is None:
            raise SandboxError(f"no pip wheel among {[w.name for w in wheels]}")
        installed = tuple(sorted(w.name.split("-")[0] + "==" + w.name.split("-")[1] for w in wheels if w != pip_wheel))
        message = f"{sdist.package} {sdist.version} as released (sdist sha256 {sdist.sha256})"
        script = SETUP.format(
            build=BUILD_DIR, pip=f"wheels/{pip_wheel.name}", testbed=TESTBED, date=COMMIT_DATE,
            name=COMMIT_AUTHOR[0], email=COMMIT_AUTHOR[1], message=shlex.quote(message),
            uid=CODE_USER[0], gid=CODE_USER[1],
            requirements=" ".join(shlex.quote(r) for r in requirements if r != PIP_REQUIREMENT),
        )
        context = _context(script, sdist.path, wheels)
        container = api.containers.create(
            base, command=["sh", f"{BUILD_DIR}/setup.sh"], network_disabled=True, user="0:0", working_dir="/",
        )
        try:
            container.put_archive("/", context)
            container.start()
            status = container.wait(timeout=BUILD_TIMEOUT)
            output = container.logs().decode("utf-8", errors="replace")
            if status.get("StatusCode") != 0:
                raise SandboxError(f"building {tag} failed ({status.get('StatusCode')}): {output[-2000:]}")
            found = re.search(r"^base_commit=([0-9a-f]{40})$", output, re.M)
            if found is None:
                raise SandboxError(f"building {tag} gave no base commit: {output[-2000:]}")
            layout = _layout(sdist.path)
            record = {
                "package": sdist.package, "version": sdist.version, "filename": sdist.path.name,
                "sha256": sdist.sha256, "base_commit": found.group(1), "requirements": list(installed),
                "test_cmd": ("PYTHONPATH=src " if layout == "src" else "") + DEFAULT_TEST_CMD,
            }
            repository, version = tag.split(":")
            container.commit(
                repository=repository, tag=version,
                changes=[f"LABEL {LABEL}={json.dumps(json.dumps(record, sort_keys=True))}", f"WORKDIR {TESTBED}"],
            )
        except docker.errors.DockerException as e:
            raise SandboxError(f"building {tag} failed: {e}") from e
        finally:
            container.remove(force=True)


def _layout(path: Path) -> str:
    """``src`` when the sdist keeps its code under ``src/`` (then tests need ``PYTHONPATH=src``), else ``flat``."""
    if path.name.endswith(".zip"):
        import zipfile

        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
    else:
        with tarfile.open(path) as tf:
            names = tf.getnames()
    return "src" if any(n.split("/")[1:2] == ["src"] for n in names if n.count("/") >= 2) else "flat"


def _context(script: str, sdist: Path, wheels: list[Path]) -> bytes:
    """A tar of ``BUILD_DIR`` holding the setup script, the sdist (as ``sdist``) and ``wheels/``."""
    buf = io.BytesIO()
    root = BUILD_DIR.lstrip("/")
    with tarfile.open(fileobj=buf, mode="w") as tar:
        data = script.encode()
        info = tarfile.TarInfo(f"{root}/setup.sh")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        tar.add(sdist, arcname=f"{root}/sdist")
        for wheel in wheels:
            tar.add(wheel, arcname=f"{root}/wheels/{wheel.name}")
    return buf.getvalue()
