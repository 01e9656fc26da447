"""Type stubs of the native module (re-exported by ``switchyard``)."""

from os import PathLike
from typing import Any, AsyncIterator, Dict, Iterator, List, Mapping, Optional, Sequence, Union

Message = Union[Dict[str, Any], "Reply"]
Prompt = Union[str, Sequence[Message]]
StrPath = Union[str, "PathLike[str]"]

def llm(
    reference: Optional[str] = None,
    *,
    model: Optional[str] = None,
    role: Optional[str] = None,
    overrides: Optional[Sequence[str]] = None,
    config: Union[StrPath, Mapping[str, Any], None] = None,
    **settings: Any,
) -> Llm:
    """A run of one call, opened as ``switchyard ask`` opens it (the library's one
    assembly): a handle for ``reference`` (``<backend>/<model id>``, a route, or a
    backend's name alone: ``"vertex"``) or ``model=``; else the role's model, else
    ``SWITCHYARD_MODEL`` (or ``config``'s ``model:``), else ``SWITCHYARD_BACKEND``'s
    default model. ``config`` is a run config (a path or a dict: its ``backends:``,
    ``model:``, ``retry:``, ``timeouts:``, ``cache:``, ``budget:``, ``log:``), ``role`` a
    role of it to call as (``ask --role``), ``overrides`` as on the command line.
    ``settings`` are role settings (``max_tokens``, ``temperature``, ``reasoning_effort``,
    ``retry`` — ``False`` never retries —, ``timeout_seconds``, ``extra_body``…), laid
    over the role's and refused with a run config's message when the backend does not
    take them."""

def check(
    config: Union[StrPath, Mapping[str, Any]],
    overrides: Optional[Sequence[str]] = None,
    env_file: Optional[StrPath] = None,
) -> Dict[str, Any]:
    """A run config's (a path or a dict) check report as data (``ok``, ``roles``,
    ``problems``)."""

def trace_shutdown(timeout_seconds: float = 5.0) -> bool:
    """Sends the queued OpenTelemetry spans and stops the export (registered with
    ``atexit``); ``True`` when done within the timeout."""

def cli_main(argv: List[str]) -> int:
    """Runs the ``switchyard`` command line on ``argv``; its exit code."""

