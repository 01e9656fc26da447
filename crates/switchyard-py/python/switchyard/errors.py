"""Switchyard's exceptions: one base, :class:`Error`, and a subclass per error kind.

Every failure of a call, a reference or a config reaches Python as one of these (bad
arguments from Python itself raise ``TypeError`` / ``ValueError``). ``kind`` is the
library's ``ErrorKind`` name, as written in call records and ``docs/errors.md``.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

__all__ = [
    "Error",
    "UnknownBackend",
    "NotAReference",
    "ConfigError",
    "MissingKey",
    "RateLimited",
    "ProviderQuotaExhausted",
    "ProviderReplyMalformed",
    "ContextOverflow",
    "Overloaded",
    "Timeout",
    "Transport",
    "AuthError",
    "BadRequest",
    "ProviderError",
    "Unsupported",
    "BudgetExceeded",
    "ReplayExhausted",
    "Cancelled",
    "ReplyTooLarge",
]


class Error(Exception):
    """The base of every Switchyard error.

    Attributes always present: ``kind`` (the library's error kind), ``message``. For an
    error a provider answered with: ``status`` (HTTP status; 0 for an error reported
    inside a 200 stream), ``request_id``, ``body`` (the bytes as received), ``backend``,
    ``provider_kind`` and ``code`` (the provider's error type and code), ``headers``
    (the response headers that matter, as a list of pairs). Absent ones are ``None``.
    """

    kind: str = "Error"

    def __init__(self, message: str = "", **details: Any) -> None:
        super().__init__(message)
        self.message: str = message
        kind = details.pop("kind", None)
        if kind is not None:
            self.kind = kind
        self.status: Optional[int] = details.pop("status", None)
        self.request_id: Optional[str] = details.pop("request_id", None)
        self.body: Optional[bytes] = details.pop("body", None)
        self.backend: Optional[str] = details.pop("backend", None)
        self.provider_kind: Optional[str] = details.pop("provider_kind", None)
        self.code: Optional[str] = details.pop("code", None)
        self.headers: List[Tuple[str, str]] = details.pop("headers", None) or []
        for name, value in details.items():
            setattr(self, name, value)

    def __reduce__(self):  # pickling keeps the attributes (multiprocessing, pytest-xdist)
        return (_rebuild, (type(self), self.message, dict(self.__dict__)))


def _rebuild(cls, message, state):
    err = cls.__new__(cls)
    Exception.__init__(err, message)
    err.__dict__.update(state)
    return err


class UnknownBackend(Error):
    """A reference names a backend nobody declared: ``name``, ``nearest`` (the closest
    known name, or ``None``), ``known`` (every backend's name)."""

    kind = "UnknownBackend"


class NotAReference(Error):
    """A string that must be ``<backend>/<model id>`` is not one: ``text``."""

    kind = "NotAReference"


_LOCATION = re.compile(r"^(?P<file>[^\s:][^:\n]*):(?P<line>\d+)(?::(?P<column>\d+))?: ")


class ConfigError(Error):
    """A configuration problem: ``file``, ``line`` and ``column`` of the first one (when
    known), and ``problems``: every problem as ``{"role", "location", "message"}``."""

    kind = "Config"

    def __init__(self, message: str = "", **details: Any) -> None:
        problems = details.pop("problems", None) or []
        super().__init__(message, **details)
        self.problems: List[Dict[str, Any]] = problems
        self.file: Optional[str] = None
        self.line: Optional[int] = None
        self.column: Optional[int] = None
        first = problems[0]["location"] + ": " if problems else message
        for candidate in [first] + first.splitlines()[1:2]:
            found = _LOCATION.match(candidate.lstrip())
            if found:
                self.file = found["file"]
                self.line = int(found["line"])
                self.column = int(found["column"]) if found["column"] else None
                break


class MissingKey(ConfigError):
    """The variable holding a backend's key is not set: ``backend``, ``variable``."""

    kind = "MissingKey"


class RateLimited(Error):
    """Rate limited, and the waits ran out: ``attempts``, ``waited`` (seconds)."""

    kind = "RateLimited"


class ProviderQuotaExhausted(Error):
    """The account is out of credit or over its spend limit; retrying cannot help."""

    kind = "ProviderQuotaExhausted"


class ProviderReplyMalformed(Error):
    """A success that is not a reply: ``reason``, ``attempts``, ``body``.

    A Python backend raises it (``raise ProviderReplyMalformed("no text")``) to have the
    call asked again on the malformed-reply schedule."""

    kind = "ProviderReplyMalformed"


class ContextOverflow(Error):
    """The prompt and the output limit do not fit the context window: ``prompt_tokens``,
    ``max_tokens``, ``limit`` (each ``None`` when unknown)."""

    kind = "ContextLengthExceeded"


class Overloaded(Error):
    """The provider is overloaded (Anthropic 529, HTTP 503)."""

    kind = "Overloaded"


class Timeout(Error):
    """A wait ran out: ``phase`` (``connect``, ``first_byte``, ``idle``, ``total``),
    ``after`` (seconds)."""

    kind = "Timeout"


class Transport(Error):
    """The connection failed or broke."""

    kind = "Transport"


class AuthError(Error):
    """The key was refused (HTTP 401 or 403)."""

    kind = "Auth"


class BadRequest(Error):
    """The provider refused the request as malformed (HTTP 400, 404, 413, 422)."""

    kind = "BadRequest"


class ProviderError(Error):
    """Any other provider error."""

    kind = "Provider"


class Unsupported(Error):
    """The backend cannot do what was asked."""

    kind = "Unsupported"


class BudgetExceeded(Error):
    """The run's budget is spent and the call was not made: ``limit``, ``max``,
    ``spent``, ``in_flight``."""

    kind = "BudgetExceeded"


class ReplayExhausted(Error):
    """A replay has no recorded reply for a request: ``role``, ``digest``, ``nearest``
    (the nearest recorded prompt of that role, its call number and a short diff)."""

    kind = "ReplayExhausted"


class Cancelled(Error):
    """The call was cancelled: ``during``."""

    kind = "Cancelled"


class ReplyTooLarge(Error):
    """The provider's answer passed a size bound: ``bound`` (the setting that raises it,
    ``max_reply_bytes``, ``max_stream_bytes`` or ``max_event_bytes``) and its ``limit``
    in bytes. Not retried."""

    kind = "ReplyTooLarge"


_BY_KIND = {
    cls.kind: cls
    for cls in [
        UnknownBackend,
        NotAReference,
        ConfigError,
        MissingKey,
        RateLimited,
        ProviderQuotaExhausted,
        ProviderReplyMalformed,
        ContextOverflow,
        Overloaded,
        Timeout,
        Transport,
        AuthError,
        BadRequest,
        ProviderError,
        Unsupported,
        BudgetExceeded,
        ReplayExhausted,
        Cancelled,
        ReplyTooLarge,
    ]
}


def _from_kind(kind: str, message: str, details: Dict[str, Any]) -> Error:
    """The exception for a library error (called by the native module)."""
    return _BY_KIND.get(kind, Error)(message, kind=kind, **details)
