"""Recognising a turn the model API refused for want of credentials.

The Claude CLI does not raise when it has no key ("Not logged in · Please run /login") or when
the API answers 401/403: it reports the failure as an ordinary assistant reply (with the SDK's
`error="authentication_failed"`) and a result with `is_error`. Stored as such, that text would
become the agent's answer, stay in its context and be carried into later sessions. This module
tells those replies apart, so the recorder skips them and a main loop raises one
`ModelAuthenticationError` that names the variable to set.

Older CLIs without the `error` field are recognised by the status the result carries or, failing
that, by the CLI's wording.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from claude_agent_sdk import AssistantMessage, ResultMessage, TextBlock

from ..errors import ModelAuthenticationError

__all__ = [
    "authentication_failure",
    "is_authentication_failure",
    "raise_for_authentication_failure",
]

_AUTH_STATUSES = (401, 403)
_AUTH_WORDING = ("Not logged in", "Please run /login", "Failed to authenticate", "Invalid API key")


def is_authentication_failure(message: Any) -> bool:
    """Whether this SDK message is the CLI reporting missing or refused credentials."""
    if isinstance(message, AssistantMessage):
        if message.error is not None:
            return message.error == "authentication_failed"
        return _says_auth(_text(message))
    if isinstance(message, ResultMessage) and message.is_error:
        status = getattr(message, "api_error_status", None)
        return status in _AUTH_STATUSES or _says_auth(message.result or "")
    return False


def authentication_failure(message: Any) -> ModelAuthenticationError | None:
    """The error to raise for this message, or None if it is not an authentication failure."""
    if not is_authentication_failure(message):
        return None
    text = (message.result or "") if isinstance(message, ResultMessage) else _text(message)
    status = (
        getattr(message, "api_error_status", None) if isinstance(message, ResultMessage) else None
    )
    return ModelAuthenticationError(
        status if status is not None else _status_in(text), text.strip()
    )


def raise_for_authentication_failure(messages: Any) -> None:
    """Raise `ModelAuthenticationError` if this message (or any of these) reports missing or
    refused credentials; the result's HTTP status is preferred to the assistant's text."""
    batch: Iterable[Any] = messages if isinstance(messages, (list, tuple)) else [messages]
    failures = [
        error for message in batch if (error := authentication_failure(message)) is not None
    ]
    if failures:
        raise max(failures, key=lambda error: error.status is not None)


def _text(message: AssistantMessage) -> str:
    return " ".join(block.text for block in message.content if isinstance(block, TextBlock))


def _says_auth(text: str) -> bool:
    return any(phrase in text for phrase in _AUTH_WORDING)


def _status_in(text: str) -> int | None:
    """The CLI writes '... API Error: 401 ...' when a request was made and refused."""
    return next((status for status in _AUTH_STATUSES if f"Error: {status}" in text), None)
