"""What pgpour's functions return: records whose attributes are the fields of
the CLI's ``--json`` output, each with ``to_dict()``."""

from __future__ import annotations

from typing import Any, Dict, List, Optional


class Record:
    """Fields as attributes, from the engine's JSON; ``to_dict()`` gives them back."""

    def __init__(self, fields: Dict[str, Any]) -> None:
        self._fields = dict(fields)

    def __getattr__(self, name: str) -> Any:
        fields = self.__dict__.get("_fields", {})
        if name in fields:
            return fields[name]
        raise AttributeError(f"{type(self).__name__} has no field {name!r}")

    def __dir__(self) -> List[str]:
        return sorted(set(super().__dir__()) | set(self._fields))

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._fields == self._fields  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in list(self._fields.items())[:6])
        more = ", ..." if len(self._fields) > 6 else ""
        return f"{type(self).__name__}({shown}{more})"

    def to_dict(self) -> Dict[str, Any]:
        """The fields as a dict (a copy), as ``--json`` prints them."""
        return dict(self._fields)


class LoadResult(Record):
    """The summary of a load, as ``pgpour load --json`` prints it.

    ``rows_read == rows_loaded + rows_rejected``; rejected rows are in
    ``reject_file``, with where and why in ``reject_log``.
    """

    load_id: str
    already_done: bool
    resumed_chunks: int
    schema: Optional[str]
    table: str
    table_sql: str
    format: str
    files: int
    input_bytes: int
    bytes_loaded: int
    bytes_binary: int
    bytes_direct: int
    ended_at_marker: List[Dict[str, Any]]
    rows_read: int
    rows_loaded: int
    rows_rejected: int
    rows_inserted: int
    rows_updated: int
    rows_skipped: int
    rows_filtered: int
    reject_file: Optional[str]
    reject_log: Optional[str]
    seconds: float
    rows_per_second: float
    mb_per_second: float
    workers: int
    interrupted: bool
    phases: List[Dict[str, Any]]


class LoadStatus(Record):
    """A load in the journal, as ``pgpour status --json`` lists it."""

    load_id: str
    target: str
    schema: Optional[str]
    table: str
    state: str
    live: bool
    started_at: str
    finished_at: Optional[str]
    seconds: Optional[float]
    runs: int
    chunks: int
    rows_loaded: int
    rows_rejected: int
    rows_updated: int
    rows_skipped: int
    bytes_committed: int
    inputs: Any
    options: Optional[Dict[str, Any]]
    pending: List[str]
    prepared: List[str]


class Forgotten(Record):
    """What ``pgpour.forget`` did to one load: ``forgotten`` and what it
    ``restored`` first (indexes...) and ``settled`` (its prepared
    transactions: each a dict of ``node``, ``gid`` and ``how``, one of
    "committed", "rolled back", "rolled back to load again"), or why it
    was ``left``."""

    load_id: str
    forgotten: bool
    restored: List[str]
    settled: List[Dict[str, str]]
    left: Optional[str]


class Explain(Record):
    """What a load would do, as ``pgpour load --explain --json`` prints it;
    with ``create=True``, only ``create_table``."""

    create_table: Optional[str]


class Sniffed(Record):
    """What a delimited file is, as ``pgpour sniff --json`` prints it:
    ``sniffed`` (encoding, dialect, header, null, columns with evidence),
    ``create_table``, and ``load_options``: the keywords of ``pgpour.load``
    that load the file as sniffed."""

    sniffed: Dict[str, Any]
    create_table: str
    load_options: Dict[str, Any]


class Progress(Record):
    """A progress event: the engine's counters at one moment.

    ``phase`` is ``"start"``, ``"load"``, ``"final commit"`` or ``"restore"``
    (``phase_detail`` names what is rebuilt); ``done`` is true for the last
    event of a call.
    """

    phase: str
    phase_detail: Optional[str]
    seconds: float
    input_bytes_total: int
    input_bytes_read: int
    rows_loaded: int
    rows_rejected: int
    bytes_loaded: int
    rows_filtered: int
    rows_updated: int
    rows_skipped: int
    done: bool
