"""Load files into PostgreSQL through pgpour's engine: parallel COPY, exactly
once, with a reject file; the same rows as PostgreSQL's own COPY.

>>> import pgpour
>>> result = pgpour.load("votes.csv", "votes", db="postgres://me@db/sales", header=True)
>>> result.rows_loaded
1000000

The keywords are those of ``pgpour load``, in snake case, with the same
meanings: ``pgpour load votes.csv --table votes --max-errors all`` is
``pgpour.load("votes.csv", "votes", max_errors="all")``. Without ``db``,
libpq's environment applies (PGHOST, PGDATABASE, ~/.pgpass...), as for the
CLI. The guide is ``docs/python.md`` in pgpour's repository.
"""

from __future__ import annotations

import io
import os
import sys
from datetime import timedelta
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _native
from ._progress import Bar
from .errors import (
    ConnectionError,
    Error,
    Interrupted,
    JournalError,
    LoadError,
    OptionsError,
    RowError,
)
from .results import Explain, Forgotten, LoadResult, LoadStatus, Progress, Sniffed

__all__ = [
    "load",
    "explain",
    "resume",
    "status",
    "forget",
    "sniff",
    "Error",
    "OptionsError",
    "ConnectionError",
    "LoadError",
    "RowError",
    "JournalError",
    "Interrupted",
    "LoadResult",
    "LoadStatus",
    "Forgotten",
    "Explain",
    "Sniffed",
    "Progress",
]

PathLike = Union[str, "os.PathLike[str]"]
Source = Union[PathLike, Sequence[Union[PathLike, Any]], Any]
"""A path, a glob, a list of them, a binary file object, or an in-memory Arrow
source (anything with ``__arrow_c_stream__`` or ``__arrow_c_array__``)."""
OnProgress = Union[bool, Callable[[Progress], Any], None]


def load(
    source: Source,
    table: str,
    *,
    db: Optional[str] = None,
    progress: OnProgress = None,
    columns: Union[str, Sequence[str], None] = None,
    columns_from_header: Optional[bool] = None,
    format: Optional[str] = None,
    header: Union[bool, str, None] = None,
    delimiter: Optional[str] = None,
    null: Optional[str] = None,
    quote: Optional[str] = None,
    escape: Optional[str] = None,
    encoding: Optional[str] = None,
    force_null: Union[str, Sequence[str], None] = None,
    force_not_null: Union[str, Sequence[str], None] = None,
    skip_lines: Optional[int] = None,
    where: Optional[str] = None,
    limit: Optional[int] = None,
    create: Optional[bool] = None,
    if_not_exists: Optional[bool] = None,
    types: Union[str, Mapping[str, str], None] = None,
    create_types: Optional[str] = None,
    workers: Optional[int] = None,
    truncate: Optional[bool] = None,
    max_errors: Union[int, str, None] = None,
    reject_file: Optional[PathLike] = None,
    replace_rejects: Optional[bool] = None,
    max_record_size: Union[int, str, None] = None,
    chunk_size: Union[int, str, None] = None,
    atomic: Optional[bool] = None,
    no_journal: Optional[bool] = None,
    journal_schema: Optional[str] = None,
    keep_indexes: Optional[bool] = None,
    keep_sequences: Optional[bool] = None,
    keep_foreign_keys: Optional[bool] = None,
    wire_format: Optional[str] = None,
    citus_route: Optional[str] = None,
    on_conflict: Optional[str] = None,
    conflict_key: Union[str, Sequence[str], None] = None,
    load_id: Optional[str] = None,
) -> LoadResult:
    """Load ``source`` into ``table``, as ``pgpour load SOURCE --table TABLE`` does.

    ``source``: a path (``str`` or ``os.PathLike``; gzip and zstd are read by
    their first bytes), a quoted glob (``"parts/*.csv"``, expanded in sorted
    order), a list of them, or a binary file object (``open(p, "rb")``,
    ``io.BytesIO``, a pipe's stdout), read as the CLI reads stdin. ``"-"`` is
    ``sys.stdin``. Or an in-memory Arrow source: anything with
    ``__arrow_c_stream__`` or ``__arrow_c_array__`` (a pyarrow Table,
    RecordBatch or RecordBatchReader, a polars or pandas DataFrame, a DuckDB
    relation), its columns matched to the table's by name; a bad value's
    position is its row's index (``RowError.row``). Its data is not kept: a
    load of one cannot be resumed by a later call. The keywords of text
    input (``delimiter``, ``header``, ``create``...) do not apply to it.

    The keywords are ``pgpour load``'s options in snake case, with the same
    meanings and defaults; each left at ``None`` is not given. Sizes take an
    int (bytes) or the CLI's spellings (``"64MiB"``); ``max_errors`` an int or
    ``"all"``; column lists a list or ``"a,b"``; ``header`` ``True``,
    ``False`` or ``"match"``; ``types`` a dict ``{"zip": "text"}`` or
    ``"zip=text"``.

    ``db``: what ``--db`` takes (a ``postgres://`` URL or a ``key=value``
    conninfo string); without it, libpq's environment applies.

    ``progress``: ``True`` draws a line on stderr when it is a terminal; a
    callable receives a :class:`Progress` about five times a second, and a
    last one with ``done`` true.

    The GIL is released while the load runs. Ctrl-C stops it at a chunk
    boundary and raises :class:`Interrupted` (a ``KeyboardInterrupt``);
    ``pgpour.resume(error.load_id)`` continues it.

    Returns a :class:`LoadResult`; rows rejected (with ``max_errors``) are in
    ``result.reject_file``. Raises an :class:`Error`: :class:`OptionsError`,
    :class:`ConnectionError`, :class:`RowError` for a bad row (``file``,
    ``line``, or for Arrow data ``row``, ``batch`` and ``row_in_batch``;
    ``column``, ``value``, ``sqlstate``), :class:`LoadError`,
    :class:`JournalError`.
    """
    options = _given(locals(), ("source", "table", "db", "progress"))
    inputs, stream, arrow = _source(source)
    return _native.load(table, inputs, stream, arrow, db, options, _on_progress(progress))


