"""The embedded corpus: SQuAD v1.1 dev and the four SQuADShifts sets, fetched once and cached.

The files ship inside the ``bigbench`` 1.0.0 source distribution on PyPI (a 358 MB tarball that
cannot be pip-installed), under ``bigbench/benchmark_tasks/squad_shifts/``. :func:`fetch` finds the
sdist through the simple API of the indexes pip is configured with (:mod:`.pip_index`), streams it to
disk while hashing it, refuses it unless the sha256
matches the pinned one, and extracts only those files into ``$AGENTGYM_DATA_DIR/search/`` (default
``~/.cache/agentgym/search/``). Later calls find the files there and return at once.

Every paragraph becomes one document; the corpus always holds all five domains (9,750 paragraphs),
so the gold paragraph of any question sits among thousands of distractors, some from its own
article and most from other domains.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from agentgym.envs.search import pip_index
from agentgym.errors import DataError

SDIST_NAME = "bigbench-1.0.0.tar.gz"
SDIST_SHA256 = "1bb398a5512c6d798cdebe0dfa0ac03f67f6033fa6b39c6ef71df978c7cbc5c2"
_MEMBER_PREFIX = "bigbench-1.0.0/bigbench/benchmark_tasks/squad_shifts/"

SPLITS: dict[str, str] = {
    "squad": "squaddev_v1.1",
    "new_wiki": "new_wiki_v1.0",
    "nyt": "nyt_v1.0",
    "reddit": "reddit_v1.0",
    "amazon": "amazon_reviews_v1.0",
}
"""Split name → file stem inside the sdist (each has a ``<stem>_removed.json`` beside it)."""


def data_dir() -> Path:
    """Where the extracted files live: ``$AGENTGYM_DATA_DIR/search`` or ``~/.cache/agentgym/search``."""
    root = os.environ.get("AGENTGYM_DATA_DIR") or Path.home() / ".cache" / "agentgym"
    return Path(root) / "search"


def _complete(directory: Path) -> bool:
    return all((directory / f"{stem}{suffix}.json").is_file()
               for stem in SPLITS.values() for suffix in ("", "_removed"))


def _download(url: str, dest: Path) -> str:
    digest = hashlib.sha256()
    with urllib.request.urlopen(url, timeout=120) as response, open(dest, "wb") as out:
        while chunk := response.read(1 << 20):
            digest.update(chunk)
            out.write(chunk)
    return digest.hexdigest()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _extract(sdist: Path, directory: Path) -> None:
    staging = Path(tempfile.mkdtemp(dir=directory.parent, prefix=".search-"))
    try:
        with tarfile.open(sdist, "r:gz") as tar:
            for member in tar:
                if not (member.isfile() and member.name.startswith(_MEMBER_PREFIX)
                        and member.name.endswith(".json")):
                    continue
                name = Path(member.name).name
                source = tar.extractfile(member)
                assert source is not None
                with source, open(staging / name, "wb") as out:
                    shutil.copyfileobj(source, out)
        if not _complete(staging):
            raise DataError(f"{sdist} does not hold the squad_shifts files it should")
        if directory.exists():
            shutil.rmtree(directory)
        staging.rename(directory)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def fetch(force: bool = False, index_url: str | None = None) -> Path:
    """Download, verify and extract the corpus if it is not cached yet; return its directory.

    ``AGENTGYM_SEARCH_SDIST`` may name an already-downloaded ``bigbench-1.0.0.tar.gz`` (for a
    machine with no network). Otherwise the sdist comes from the first index that lists it, among
    ``index_url`` or ``AGENTGYM_PYPI_INDEX`` if given, else pip's configured ones (:mod:`.pip_index`).
    Either way the file must match the pinned sha256.

    Args:
        force: Download and extract again even if the files are already cached.
        index_url: The one index to use (a simple API's base URL).

    Raises:
        DataError: The sdist could not be downloaded, or its checksum does not match.
    """
    directory = data_dir()
    if not force and _complete(directory):
        return directory
    directory.parent.mkdir(parents=True, exist_ok=True)
    local = os.environ.get("AGENTGYM_SEARCH_SDIST")
    how_to = ("check the network or the index (--index-url, AGENTGYM_PYPI_INDEX, pip's index-url), or download "
              "it by hand (pip download --no-deps --no-binary :all: bigbench==1.0.0 -d DIR) and set "
              "AGENTGYM_SEARCH_SDIST=DIR/" + SDIST_NAME)
    with tempfile.TemporaryDirectory(dir=directory.parent, prefix=".download-") as tmp:
        if local:
            sdist = Path(local)
            if not sdist.is_file():
                raise DataError(f"AGENTGYM_SEARCH_SDIST={local} is not a file")
            got = _sha256(sdist)
        else:
            sdist = Path(tmp) / SDIST_NAME
            got = _download_from_indexes(pip_index.indexes(index_url), sdist, how_to)
        if got != SDIST_SHA256:
            raise DataError(f"{SDIST_NAME} has sha256 {got}, expected {SDIST_SHA256}: refusing it; {how_to}")
        _extract(sdist, directory)
    return directory


def _download_from_indexes(indexes: list[str], dest: Path, how_to: str) -> str:
    """Download the sdist from the first index listing it; return its sha256."""
    failures: list[str] = []
    for index in indexes:
        try:
            url = pip_index.project_files(index, "bigbench").get(SDIST_NAME)
            if url is None:
                failures.append(f"{index} lists no {SDIST_NAME}")
                continue
            return _download(url, dest)
        except (urllib.error.URLError, OSError, ValueError) as e:
            failures.append(f"{index}: {e}")
    raise DataError(f"could not download {SDIST_NAME}: {'; '.join(failures)}; {how_to}")


@dataclass(frozen=True)
class Paragraph:
    """One document of the corpus."""

    id: str
    split: str
    title: str
    text: str


@dataclass(frozen=True)
class Question:
    """One question with every gold answer and the id of the paragraph it was written on."""

    id: str
    split: str
    question: str
    answers: tuple[str, ...]
    paragraph_id: str


@dataclass(frozen=True)
class Corpus:
    paragraphs: tuple[Paragraph, ...]
    questions: tuple[Question, ...]


def _title(raw: str) -> str:
    """A readable title: NYT titles are article URLs, whose slug reads as a headline."""
    if raw.startswith("http"):
        slug = raw.rstrip("/").rsplit("/", 1)[-1]
        raw = re.sub(r"\.html?$", "", slug).replace("-", " ")
        return raw[:1].upper() + raw[1:]
    return raw.replace("_", " ").strip()


@lru_cache(maxsize=2)
def load_corpus(directory: Path | None = None) -> Corpus:
    """Read every split (fetching first if needed); cached, so envs in one process share it.

    Gold answers are the dataset's answers plus the ones BIG-bench filtered out for its own output
    format (``*_removed.json``): the verifier should accept any answer a SQuAD annotator gave.
    """
    directory = directory or fetch()
    paragraphs: list[Paragraph] = []
    questions: list[Question] = []
    for split, stem in SPLITS.items():
        data = json.loads((directory / f"{stem}.json").read_text(encoding="utf-8"))
        removed = json.loads((directory / f"{stem}_removed.json").read_text(encoding="utf-8"))["removed"]
        n = 0
        for article in data["data"]:
            title = _title(article.get("title", ""))
            for paragraph in article["paragraphs"]:
                pid = f"{split}-{n}"
                n += 1
                paragraphs.append(Paragraph(pid, split, title, paragraph["context"].strip()))
                for qa in paragraph["qas"]:
                    answers = [a["text"].strip() for a in qa["answers"]] + list(removed.get(qa["id"], []))
                    unique = tuple(dict.fromkeys(a for a in answers if a))
                    questions.append(Question(qa["id"], split, qa["question"].strip(), unique, pid))
    return Corpus(tuple(paragraphs), tuple(questions))
