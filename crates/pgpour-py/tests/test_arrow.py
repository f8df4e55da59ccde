"""In-memory Arrow sources: taken through the PyCapsule interface today,
and refused by name until the engine takes batches."""

from __future__ import annotations

import pgpour
import pytest

pa = pytest.importorskip("pyarrow")


def frame():
    return pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["a", None, "c"]})


def test_a_table_is_refused_by_name_with_its_columns(db):
    with pytest.raises(pgpour.OptionsError) as raised:
        pgpour.load(frame(), "t", db=db.conninfo)
    message = str(raised.value)
    assert "loading in-memory Arrow data (a Table (columns id: Int64, name: Utf8)) is not supported yet" in message


def test_streams_and_arrays_are_pulled_as_batches_on_one_thread():
    from pgpour import _native

    assert _native._arrow_batches(frame()) == ("id: Int64, name: Utf8", 1, 3)
    batches = frame().to_batches(max_chunksize=1)
    reader = pa.RecordBatchReader.from_batches(frame().schema, batches)
    assert _native._arrow_batches(reader) == ("id: Int64, name: Utf8", 3, 3)
    # A RecordBatch has __arrow_c_array__ (and __arrow_c_stream__ in newer pyarrow).
    assert _native._arrow_batches(batches[0])[1:] == (1, 1)


def test_an_arrow_source_does_not_go_in_a_list(db):
    with pytest.raises(TypeError, match="on its own"):
        pgpour.load(["a.csv", frame()], "t", db=db.conninfo)


def test_polars_and_pandas_frames_are_taken_through_their_c_streams():
    from pgpour import _native

    pl = pytest.importorskip("polars")
    frame = pl.DataFrame({"id": [1, 2, 3], "name": ["a", None, "c"]}).with_columns(
        pl.col("name").cast(pl.Categorical).alias("kind")
    )
    columns, batches, rows = _native._arrow_batches(frame)
    # polars hands over its strings as views and its categoricals as
    # dictionaries: the engine casts what the table wants in another form.
    assert columns.startswith("id: Int64, name: Utf8View, kind: Dictionary(")
    assert (batches, rows) == (1, 3)
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"id": [1, 2], "at": pd.to_datetime(["2024-01-01", None]).astype("datetime64[ns]").tz_localize("UTC")})
    if not hasattr(frame, "__arrow_c_stream__"):
        pytest.skip("this pandas has no Arrow export")
    assert _native._arrow_batches(frame)[0] == 'id: Int64, at: Timestamp(ns, "UTC")'
