"""Images without a registry: recipe tags follow their content, builds are cached, references pass through."""

from __future__ import annotations

import asyncio
import logging

import pytest

from agentgym.errors import SandboxError
from agentgym.sandboxes import build_image, builder, engine
from tests.conftest import docker_or_skip


def test_recipe_tag_is_a_content_hash() -> None:
    tag = builder.image_tag("python")
    assert tag.startswith("agentgym/python:") and len(tag.split(":")[1]) == 12
    assert builder.image_tag("python") == tag
    assert builder.resolve("python") == tag
    assert builder.resolve("python:3.12-slim") == "python:3.12-slim"
    assert builder.resolve("ghcr.io/org/img") == "ghcr.io/org/img"


def test_unknown_recipe_names_the_known_ones() -> None:
    with pytest.raises(SandboxError, match=r"known: .*python"):
        builder.resolve("no-such-recipe")


@pytest.mark.docker
async def test_build_is_cached_and_image_is_small(caplog: pytest.LogCaptureFixture) -> None:
    docker_or_skip()
    tag = await asyncio.to_thread(build_image, "python")  # builds once per machine (~45 s)
    built = engine.client().images.get(tag).id
    with caplog.at_level(logging.WARNING, logger=builder.__name__):
        assert await asyncio.to_thread(build_image, "python") == tag
    assert "building" not in caplog.text and "copying" not in caplog.text  # found, not made again
    image = engine.client().images.get(tag)
    assert image.id == built
    assert image.attrs["Size"] < 200 * 1024 * 1024


@pytest.mark.docker
async def test_images_of_old_recipe_hashes_are_stale() -> None:
    docker_or_skip()
    current = await asyncio.to_thread(build_image, "python")
    images = engine.client().images
    images.get(current).tag("agentgym/python", "000000000000")
    try:
        stale = builder.stale_images()
        assert "agentgym/python:000000000000" in stale and current not in stale
    finally:
        images.remove("agentgym/python:000000000000")
