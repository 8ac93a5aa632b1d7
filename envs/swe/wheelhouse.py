"""``agentgym swe wheels``: a folder of wheels a task's Dockerfile installs its test requirements from.

The SWE base image (``sandboxes/images/swe.json``) has Python but no pip, and an image build on a
machine with no registry may not reach a package index at all. So the wheels are downloaded on the
host, from pip's configured index, into the Dockerfile's build context, pip's own wheel among them:
Python runs pip straight from that wheel, so the image needs no pip of its own, and the build needs
no network. The sdist images (``envs/swe/sdist_image.py``) install their requirements the same way.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from agentgym.envs.swe.sdist_image import PIP_REQUIREMENT, download_wheels

FOLDER_IN_IMAGE = "/tmp/agentgym-wheels"
"""Where the Dockerfile copies the wheels for the install; removed in the same step."""


def download(requirements: Sequence[str], dest: Path) -> list[Path]:
    """Download wheels for ``requirements``, what they need, and pip itself into ``dest``; return them.

    Raises:
        SandboxError: pip could not download them (the message is pip's).
    """
    dest.mkdir(parents=True, exist_ok=True)
    return download_wheels((PIP_REQUIREMENT, *requirements), dest)


def dockerfile_lines(folder: str, requirements: Sequence[str]) -> str:
    """The Dockerfile steps that install ``requirements`` from the wheels in ``folder`` (relative to the build
    context), with no index and no network."""
    wanted = " ".join(shlex.quote(r) for r in requirements)
    pip = f"$(ls {FOLDER_IN_IMAGE}/pip-*.whl)/pip"
    return (f"COPY {folder} {FOLDER_IN_IMAGE}\n"
            f'RUN python3 "{pip}" install --no-index --find-links {FOLDER_IN_IMAGE} \\\n'
            f"    --no-cache-dir --break-system-packages --root-user-action=ignore --quiet {wanted} \\\n"
            f" && rm -rf {FOLDER_IN_IMAGE}\n")
