"""Helpers of the in-memory tests: the reference load of a frame, which is
PostgreSQL's own COPY of a CSV file written from the same Arrow data."""

from __future__ import annotations

import json
import math
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
    if pa.types.is_fixed_size_list(kind):
        column = pc.cast(column, pa.list_(kind.value_type))
        kind = column.type
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _array_texts(column)
    if pa.types.is_struct(kind):
        return [None if v is None else json.dumps(_json_of(v)) for v in column.to_pylist()]
    if pa.types.is_duration(kind):
        return [None if v is None else _interval_text(v, kind.unit) for v in column.cast(pa.int64()).to_pylist()]
    if uuid_text or pa.types.is_fixed_size_binary(kind) and kind.byte_width == 16:
        return [None if v is None else str(uuid.UUID(bytes=v)) for v in column.to_pylist()]
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_fixed_size_binary(kind) \
            or str(kind) == "binary_view":
        return [None if v is None else "\\x" + v.hex() for v in column.to_pylist()]
    return pc.cast(column, pa.string()).to_pylist()


def _array_texts(column: pa.ChunkedArray) -> list:
    """Each list as the text of a one-dimensional PostgreSQL array, every
    element quoted, NULL elements NULL."""
    lists = column.combine_chunks()
    elements = _texts(pa.chunked_array([lists.values], lists.type.value_type))
    offsets = lists.offsets.to_pylist()
    texts = []
    for i in range(len(lists)):
        if not lists[i].is_valid:
            texts.append(None)
            continue
        items = elements[offsets[i]:offsets[i + 1]]
        texts.append("{" + ",".join(
            "NULL" if e is None else '"' + e.replace("\\", "\\\\").replace('"', '\\"') + '"' for e in items
        ) + "}")
    return texts


def _json_of(value: Any) -> Any:
    """A struct's Python value as JSON has it: a float that is not finite
    as a string of its text."""
    if isinstance(value, dict):
        return {k: _json_of(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_of(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def _interval_text(value: int, unit: str) -> str:
    """A duration as interval's text input, `-HH:MM:SS.fffffffff`: its
    magnitude written out, then the sign."""
    per = _PER_SECOND[unit]
    whole, fraction = divmod(abs(value), per)
    hours, rest = divmod(whole, 3600)
    text = f"{hours}:{rest // 60:02}:{rest % 60:02}"
    if per > 1:
        text += "." + str(fraction).rjust(len(str(per)) - 1, "0")
    return ("-" if value < 0 else "") + text


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
