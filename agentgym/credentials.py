"""Can a hosted model be called at all? Checked before the first episode, in about a second.

Importing litellm takes 10-20 s on a busy machine, so the common providers are checked without it:
the environment variables litellm reads for each (any one of them will do), and, for an OpenAI-style
endpoint, the key itself, tried with one ``GET /models`` (free, and answered 401 for a key the
provider refuses). A model string of another provider, or with no provider, is checked by litellm
(:func:`litellm.get_llm_provider`, :func:`litellm.validate_environment`), at litellm's import cost.

A check that cannot decide (the endpoint is down, it has no ``/models``) lets the run go on: its
calls are retried, and a refusal there still stops the run (:data:`agentgym.errors.PolicyError`'s
``fatal``).
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request

from agentgym.errors import PolicyError, reason_line

#: Environment variables litellm reads for a provider's key (any one will do); kept equal to
#: litellm's ``validate_environment`` by ``tests/evaluation/test_cli_reports.py``.
PROVIDER_KEYS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "mistral": ("MISTRAL_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "together_ai": ("TOGETHERAI_API_KEY",),
    "fireworks_ai": ("FIREWORKS_AI_API_KEY",),
    "cohere": ("COHERE_API_KEY",),
}
#: Where an OpenAI-style provider lists its models, when no ``api_base`` is given.
OPENAI_MODELS_URL = "https://api.openai.com/v1/models"
#: Seconds the key check waits for the provider: past it the check lets the run go on.
KEY_CHECK_TIMEOUT = 5.0


class UnknownModel(PolicyError):
    """litellm cannot tell which provider a model string names."""


def check_credentials(model: str, *, api_key: str | None = None, api_base: str | None = None) -> None:
    """Fail now, not once per episode, if no call of ``model`` can work.

    Raises:
        UnknownModel: The model string names no provider litellm knows.
        PolicyError: (fatal) No key for the provider in the environment (the message names the
            variables), or the provider refused the key.
    """
    provider, _, name = model.partition("/")
    if not name or provider not in PROVIDER_KEYS:
        _check_with_litellm(model, api_key=api_key, api_base=api_base)
        return
    names = PROVIDER_KEYS[provider]
    key = api_key or next((os.environ[v] for v in names if os.environ.get(v)), None)
    if key is None:
        raise PolicyError(f"{model}: no credentials for provider {provider!r}: set {' or '.join(names)} "
                          "in the environment", fatal=True)
    if provider == "openai":
        _try_key(model, f"{api_base.rstrip('/')}/models" if api_base else OPENAI_MODELS_URL, key)


def _try_key(model: str, url: str, key: str) -> None:
    """One ``GET /models`` with the key: a 401 or 403 fails the check, anything else lets it pass."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"})
    try:
        with urllib.request.urlopen(request, timeout=KEY_CHECK_TIMEOUT):
            return
    except urllib.error.HTTPError as e:
        if e.code not in (401, 403):
            return
        detail = _error_message(e.read())
        raise PolicyError(f"{model}: {url} refused the key (HTTP {e.code}{': ' + detail if detail else ''})",
                          fatal=True) from e
    except (OSError, ValueError):  # unreachable, timed out, not a URL: the run's own calls will say
        return


def _error_message(body: bytes) -> str:
    """The ``error.message`` of an OpenAI-style error body, else the body's text, as one short line."""
    text = body.decode("utf-8", "replace")
    try:
        error = json.loads(text).get("error")
        message = error.get("message") if isinstance(error, dict) else error
        text = message if isinstance(message, str) else text
    except (ValueError, AttributeError):
        pass
    return reason_line(text, 200)


def _check_with_litellm(model: str, *, api_key: str | None, api_base: str | None) -> None:
    from agentgym.llm import litellm_module

    litellm = litellm_module()
    try:
        _, provider, _, _ = litellm.get_llm_provider(model, api_base=api_base)
    except Exception as e:
        raise UnknownModel(
            f"unknown model {model!r}: litellm cannot tell its provider; write it as provider/model, "
            "e.g. openai/gpt-4o-mini (providers: https://docs.litellm.ai/docs/providers)", fatal=True,
        ) from e
    needed = litellm.validate_environment(model, api_key=api_key, api_base=api_base)
    missing = needed.get("missing_keys") or []
    if missing:
        raise PolicyError(f"{model}: no credentials for provider {provider!r}: set {', '.join(missing)} "
                          "in the environment", fatal=True)
