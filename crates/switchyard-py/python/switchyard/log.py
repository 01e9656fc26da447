"""A recorded run read back: what ``switchyard log stats|show|export`` read::

    import switchyard

    log = switchyard.log.open("runs/campaign")    # or runs/campaign/llm_log
    len(log), log.stats().by_role.planner.calls    # (12, 4)
    first = log.record(1)                          # the record as the log holds it
    first.role, first.usage.output, first.reply["content"][0]["text"]
    print(log.show(1))                             # as `switchyard log show` prints it
    log.raw(1)                                     # the reply's bytes as received
    for record in log: ...

Records are the call log's own JSON (format 2, ``docs/recording.md``) as dicts whose
keys read as attributes too; ``stats()`` gives the numbers ``switchyard log stats
--json`` prints, by the same code. Every read looks at the log as it is now, so a log
still being written shows the calls finished so far.
"""

from __future__ import annotations

import os
from typing import Iterator, List, Union

from . import _switchyard
from ._data import Data
from ._data import wrap as _wrap

__all__ = ["open", "Log"]

PathLike = Union[str, "os.PathLike[str]"]


class Log:
    """A run directory's call log (the directory a run config's ``log:`` names)."""

    def __init__(self, run_dir: PathLike) -> None:
        #: The run directory (given its ``llm_log/`` folder, the folder holding it).
        self.dir: str = os.fspath(_switchyard.log_open(os.fspath(run_dir)))

    def records(self) -> List[Data]:
        """Every record, in number order (a call's number is the order calls finished)."""
        return [_wrap(r) for r in _switchyard.log_records(self.dir)]

    def __iter__(self) -> Iterator[Data]:
        return iter(self.records())

    def __len__(self) -> int:
        return len(_switchyard.log_records(self.dir))

    def record(self, number: int) -> Data:
        """Record ``number`` (from 1); a number the log lacks raises
        :class:`switchyard.ConfigError` saying which it holds."""
        return _wrap(_switchyard.log_record(self.dir, number))

    def show(self, number: int) -> str:
        """Call ``number`` as ``switchyard log show RUN_DIR NUMBER`` prints it: role,
        model, request, reply, usage, cost, attempts, error."""
        return _switchyard.log_show(self.dir, number)

    def raw(self, number: int) -> bytes:
        """The reply bytes of call ``number`` exactly as received (the whole stream for a
        streamed call, the error body for a provider's error)."""
        return _switchyard.log_raw(self.dir, number)

    def stats(self) -> Data:
        """Totals as ``switchyard log stats RUN_DIR --json`` prints them: ``total``,
        ``by_role``, ``by_model`` (and ``by_key`` for a gateway's store), each with
        ``calls``, ``errors``, the token counts, ``cost_usd`` (``None`` when no call is
        priced), ``calls_with_unknown_cost`` and ``cost_is_lower_bound``; and
        ``calls_past_a_size_bound`` (ended by ``ReplyTooLarge``) and
        ``calls_with_truncated_raw`` (records that kept only the first bytes of their
        reply)."""
        return _wrap(_switchyard.log_stats(self.dir))

    @property
    def run(self) -> Data:
        """The run's ``run.yaml``: its roles, the backends they used (every field with its
        layer), its settings."""
        return _wrap(_switchyard.log_run_file(self.dir))

    def __repr__(self) -> str:
        return f"switchyard.log.Log({self.dir!r})"


def open(run_dir: PathLike) -> Log:  # noqa: A001 - the name reads as `switchyard.log.open`
    """The call log of ``run_dir`` (a run directory, or its ``llm_log/`` folder). A path
    that is neither raises ``FileNotFoundError`` saying what was expected."""
    return Log(run_dir)