def explain(source: Source, table: str, *, db: Optional[str] = None, **options: Any) -> Explain:
    """What ``pgpour.load(source, table, **options)`` would do (the table,
    the COPY statement, workers, commits, indexes rebuilt...), loading
    nothing: ``pgpour load ... --explain``. Takes :func:`load`'s keywords."""
    options = {k: v for k, v in options.items() if v is not None}
    inputs, stream, arrow = _source(source)
    return _native.explain(table, inputs, stream, arrow, db, options)


def resume(
    load_id: str,
    *,
    db: Optional[str] = None,
    workers: Optional[int] = None,
    max_errors: Union[int, str, None] = None,
    progress: OnProgress = None,
) -> LoadResult:
    """Continue load ``load_id`` where its committed chunks end, exactly once
    (``pgpour resume``). Its options and inputs are the journal's; an input
    that changed is refused. ``workers`` and ``max_errors`` may differ from
    the first run's (``max_errors`` counts the rows earlier runs rejected).
    Interrupts as :func:`load` does."""
    return _native.resume(load_id, db, workers, max_errors, _on_progress(progress))


Duration = Union[str, timedelta, float, int]
"""``"30m"``, ``"2h"``, ``"1h30m"`` as the CLI takes them, a ``timedelta``, or seconds."""


def status(
    load_id: Optional[str] = None,
    *,
    db: Optional[str] = None,
    state: Union[str, Sequence[str], None] = None,
    table: Optional[str] = None,
    since: Optional[Duration] = None,
    older_than: Optional[Duration] = None,
) -> List[LoadStatus]:
    """The loads in the journal of ``db``, newest first (``pgpour status``):
    all, or ``load_id`` alone, or those in a ``state`` (``"failed"``,
    ``["failed", "stopped"]``), into a ``table``, active ``since`` a while
    ago, or ended more than ``older_than`` ago. Empty when the database has
    no journal."""
    states = [state] if isinstance(state, str) else list(state or [])
    return _native.status(db, load_id, states, table, _seconds(since), _seconds(older_than))


