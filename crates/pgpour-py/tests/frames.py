"""Helpers of the in-memory tests: the reference load of a frame, which is
PostgreSQL's own COPY of a CSV file written from the same Arrow data."""

from __future__ import annotations

import uuid
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc


def arrow_of(frame: Any) -> pa.Table:
    """The Arrow data `frame` exports through its C stream (or array): what
    pgpour receives from it."""
    if isinstance(frame, pa.Table):
        return frame
    if hasattr(frame, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(frame).read_all()
    return pa.Table.from_batches([pa.record_batch(frame)])


def _texts(column: pa.ChunkedArray, uuid_text: bool = False) -> list:
    """Each value as PostgreSQL's text input takes it; None for NULL.
    `uuid_text`: byte strings are uuids (the column is one)."""
    kind = column.type
    if pa.types.is_dictionary(kind):
        # Through Python values: pyarrow neither casts nor decodes a
        # dictionary of string views (polars' categoricals).
        column = pa.chunked_array([pa.array(column.to_pylist())])
        kind = column.type
    if uuid_text or pa.types.is_fixed_size_binary(kind) and kind.byte_width == 16:
        return [None if v is None else str(uuid.UUID(bytes=v)) for v in column.to_pylist()]
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_fixed_size_binary(kind) \
            or str(kind) == "binary_view":
        return [None if v is None else "\\x" + v.hex() for v in column.to_pylist()]
    return pc.cast(column, pa.string()).to_pylist()


def write_csv(frame: Any, path, uuids=()) -> int:
    """Writes `frame`'s rows as CSV, NULL unquoted and empty, every other
    value quoted (so an empty string stays one); the rows written. The
    columns named in `uuids` go into uuid columns."""
    table = arrow_of(frame)
    columns = [_texts(table.column(i), table.column_names[i] in uuids) for i in range(table.num_columns)]
    with open(path, "w", encoding="utf-8", newline="") as out:
        for row in zip(*columns):
            out.write(",".join("" if v is None else '"' + v.replace('"', '""') + '"' for v in row))
            out.write("\n")
    return table.num_rows


def copy_csv(db, table: str, columns: list, path) -> None:
    """PostgreSQL's own COPY of the file, through psql."""
    names = ", ".join(f'"{c}"' for c in columns)
    db.sql(f"\\copy {table} ({names}) FROM '{path}' WITH (FORMAT csv)")
