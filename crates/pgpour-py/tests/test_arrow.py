"""In-memory Arrow sources: taken through the PyCapsule interface, their
batches pulled on one thread; the keywords that cannot apply to them
refused by name, before anything else."""

from __future__ import annotations

import pgpour
import pytest

pa = pytest.importorskip("pyarrow")


def frame():
    return pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["a", None, "c"]})


def test_keywords_of_text_input_are_refused_by_name(db):
    target = db.table("id bigint, name text")
    with pytest.raises(pgpour.OptionsError) as raised:
        pgpour.load(frame(), target, db=db.conninfo, delimiter=";", header=True)
    assert str(raised.value).startswith(
        "header, delimiter do not apply to an in-memory Arrow source"
    ), raised.value
    with pytest.raises(pgpour.OptionsError, match="^create does not apply"):
        pgpour.load(frame(), target, db=db.conninfo, create=True)
    # Refused before the server is asked anything.
    with pytest.raises(pgpour.OptionsError, match="^limit does not apply"):
        pgpour.load(frame(), target, db="host=/nonexistent port=1", limit=1)
    assert db.count(target) == 0


def test_a_frame_loads_the_rows_where_allows(db):
    target = db.table("id bigint, name text")
    result = pgpour.load(frame(), target, db=db.conninfo, where="id > 1")
    assert result.rows_loaded == 2, result.to_dict()
    assert db.sql(f"SELECT string_agg(id::text, ',' ORDER BY id) FROM {target}") == "2,3"


def test_what_the_engine_refuses_for_arrow_data_is_an_options_error(db):
    target = db.table("id bigint PRIMARY KEY, name text")
    with pytest.raises(pgpour.OptionsError) as raised:
        pgpour.load(frame(), target, db=db.conninfo, citus_route="shards")
    assert "citus_route='shards' does not apply to Parquet or Arrow data" in str(raised.value)
    assert db.count(target) == 0


def test_a_frame_merges_on_conflict(db):
    target = db.table("id bigint PRIMARY KEY, name text")
    assert pgpour.load(frame(), target, db=db.conninfo).rows_loaded == 3
    again = pgpour.load(frame(), target, db=db.conninfo, on_conflict="skip")
    assert db.count(target) == 3, again.to_dict()


def test_a_column_the_frame_lacks_is_named(db):
    target = db.table("id bigint, name text")
    with pytest.raises(pgpour.LoadError) as raised:
        pgpour.load(frame(), target, db=db.conninfo, columns=["id", "nope"])
    assert str(raised.value).startswith('the in-memory source has no column "nope"'), raised.value


def test_explain_reads_the_schema_only(db):
    target = db.table("id bigint, name text")
    table = frame()
    plan = pgpour.explain(table, target, db=db.conninfo)
    assert "FORMAT binary" in plan.copy_sql, plan.to_dict()
    assert db.count(target) == 0
    # The frame is still whole: explaining took nothing from it.
    assert pgpour.load(table, target, db=db.conninfo).rows_loaded == 3


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