class Llm:
    """A handle on one model, safe to share between threads and asyncio tasks."""

    @property
    def label(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def backend(self) -> str: ...
    @property
    def role(self) -> Optional[str]: ...
    @property
    def context_window(self) -> Optional[int]: ...
    @property
    def price_known(self) -> bool: ...
    def complete(
        self,
        prompt: Prompt,
        *,
        system: Optional[str] = None,
        tools: Optional[Sequence[Dict[str, Any]]] = None,
        tool_choice: Optional[str] = None,
        max_tokens: Optional[int] = None,
        temperature: Optional[float] = None,
        top_p: Optional[float] = None,
        stop: Union[str, Sequence[str], None] = None,
        reasoning_effort: Optional[str] = None,
        thinking_budget: Optional[int] = None,
    ) -> Reply:
        """Sends the prompt and waits for the whole reply (the GIL released)."""
    async def acomplete(
        self,
        prompt: Prompt,
        *,
        system: Optional[str] = None,
        tools: Optional[Sequence[Dict[str, Any]]] = None,
        tool_choice: Optional[str] = None,
        max_tokens: Optional[int] = None,
        temperature: Optional[float] = None,
        top_p: Optional[float] = None,
        stop: Union[str, Sequence[str], None] = None,
        reasoning_effort: Optional[str] = None,
        thinking_budget: Optional[int] = None,
    ) -> Reply:
        """``complete`` for asyncio: a coroutine, sent when awaited."""
    def stream(
        self,
        prompt: Prompt,
        *,
        system: Optional[str] = None,
        tools: Optional[Sequence[Dict[str, Any]]] = None,
        tool_choice: Optional[str] = None,
        max_tokens: Optional[int] = None,
        temperature: Optional[float] = None,
        top_p: Optional[float] = None,
        stop: Union[str, Sequence[str], None] = None,
        reasoning_effort: Optional[str] = None,
        thinking_budget: Optional[int] = None,
    ) -> Stream:
        """Streams the reply; failures before the first output raise here."""
    def astream(
        self,
        prompt: Prompt,
        *,
        system: Optional[str] = None,
        tools: Optional[Sequence[Dict[str, Any]]] = None,
        tool_choice: Optional[str] = None,
        max_tokens: Optional[int] = None,
        temperature: Optional[float] = None,
        top_p: Optional[float] = None,
        stop: Union[str, Sequence[str], None] = None,
        reasoning_effort: Optional[str] = None,
        thinking_budget: Optional[int] = None,
    ) -> Stream:
        """``stream`` for ``async for``; the call starts at the first event."""

class Usage:
    """Tokens: ``input`` includes ``cached_input`` and ``cache_write``; ``output``
    includes ``reasoning``."""

    @property
    def input(self) -> int: ...
    @property
    def cached_input(self) -> int: ...
    @property
    def cache_write(self) -> int: ...
    @property
    def output(self) -> int: ...
    @property
    def reasoning(self) -> int: ...
    @property
    def uncached_input(self) -> int: ...
    @property
    def total(self) -> int: ...
    def to_dict(self) -> Dict[str, int]: ...

class Reply:
    """A model's answer."""

    @property
    def text(self) -> str: ...
    @property
    def thinking(self) -> str: ...
    @property
    def content(self) -> List[Dict[str, Any]]: ...
    @property
    def tool_calls(self) -> List[Dict[str, Any]]: ...
    @property
    def finish(self) -> str: ...
    @property
    def finish_raw(self) -> Optional[str]: ...
    @property
    def usage(self) -> Optional[Usage]: ...
    @property
    def cost_usd(self) -> Optional[float]: ...
    @property
    def model(self) -> Optional[str]: ...
    @property
    def id(self) -> Optional[str]: ...
    @property
    def raw(self) -> bytes: ...
    @property
    def attempts(self) -> List[Dict[str, Any]]: ...
    def to_message(self) -> Dict[str, Any]: ...
    def to_dict(self) -> Dict[str, Any]: ...

class Event:
    """One stream event; its other fields (``reason``, ``usage``…) are attributes too."""

    @property
    def type(self) -> str: ...
    @property
    def text(self) -> Optional[str]: ...
    @property
    def part(self) -> Optional[int]: ...
    def __getattr__(self, name: str) -> Any: ...
    def __getitem__(self, name: str) -> Any: ...
    def to_dict(self) -> Dict[str, Any]: ...

class Stream(Iterator[Event], AsyncIterator[Event]):
    """A streamed reply's events; ``reply`` is the reply assembled so far."""

    def __iter__(self) -> Stream: ...
    def __next__(self) -> Event: ...
    def __aiter__(self) -> Stream: ...
    async def __anext__(self) -> Event: ...
    async def _next_event(self) -> Event:
        """The coroutine ``__anext__`` returns (private)."""
    @property
    def reply(self) -> Optional[Reply]: ...
    def close(self) -> None: ...
    def __enter__(self) -> Stream: ...
    def __exit__(self, *exc: Any) -> bool: ...

class Request:
    """What a Python backend's ``complete`` receives."""

    @property
    def model(self) -> str: ...
    @property
    def role(self) -> Optional[str]: ...
    @property
    def messages(self) -> List[Dict[str, Any]]: ...
    @property
    def system(self) -> Optional[str]: ...
    @property
    def prompt(self) -> str: ...
    @property
    def tools(self) -> List[Dict[str, Any]]: ...
    @property
    def max_tokens(self) -> Optional[int]: ...
    @property
    def temperature(self) -> Optional[float]: ...
    def to_dict(self) -> Dict[str, Any]: ...

class Run:
    """An opened run config: a handle per role, one budget, the call log."""

    @staticmethod
    def open(
        config: Union[StrPath, Mapping[str, Any]],
        overrides: Optional[Sequence[str]] = None,
        env_file: Optional[StrPath] = None,
        backends: Optional[Mapping[str, Any]] = None,
        resume: bool = False,
    ) -> Run: ...
    def llm(self, role: str) -> Llm: ...
    def check(self) -> Dict[str, Any]: ...
    @property
    def dir(self) -> Optional[str]: ...
    @property
    def roles(self) -> List[str]: ...
    def close(self) -> None: ...
    def __enter__(self) -> Run: ...
    def __exit__(self, *exc: Any) -> bool: ...

class Mock:
    """The mock provider running in this process."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None: ...
    @property
    def url(self) -> str: ...
    @property
    def base_url(self) -> str: ...
    @property
    def received(self) -> int: ...
    def requests(self) -> List[Dict[str, Any]]:
        """The requests received, oldest first: ``{"method", "path", "json"}``."""
    def clear(self) -> None: ...
    def stop(self) -> None: ...

def backends_list(
    config: Union[str, Mapping[str, Any], None] = None, overrides: Optional[Sequence[str]] = None
) -> Dict[str, Any]:
    """``switchyard backends list --json`` as data (see ``switchyard.backends.list``)."""

def backends_show(
    reference: str,
    config: Union[str, Mapping[str, Any], None] = None,
    overrides: Optional[Sequence[str]] = None,
) -> Dict[str, Any]:
    """``switchyard backends show REF --json`` as data (see ``switchyard.backends.show``)."""

def backends_check(
    reference: str,
    config: Union[str, Mapping[str, Any], None] = None,
    overrides: Optional[Sequence[str]] = None,
) -> Dict[str, Any]:
    """``switchyard backends check REF --json`` as data (see ``switchyard.backends.check``):
    sends one short request per claimed dialect, the GIL released while they wait."""

def log_open(path: StrPath) -> "PathLike[str]":
    """The run directory ``path`` names (itself, or the parent of its ``llm_log/``);
    ``FileNotFoundError`` when it holds neither ``run.yaml`` nor ``llm_log/``."""

def log_records(dir: StrPath) -> List[Dict[str, Any]]:
    """Every record of the run in ``dir``, in number order, as the call log's JSON."""

def log_record(dir: StrPath, number: int) -> Dict[str, Any]:
    """Record ``number`` of the run in ``dir`` (``ConfigError`` when it lacks it)."""

def log_stats(dir: StrPath) -> Dict[str, Any]:
    """The run's totals, as ``switchyard log stats DIR --json`` prints them."""

def log_show(dir: StrPath, number: int) -> str:
    """Call ``number`` as ``switchyard log show DIR NUMBER`` prints it."""

def log_raw(dir: StrPath, number: int) -> bytes:
    """The reply bytes of call ``number`` exactly as received."""

def log_run_file(dir: StrPath) -> Dict[str, Any]:
    """The run's ``run.yaml`` as data."""

def _bench_rust_complete(
    llm: Llm, prompt: str, n: int, max_tokens: Optional[int] = None
) -> List[int]:
    """The Rust side of ``bench/overhead.py`` (not a stable interface): ``llm``'s own
    ``complete`` called ``n`` times from Rust with ``prompt`` (and ``max_tokens``), one
    after another on the module's runtime with the GIL released; each call's duration in
    nanoseconds, the request built inside the timed span. The first failure raises."""

class Gateway:
    """The gateway running in this process (see ``switchyard.serve``)."""

    def __init__(
        self,
        config: Optional[StrPath] = None,
        data_dir: Optional[StrPath] = None,
        host: str = "127.0.0.1",
        port: int = 0,
        overrides: Optional[Sequence[str]] = None,
        mock: bool = True,
        allow_public_without_keys: bool = False,
    ) -> None: ...
    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (Anthropic and Gemini base URL)."""
    @property
    def base_url(self) -> str:
        """``url`` + ``/v1`` (an OpenAI client's base URL)."""
    @property
    def data_dir(self) -> Optional["PathLike[str]"]:
        """Where calls are recorded, if anywhere."""
    def stop(self) -> None:
        """Drains calls in flight and stops (twice: nothing)."""
    def __enter__(self) -> "Gateway": ...
    def __exit__(self, *exc: Any) -> bool: ...
