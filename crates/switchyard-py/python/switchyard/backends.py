"""The registry as data: what ``switchyard backends list|show|check --json`` print.

    >>> import switchyard
    >>> info = switchyard.backends.show("vllm/Qwen/Qwen3-8B")
    >>> info.model, info.endpoints.chat.url
    ('Qwen/Qwen3-8B', 'http://127.0.0.1:8000/v1/chat/completions')
    >>> info.litellm          # the hand-off to a program that calls litellm
    {'model': 'hosted_vllm/Qwen/Qwen3-8B', 'api_base': 'http://127.0.0.1:8000/v1', 'api_key_env': 'VLLM_API_KEY'}

The values are dicts whose keys also read as attributes (``info["model"]`` or
``info.model``). Every function loads the registry as the CLI does: the built-ins, the
user's backends file, the environment, then ``config`` (a run config, a path or a dict:
its ``backends:``) and ``overrides`` (``["backends.vllm.base_url=http://gpu:8000/v1"]``).
"""

from __future__ import annotations

import builtins
import os
from typing import Any, Mapping, Optional, Sequence, Union

from . import _switchyard
from ._data import Data
from ._data import wrap as _wrap

__all__ = ["list", "show", "check", "Data"]

PathLike = Union[str, "os.PathLike[str]"]
Config = Union[PathLike, Mapping[str, Any]]


def _config(config: Optional[Config]) -> Union[str, Mapping[str, Any], None]:
    if config is None or isinstance(config, dict):
        return config
    return os.fspath(config)


def list(  # noqa: A001 - the name the CLI uses
    config: Optional[Config] = None, overrides: Optional[Sequence[str]] = None
) -> "builtins.list[Data]":
    """Every backend with every field, the layer it comes from, and ``key`` (``set``,
    ``unset`` or ``not needed``; never the value)."""
    out = _switchyard.backends_list(_config(config), builtins.list(overrides or []))
    return [_wrap(b) for b in out["backends"]]


def show(
    reference: str,
    config: Optional[Config] = None,
    overrides: Optional[Sequence[str]] = None,
) -> Data:
    """``reference`` resolved: backend, model id after aliases, each dialect's URL and
    auth, the key variable and whether it is set, price, context window, each field's
    layer, and ``litellm`` (``{model, api_base, api_key_env}``, or ``None`` when the
    backend has no LiteLLM route prefix). An unknown backend raises
    :class:`switchyard.UnknownBackend` naming the nearest one."""
    return _wrap(_switchyard.backends_show(reference, _config(config), builtins.list(overrides or [])))


def check(
    reference: str,
    config: Optional[Config] = None,
    overrides: Optional[Sequence[str]] = None,
) -> Data:
    """``reference`` checked against what its backend answers, as
    ``switchyard backends check REF --json`` prints it: ``backend``, ``model`` (after
    aliases), ``base_url``, ``api_key_env`` (the variable's name, ``None`` when no key is
    sent) and ``key`` (``set``, ``unset`` or ``not needed``); ``models`` (``GET /models``:
    ``url``, ``ms``, ``ids``, ``listed``, ``error``); ``dialects``, one entry per request
    tried or dialect not claimed (``dialect``, ``label``, ``namespace_tool``, ``claimed``,
    ``working``, ``ms``, ``reply``, ``error``, ``error_kind``); and ``ok``, true when every
    claimed dialect answered.

    This sends requests: one short call per claimed dialect (the GIL is released while
    they wait). A claim that fails is reported in the data, not raised; an unknown
    backend raises :class:`switchyard.UnknownBackend`, a CLI agent or replay backend
    (nothing to check over HTTP) :class:`switchyard.Unsupported`."""
    return _wrap(
        _switchyard.backends_check(reference, _config(config), builtins.list(overrides or []))
    )