def forget(
    *load_ids: str,
    db: Optional[str] = None,
    failed: bool = False,
    older_than: Optional[Duration] = None,
) -> List[Forgotten]:
    """Drop loads' journal entries after putting back what each changed in
    its table (indexes it dropped...); the rows stay (``pgpour forget``). By
    id, or every ``failed`` (or stopped) load, or every one that ended more
    than ``older_than`` ago; a load a live run holds is left, and said so.
    An id the journal does not have raises :class:`JournalError`, after the
    other ids are forgotten."""
    if load_ids and (failed or older_than is not None):
        raise OptionsError("forget takes load ids, or failed/older_than, not both")
    if not load_ids and not failed and older_than is None:
        raise OptionsError("forget needs load ids, failed=True or older_than")
    return _native.forget(list(load_ids), db, failed, _seconds(older_than))


def sniff(
    path: PathLike,
    *,
    table: Optional[str] = None,
    types: Union[str, Mapping[str, str], None] = None,
    create_types: Optional[str] = None,
    skip_lines: Optional[int] = None,
    format: Optional[str] = None,
    header: Union[bool, str, None] = None,
    delimiter: Optional[str] = None,
    null: Optional[str] = None,
    quote: Optional[str] = None,
    escape: Optional[str] = None,
    encoding: Optional[str] = None,
) -> Sniffed:
    """What a delimited file is, from a sample (``pgpour sniff``): its
    encoding, dialect, header, NULL marker and a type per column, with the
    evidence; the ``CREATE TABLE`` for ``table`` (default: from the file's
    name); and ``load_options``, the keywords that load it as sniffed. The
    format options given are taken as they are."""
    options = _given(locals(), ("path", "table"))
    return _native.sniff(os.fsdecode(os.fspath(path)), table, options)


def _given(arguments: Dict[str, Any], not_options: Tuple[str, ...]) -> Dict[str, Any]:
    return {k: v for k, v in arguments.items() if v is not None and k not in not_options}


def _is_arrow(value: Any) -> bool:
    return hasattr(value, "__arrow_c_stream__") or hasattr(value, "__arrow_c_array__")


def _source(source: Source) -> Tuple[List[str], Any, Any]:
    """The inputs as the engine takes them (paths, ``-``), the file object
    read for ``-``, and an Arrow object."""
    if _is_arrow(source):
        return [], None, source
    items = list(source) if isinstance(source, (list, tuple)) else [source]
    inputs: List[str] = []
    stream = None
    for item in items:
        if isinstance(item, (str, bytes, os.PathLike)):
            path = os.fsdecode(os.fspath(item))
            if path != "-":
                inputs.append(path)
                continue
            item = sys.stdin.buffer
        if _is_arrow(item):
            raise TypeError("an Arrow source is loaded on its own, not in a list")
        if not callable(getattr(item, "read", None)):
            raise TypeError(
                f"cannot load a {type(item).__name__}: give a path, a glob, a list of "
                "them, a binary file object or an Arrow object"
            )
        if isinstance(item, io.TextIOBase):
            raise TypeError("a file object to load must be binary: open(path, 'rb')")
        if stream is not None:
            raise OptionsError("a load reads one file object at most, as the CLI reads stdin once")
        stream = item
        inputs.append("-")
    return inputs, stream, None


def _on_progress(progress: OnProgress) -> Optional[Callable[[Dict[str, Any]], Any]]:
    if progress is None or progress is False:
        return None
    show = Bar() if progress is True else progress
    if not callable(show):
        raise TypeError("progress must be True, False or a callable")
    return lambda fields: show(Progress(fields))


def _seconds(value: Optional[Duration]) -> Union[str, float, None]:
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, bool):
        raise TypeError("a duration is a string such as '2h', a timedelta or seconds")
    if isinstance(value, int):
        return float(value)
    return value
