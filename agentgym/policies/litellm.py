"""A policy backed by any hosted model litellm can reach, with retries, a concurrency cap and accounting.

litellm is imported on first use (its import takes seconds and, unless told otherwise, fetches a
price map from the internet: we default ``LITELLM_LOCAL_MODEL_COST_MAP=True``). litellm's own retries
are turned off so that tenacity owns the policy: exponential backoff with jitter on 429, 5xx,
connection errors and timeouts, honouring ``Retry-After`` when the server sends one. Each retry is
counted: in the reply's ``Usage.retries``, or in the :class:`~agentgym.errors.PolicyError` of a call
that failed after them.

Nothing else is retried. A 4xx answer (bad credentials, an unknown model, a request the server
refuses) will be the same answer next time, and so is a call that never left this machine: litellm
reports a missing API key as a "500", so the cause chain is read, not only the status.
:meth:`LiteLLMPolicy.check` catches the commonest of these before the first call, without importing
litellm (:mod:`agentgym.credentials`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)

from agentgym.credentials import check_credentials
from agentgym.errors import PolicyError, reason_line
from agentgym.llm import litellm_module
from agentgym.policies.base import Policy, Reply
from agentgym.types import Message, Task, ToolCall, ToolSpec, Usage

#: Retried statuses: rate limits and server trouble, plus the request timeout and conflict that the
#: OpenAI SDK also retries. Every other 4xx is final.
RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504, 529}
#: Statuses that no later call of the run can get past: bad or refused credentials, no such model.
FATAL_STATUS = {401, 403, 404}


def _causes(error: BaseException) -> list[BaseException]:
    """``error`` and the exceptions it was raised from or during, outermost first."""
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and all(current is not seen for seen in chain):
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def is_local_failure(error: BaseException) -> bool:
    """Whether the call failed on this machine before any request was sent (a missing API key...).

    The SDKs check their configuration by raising their base error types: ``openai.OpenAIError``
    itself ("Missing credentials"), or a plain ``ValueError`` (litellm's "Missing Gemini API key").
    litellm then wraps them as a server error; retrying cannot help.
    """
    root = _causes(error)[-1]
    kind = type(root)
    return kind is ValueError or (kind.__name__ == "OpenAIError" and kind.__module__ == "openai")


def is_retryable(error: BaseException) -> bool:
    """Rate limits, server errors, dropped connections and timeouts are worth another try."""
    if isinstance(error, (asyncio.TimeoutError, TimeoutError, ConnectionError)):
        return True
    if is_local_failure(error):
        return False
    status = getattr(error, "status_code", None)
    if isinstance(status, int):
        return status in RETRYABLE_STATUS
    name = type(error).__name__
    return name in {"APIConnectionError", "Timeout", "APITimeoutError", "ServiceUnavailableError",
                    "InternalServerError", "RateLimitError", "BadGatewayError"}


def is_fatal(error: BaseException) -> bool:
    """Whether every later call of the run would fail the same way (see :data:`FATAL_STATUS`)."""
    return getattr(error, "status_code", None) in FATAL_STATUS or is_local_failure(error)


def _retry_after(error: BaseException | None) -> float | None:
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None) or {}
    try:
        value = headers.get("retry-after")
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


class LiteLLMPolicy:
    """Calls a chat model through ``litellm.acompletion``; the model string picks the provider.

    ``openai/gpt-4o-mini``, ``anthropic/claude-3-5-haiku-latest``, ``gemini/gemini-2.0-flash``...
    keys come from the provider's usual environment variable (``OPENAI_API_KEY``...), or ``api_key``.

    Args:
        model: A litellm model string.
        api_base: Another endpoint for the provider (an OpenAI-compatible server, a proxy).
        api_key: The key, when not in the environment.
        temperature: Sampling temperature.
        max_tokens: Cap on completion tokens per call.
        timeout: Seconds to wait for one response before retrying.
        max_attempts: Calls per turn before giving up with :class:`~agentgym.errors.PolicyError`.
        concurrency: Calls in flight at once, across every episode that shares this policy.
        backoff: First retry delay in seconds (doubles each time, with jitter, up to ``backoff_max``).
        backoff_max: Longest delay between retries.
        extra: Further keyword arguments for ``litellm.acompletion`` (``top_p``, ``seed``...).
    """

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        timeout: float = 120.0,
        max_attempts: int = 8,
        concurrency: int = 32,
        backoff: float = 1.0,
        backoff_max: float = 60.0,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.name = model
        self.model = model
        self.api_base = api_base
        self.api_key = api_key
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.max_attempts = max_attempts
        self.backoff = backoff
        self.backoff_max = backoff_max
        self.extra = dict(extra or {})
        self.failed_attempts = 0
        """Calls that failed and were tried again, over the policy's life (for progress lines)."""
        self.last_error: str | None = None
        """The latest of those failures, as one line."""
        self._semaphore = asyncio.Semaphore(concurrency)
        self._wait = wait_exponential_jitter(multiplier=backoff, max=backoff_max, jitter=backoff)

    def check(self) -> None:
        """Fail now, not once per episode, if no call can work: an unknown provider, a missing or refused key.

        See :func:`agentgym.credentials.check_credentials` (an ``api_key`` given here counts).

        Raises:
            UnknownModel: The model string names no provider litellm knows.
            PolicyError: (fatal) The provider's credentials are not in the environment (the message
                names the variables), or the provider refused the key.
        """
        check_credentials(self.model, api_key=self.api_key, api_base=self.api_base)

    def health(self) -> str | None:
        """A progress line's word on the model: its retries so far and the last error, or None if none failed."""
        if not self.failed_attempts:
            return None
        return f"{self.failed_attempts} model retries, last error: {self.last_error}"

    def _failed(self, state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        self.failed_attempts += 1
        self.last_error = reason_line(f"{type(error).__name__}: {error}", 200)

    def identity(self) -> dict[str, Any]:
        """What decides this policy's actions, recorded with a run so that a resume cannot mix two.

        The model and its sampling settings; not ``api_base``: where the endpoint lives (a port, a
        proxy) does not change what the model answers, and a resumed run may reach it elsewhere.
        """
        return {"model": self.model, "temperature": self.temperature, "max_tokens": self.max_tokens,
                "extra": self.extra}

    def _wait_for(self, state: RetryCallState) -> float:
        backoff = self._wait(state)
        hinted = _retry_after(state.outcome.exception() if state.outcome else None)
        return min(max(backoff, hinted or 0.0), self.backoff_max)

    async def act(self, messages: list[Message], tools: list[ToolSpec], *, task: Task) -> Reply:
        litellm = litellm_module()
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [m.to_openai() for m in messages],
            "temperature": self.temperature,
            "timeout": self.timeout,
            "num_retries": 0,
            "max_retries": 0,
            **self.extra,
        }
        if tools:
            kwargs["tools"] = [t.to_openai() for t in tools]
        if self.max_tokens is not None:
            kwargs["max_tokens"] = self.max_tokens
        if self.api_base is not None:
            kwargs["api_base"] = self.api_base
        if self.api_key is not None:
            kwargs["api_key"] = self.api_key
        retries = 0
        try:
            async for attempt in AsyncRetrying(
                stop=stop_after_attempt(self.max_attempts),
                wait=self._wait_for,
                retry=retry_if_exception(is_retryable),
                before_sleep=self._failed,
                reraise=True,
            ):
                with attempt:
                    retries = attempt.retry_state.attempt_number - 1
                    async with self._semaphore:
                        response = await asyncio.wait_for(litellm.acompletion(**kwargs), self.timeout + 5)
        except Exception as e:
            what = reason_line(f"{type(e).__name__}: {e}", 500)
            raise PolicyError(f"{self.model}: {what} (after {retries + 1} attempt(s))",
                              retries=retries, fatal=is_fatal(e)) from e
        return Reply(message=_to_message(response), usage=_usage(litellm, response, retries))


def _to_message(response: Any) -> Message:
    choice = response.choices[0].message
    calls = [
        ToolCall(id=c.id or f"call_{i}", name=c.function.name or "", arguments=c.function.arguments or "{}")
        for i, c in enumerate(getattr(choice, "tool_calls", None) or [])
    ]
    return Message(role="assistant", content=choice.content, tool_calls=calls)


def _usage(litellm: Any, response: Any, retries: int) -> Usage:
    usage = getattr(response, "usage", None)
    unpriced = 0
    try:
        cost = float(litellm.completion_cost(completion_response=response) or 0.0)
    except Exception:  # a model with no known price: its tokens are counted, its cost is unknown (not 0)
        cost, unpriced = 0.0, 1
    return Usage(
        prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
        completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
        cost_usd=cost,
        retries=retries,
        unpriced_calls=unpriced,
    )


def as_policy(model: str | Policy, **options: Any) -> Policy:
    """``model`` itself when it is a policy; else a :class:`LiteLLMPolicy` for that model string with ``options``."""
    return LiteLLMPolicy(model, **options) if isinstance(model, str) else model
