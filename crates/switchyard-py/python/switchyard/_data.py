"""Dicts whose keys read as attributes too: the form ``switchyard.backends`` and
``switchyard.log`` give the CLI's JSON values in."""

from __future__ import annotations

from typing import Any


class Data(dict):
    """A dict whose keys read as attributes too; nested dicts are ``Data`` as well."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def wrap(value: Any) -> Any:
    """``value`` with every dict in it (at any depth, in lists too) made a :class:`Data`."""
    if isinstance(value, dict):
        return Data({k: wrap(v) for k, v in value.items()})
    if isinstance(value, list):
        return [wrap(v) for v in value]
    return value
