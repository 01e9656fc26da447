"""Switchyard for Python: the Switchyard library in-process.

A model is named by a reference, ``<backend>/<model id>`` (``openai/gpt-5.4``,
``vllm/qwen``, ``mock/echo``)::

    import switchyard

    llm = switchyard.llm("mock/echo")          # or llm() for $SWITCHYARD_MODEL
    reply = llm.complete("hello", max_tokens=100)
    print(reply.text, reply.usage.output, reply.cost_usd)

A run config gives each role its model, settings, budget and call log::

    with switchyard.Run.open("run.yaml") as run:
        plan = run.llm("planner").complete("plan the work")

Every failure raises a subclass of :class:`switchyard.Error` (see
:mod:`switchyard.errors`). See ``docs/python.md``.
"""

from __future__ import annotations

import atexit
import contextlib
import os
from typing import Iterator, Optional, Sequence, Union

PathLike = Union[str, "os.PathLike[str]"]

from . import backends, errors, log
from ._switchyard import Event, Gateway, Llm, Mock, Reply, Request, Run, Stream, Usage, check, llm
from ._switchyard import trace_shutdown as _trace_shutdown

# A run config's `otel:` (or OTEL_EXPORTER_OTLP_ENDPOINT) starts a trace export whose
# spans wait on a thread of their own: sent before the interpreter exits, as the CLI does.
atexit.register(_trace_shutdown)
from .errors import (
    AuthError,
    BadRequest,
    BudgetExceeded,
    Cancelled,
    ConfigError,
    ContextOverflow,
    Error,
    MissingKey,
    NotAReference,
    Overloaded,
    ProviderError,
    ProviderQuotaExhausted,
    ProviderReplyMalformed,
    RateLimited,
    ReplayExhausted,
    ReplyTooLarge,
    Timeout,
    Transport,
    UnknownBackend,
    Unsupported,
)

__all__ = [
    "llm",
    "check",
    "mock",
    "serve",
    "Gateway",
    "Llm",
    "Reply",
    "Usage",
    "Stream",
    "Event",
    "Run",
    "Request",
    "Mock",
    "errors",
    "backends",
    "log",
] + errors.__all__


@contextlib.contextmanager
def mock(host: str = "127.0.0.1", port: int = 0, point_backend: bool = True) -> Iterator[Mock]:
    """The mock provider in this process, on a free loopback port, for the ``with`` block.

    With ``point_backend`` (the default) the built-in ``mock`` backend is pointed at it
    for the block (``MOCK_BASE_URL``, restored after), so ``switchyard.llm("mock/echo")``
    and run configs naming ``mock/...`` reach it.
    """
    server = Mock(host, port)
    before = os.environ.get("MOCK_BASE_URL")
    if point_backend:
        os.environ["MOCK_BASE_URL"] = server.base_url
    try:
        yield server
    finally:
        if point_backend:
            if before is None:
                os.environ.pop("MOCK_BASE_URL", None)
            else:
                os.environ["MOCK_BASE_URL"] = before
        server.stop()


def serve(
    config: Optional[PathLike] = None,
    data_dir: Optional[PathLike] = None,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    overrides: Optional[Sequence[str]] = None,
    mock: bool = True,
) -> Gateway:
    """The gateway (``switchyard serve``) in this process, on a free loopback port, until
    ``stop()`` or the end of the ``with`` block::

        with switchyard.serve(data_dir="gw-data") as gateway:
            openai.OpenAI(base_url=gateway.base_url, api_key="unused")...

    ``config`` is the file ``switchyard serve --config`` takes (``models:``, ``keys:``,
    ``store:``, ``backends:``…); ``data_dir`` records every call there (it wins over
    ``store:``). With ``mock`` (the default), the built-in ``mock`` backend is answered by a
    mock provider started for the gateway unless its URL was changed (inside
    ``switchyard.mock()`` it is that mock's). A bad config raises :class:`ConfigError`.
    """
    return Gateway(
        None if config is None else os.fspath(config),
        None if data_dir is None else os.fspath(data_dir),
        host,
        port,
        list(overrides or []),
        mock,
    )
