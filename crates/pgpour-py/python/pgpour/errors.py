"""The errors pgpour raises.

Every error is a :class:`pgpour.Error`. Its message says what happened and,
where there is one, the way on, in this package's terms (keyword names,
``pgpour.resume(...)``). The data of the error are attributes: a bad row's
``file``, ``line`` (or ``row``), ``column``, ``value`` and ``sqlstate``; the
``load_id`` of the load it concerns; and ``result``, what the load had
committed before the error (a :class:`pgpour.LoadResult`), when a load ran.
"""

from __future__ import annotations

import builtins
from typing import Any, Dict, Optional


class _Told:
    """What pgpour's exceptions share: the message, and data as attributes."""

    message: str

    def _tell(self, message: str, details: Dict[str, Any]) -> None:
        self.message = message
        self.load_id = None
        self.result = None
        for name, value in details.items():
            setattr(self, name, value)

    def __str__(self) -> str:
        return self.message


class Error(_Told, Exception):
    """Base class of pgpour's errors."""

    message: str
    """The whole message, also ``str(error)``."""
    sqlstate: Optional[str]
    """The SQLSTATE the server sent, when the error came from the server."""
    load_id: Optional[str]
    """The load it concerns, when there is one (``pgpour.resume(load_id)``)."""
    result: Optional[Any]
    """What the load had done before the error: a :class:`pgpour.LoadResult`."""

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.sqlstate = None
        self._tell(message, details)


class OptionsError(Error, ValueError):
    """Options that cannot work, alone or together; found before any data moved."""


class ConnectionError(Error, builtins.ConnectionError):
    """The server cannot be reached, or refused the connection (also a
    builtin :class:`ConnectionError`)."""


class LoadError(Error):
    """A load that stopped: the table, the input, the server refused it."""


class RowError(LoadError):
    """A row that cannot be loaded, and more of them than ``max_errors`` allows."""

    file: Optional[str]
    """The input the row is in; ``None`` for an in-memory source."""
    line: Optional[int]
    """The row's first physical line in its file (1-based); for a Parquet or
    Arrow file its 1-based index; ``None`` for an in-memory source."""
    row: Optional[int]
    """The row's index (from 0) in an in-memory source, or in a Parquet or
    Arrow file; ``None`` for delimited text."""
    batch: Optional[int]
    """The index (from 0) of the record batch (a Parquet file's row group)
    the row is in; ``None`` for delimited text."""
    row_in_batch: Optional[int]
    """The row's index (from 0) within its batch."""
    column: Optional[str]
    """The column the server refused the value of, when it says."""
    value: Optional[str]
    """The value refused (shortened), when known."""
    byte: Optional[int]
    """The offset of the row's first byte in its (decompressed) input."""

    def __init__(self, message: str, **details: Any) -> None:
        self.file = None
        self.line = None
        self.row = None
        self.batch = None
        self.row_in_batch = None
        self.column = None
        self.value = None
        self.byte = None
        super().__init__(message, **details)


class JournalError(Error):
    """The load journal in the database: no such load, a load running
    elsewhere, a journal that cannot be trusted."""


class Interrupted(_Told, KeyboardInterrupt):
    """Ctrl-C (or another exception from a signal handler) stopped a call.

    A load stops at a chunk boundary: what committed is recorded, and
    ``pgpour.resume(error.load_id)`` continues it. A second Ctrl-C returns
    at once; the load then stops in the background at its next chunk
    boundary. It is a :class:`KeyboardInterrupt`, so that a program stops
    as it would without pgpour.
    """

    message: str
    load_id: Optional[str]
    result: Optional[Any]
    """What the load had done when it stopped: a :class:`pgpour.LoadResult`."""

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self._tell(message, details)
