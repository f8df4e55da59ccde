"""In-memory Arrow sources (pyarrow, polars, pandas through the PyCapsule
interface) load the same values as PostgreSQL's own COPY of a CSV file
written from the same Arrow data, type by type."""

from __future__ import annotations

import decimal
import json
import pathlib

import pgpour
import pytest
from conftest import unique
from frames import arrow_of, copy_csv, write_csv

pa = pytest.importorskip("pyarrow")


D = decimal.Decimal
NS = 1_700_000_000_123_456_789  # 2023-11-14 22:13:20.123456789 UTC


def ns(*values):
    return list(values)


# (name, Arrow array, PostgreSQL type): each with a NULL, and the edges
# of its type where PostgreSQL can hold them.
DTYPES = [
    ("int8", pa.array([-128, 0, None, 127], pa.int8()), "smallint"),
    ("int16", pa.array([-32768, 1, None, 32767], pa.int16()), "smallint"),
    ("int32", pa.array([-(2**31), 2, None, 2**31 - 1], pa.int32()), "integer"),
    ("int64", pa.array([-(2**63), 3, None, 2**63 - 1], pa.int64()), "bigint"),
    ("int64_numeric", pa.array([-(2**63), 3, None, 2**63 - 1], pa.int64()), "numeric"),
    ("uint8", pa.array([0, 7, None, 255], pa.uint8()), "smallint"),
    ("uint16", pa.array([0, 8, None, 65535], pa.uint16()), "integer"),
    ("uint32", pa.array([0, 9, None, 2**32 - 1], pa.uint32()), "bigint"),
    ("uint64", pa.array([0, 10, None, 2**64 - 1], pa.uint64()), "numeric"),
    ("float32", pa.array([0.1, float("nan"), None, float("inf"), -float("inf"), -0.0, 3.4e38], pa.float32()), "real"),
    ("float64", pa.array([0.1, float("nan"), None, float("inf"), -float("inf"), 1e-300, -1.7e308], pa.float64()), "double precision"),
    ("float32_double", pa.array([0.1, float("nan"), None, 1.5], pa.float32()), "double precision"),
    ("decimal_2", pa.array([D("1.23"), D("-0.01"), None, D("99999999.99"), D("0")], pa.decimal128(10, 2)), "numeric"),
    ("decimal_0", pa.array([D("1"), D("-12345678901234567890"), None], pa.decimal128(20, 0)), "numeric"),
    ("decimal_10", pa.array([D("1.0000000001"), D("-0.0000000001"), None], pa.decimal128(38, 10)), "numeric"),
    ("decimal_negative_scale", pa.array([D("1.2E+3"), D("-3E+2"), None], pa.decimal128(5, -2)), "numeric"),
    ("decimal256", pa.array([D("1234567890123456789012345678901234567890.123456789"), None, D("-1")], pa.decimal256(60, 9)), "numeric"),
    ("decimal_rounded", pa.array([D("1.25"), D("1.35"), D("-1.25"), None], pa.decimal128(10, 2)), "numeric(10,1)"),
    ("date32", pa.array([0, 19000, None, -719162], pa.date32()), "date"),
    ("date64", pa.array([0, 86_400_000, None], pa.date64()), "date"),
    # What polars hands over for date64; the time of day dropped as date's input drops it.
    ("timestamp_ms_into_date", pa.array([0, 86_400_000 + 5, None, -1, -86_400_001], pa.timestamp("ms")), "date"),
    ("timestamp_ns_into_date", pa.array([NS, None, -1], pa.timestamp("ns")), "date"),
    ("time64_ns", pa.array([0, 1, None, 86_399_999_999_999, 45_296_000_000_500], pa.time64("ns")), "time"),
    ("time64_us", pa.array([0, 1, None, 86_399_999_999], pa.time64("us")), "time"),
    ("time32_ms", pa.array([0, 1, None, 86_399_999], pa.time32("ms")), "time"),
    ("timestamp_s", pa.array([0, 1_700_000_000, None, -1], pa.timestamp("s")), "timestamp"),
    ("timestamp_ms", pa.array([0, 1_700_000_000_123, None, -1], pa.timestamp("ms")), "timestamp"),
    ("timestamp_us", pa.array([0, 1_700_000_000_123_456, None, -1], pa.timestamp("us")), "timestamp"),
    # Nanoseconds round to microseconds as PostgreSQL rounds text input,
    # half to even on the fraction: .5 both ways, below and above 1970.
    ("timestamp_ns", pa.array([NS, NS - 289, None, 1_500, 2_500, -1_500, -1], pa.timestamp("ns")), "timestamp"),
    ("timestamp_ns_utc", pa.array([NS, NS - 289, None, 1_500, 2_500, -1], pa.timestamp("ns", tz="UTC")), "timestamptz"),
    ("timestamp_ns_oslo", pa.array([NS, None, 1_500, -1], pa.timestamp("ns", tz="Europe/Oslo")), "timestamptz"),
    ("timestamp_us_tz_into_timestamp", pa.array([0, 1_700_000_000_123_456, None], pa.timestamp("us", tz="UTC")), "timestamp"),
    ("bool", pa.array([True, False, None], pa.bool_()), "boolean"),
    ("utf8", pa.array(["a", "", None, "ø 中 \"q\",\n\\N"], pa.string()), "text"),
    ("large_utf8", pa.array(["a", "", None, "ø"], pa.large_string()), "text"),
    ("utf8_varchar", pa.array(["abc", "", None], pa.string()), "varchar(3)"),
    ("utf8_jsonb", pa.array(['{"a": 1}', "[]", None], pa.string()), "jsonb"),
    ("binary", pa.array([b"\x00\x01", b"", None, b"\xff"], pa.binary()), "bytea"),
    ("large_binary", pa.array([b"\x00", None], pa.large_binary()), "bytea"),
    ("uuid", pa.array([bytes(range(16)), None, b"\xff" * 16], pa.binary(16)), "uuid"),
    # What polars (BinaryView) and pandas (Binary) hand over for uuids.
    ("uuid_of_binary", pa.array([bytes(range(16)), None, b"\xff" * 16], pa.binary()), "uuid"),
    ("dictionary", pa.array(["red", "green", None, "red", ""]).dictionary_encode(), "text"),
    ("dictionary_int", pa.array([5, 7, None, 5], pa.int64()).dictionary_encode(), "bigint"),
    # Lists into one-dimensional arrays: empty lists, NULL lists, NULL
    # elements, and elements that need quoting in an array's text.
    ("list_int32", pa.array([[1, 2], [], None, [None, -(2**31)]], pa.list_(pa.int32())), "integer[]"),
    ("list_int64", pa.array([[2**63 - 1], None, [0, None]], pa.list_(pa.int64())), "bigint[]"),
    ("large_list_float64", pa.array([[0.5, float("nan"), None, float("inf")], []], pa.large_list(pa.float64())),
     "double precision[]"),
    ("fixed_size_list_int16", pa.array([[1, 2], None, [None, 3]], pa.list_(pa.int16(), 2)), "smallint[]"),
    ("list_utf8", pa.array([["a", "b,c"], [], None, [None, "", "NULL", 'q"\\ {x}']], pa.list_(pa.string())), "text[]"),
    ("list_utf8_varchar", pa.array([["ab", "c"], None], pa.list_(pa.string())), "varchar(2)[]"),
    ("list_timestamp_us", pa.array([[0, 1_700_000_000_123_456], None, [None]], pa.list_(pa.timestamp("us"))),
     "timestamp[]"),
    ("list_decimal", pa.array([[D("1.23"), None], []], pa.list_(pa.decimal128(5, 2))), "numeric[]"),
    # Structs into jsonb: objects, nested lists and objects, NULLs.
    ("struct_jsonb", pa.array([{"a": 1, "b": "x", "c": True}, None, {"a": None, "b": 'q"\\', "c": False}],
                              pa.struct([("a", pa.int64()), ("b", pa.string()), ("c", pa.bool_())])), "jsonb"),
    ("struct_nested_jsonb", pa.array([{"n": [1, None], "f": 0.5, "s": {"x": "y"}}, {"n": [], "f": None, "s": None}, None],
                                     pa.struct([("n", pa.list_(pa.int32())), ("f", pa.float64()),
                                                ("s", pa.struct([("x", pa.string())]))])), "jsonb"),
    # Durations into interval: each unit, negative ones, days' worth.
    ("duration_s", pa.array([0, 1, None, -86_400 * 3 - 5, 10**9], pa.duration("s")), "interval"),
    ("duration_ms", pa.array([0, 1, None, -1_500], pa.duration("ms")), "interval"),
    ("duration_us", pa.array([0, 1, None, -1_500_000, 86_400_000_000 * 40 + 7], pa.duration("us")), "interval"),
    ("duration_ns", pa.array([0, 1_499, 1_500, 2_500, None, -1_500, -3_500, 86_400_000_000_123_456], pa.duration("ns")),
     "interval"),
]
if hasattr(pa, "string_view"):
    DTYPES.append(("utf8_view", pa.array(["a", "", None, "a longer string than twelve"], pa.string_view()), "text"))
    DTYPES.append(("binary_view", pa.array([b"a", b"", None], pa.binary_view()), "bytea"))


def load_like_copy(db, frame, pg_type, tmp_path, **keywords):
    """Loads `frame` (one column `v` beside an `i` index) with pgpour and
    COPYs its CSV into a table of the same columns; both tables' names."""
    columns = f"i bigint, v {pg_type}"
    by_pgpour, by_copy = db.table(columns), db.table(columns)
    result = pgpour.load(frame, by_pgpour, db=db.conninfo, **keywords)
    path = tmp_path / f"{by_copy}.csv"
    rows = write_csv(frame, path, uuids={"v"} if pg_type == "uuid" else ())
    copy_csv(db, by_copy, arrow_of(frame).column_names, path)
    assert result.rows_loaded == rows == db.count(by_pgpour)
    return by_pgpour, by_copy


def indexed(values):
    return pa.table({"i": pa.array(range(len(values)), pa.int64()), "v": values})


@pytest.mark.parametrize("name, values, pg_type", DTYPES, ids=[d[0] for d in DTYPES])
def test_a_pyarrow_table_loads_what_copy_loads(db, tmp_path, name, values, pg_type):
    by_pgpour, by_copy = load_like_copy(db, indexed(values), pg_type, tmp_path)
    assert db.same_rows(f"TABLE {by_pgpour}", f"TABLE {by_copy}"), db.rows(by_pgpour)
    assert db.sql(f"SELECT count(*) FROM {by_pgpour} WHERE v IS NULL") == str(values.null_count)


# What polars and pandas hand over for some types, which the table's
# column does not take in that form yet: known gaps, each an expected
# failure that must keep failing until it is closed (strict).
POLARS_GAPS: dict = {}
PANDAS_GAPS: dict = {}


def pandas_of(table):
    """`table` as a pandas DataFrame, integer columns in pandas' nullable
    dtypes (Int8 ... UInt64), as a pandas user holds integers with missing
    values: `to_pandas()` alone makes an integer column with a NULL float64
    (NaN for the NULL), which an integer column rightly refuses. Lists are
    Arrow-backed (`pd.ArrowDtype`) for the same reason: as NumPy arrays in
    an object column, a list of integers with a NULL comes back as floats."""
    import pandas as pd

    nullable = {
        pa.int8(): pd.Int8Dtype(), pa.int16(): pd.Int16Dtype(),
        pa.int32(): pd.Int32Dtype(), pa.int64(): pd.Int64Dtype(),
        pa.uint8(): pd.UInt8Dtype(), pa.uint16(): pd.UInt16Dtype(),
        pa.uint32(): pd.UInt32Dtype(), pa.uint64(): pd.UInt64Dtype(),
    }

    def dtype(kind):
        if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
            return pd.ArrowDtype(kind)
        return nullable.get(kind)

    return table.to_pandas(types_mapper=dtype)


def known_gap(request, gaps, name):
    if name in gaps:
        request.applymarker(pytest.mark.xfail(strict=True, reason=gaps[name]))


@pytest.mark.parametrize("name, values, pg_type", DTYPES, ids=[d[0] for d in DTYPES])
def test_a_polars_frame_loads_what_copy_loads(db, tmp_path, request, name, values, pg_type):
    pl = pytest.importorskip("polars")
    try:
        frame = pl.from_arrow(indexed(values))
    except BaseException as e:  # a type polars does not have
        # polars refuses decimal256 by a panic of its own (PanicException,
        # a BaseException): before pgpour sees anything.
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        pytest.skip(f"polars has no {values.type}: {type(e).__name__}: {e}")
    known_gap(request, POLARS_GAPS, name)
    by_pgpour, by_copy = load_like_copy(db, frame, pg_type, tmp_path)
    assert db.same_rows(f"TABLE {by_pgpour}", f"TABLE {by_copy}"), db.rows(by_pgpour)


@pytest.mark.parametrize("name, values, pg_type", DTYPES, ids=[d[0] for d in DTYPES])
def test_a_pandas_frame_loads_what_copy_loads(db, tmp_path, request, name, values, pg_type):
    pytest.importorskip("pandas")
    try:
        frame = pandas_of(indexed(values))
        if not hasattr(frame, "__arrow_c_stream__"):
            pytest.skip("this pandas has no Arrow export")
        arrow_of(frame)
    except (pa.ArrowException, TypeError, ValueError) as e:
        pytest.skip(f"pandas cannot hold {values.type}: {e}")
    known_gap(request, PANDAS_GAPS, name)
    by_pgpour, by_copy = load_like_copy(db, frame, pg_type, tmp_path)
    assert db.same_rows(f"TABLE {by_pgpour}", f"TABLE {by_copy}"), db.rows(by_pgpour)


def test_record_batches_readers_and_many_batches_load_in_order(db, tmp_path):
    table = indexed(pa.array([f"row {i}" for i in range(1000)]))
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=7))
    for source in (reader, table.to_batches()[0]):
        target = db.table("i bigint, v text")
        result = pgpour.load(source, target, db=db.conninfo, chunk_size="4KiB", workers=2)
        assert result.rows_loaded == 1000
        assert db.sql(f"SELECT count(*) FROM {target} WHERE v = 'row ' || i") == "1000"


def test_an_empty_frame_loads_no_rows(db):
    empty = indexed(pa.array([], pa.string()))
    target = db.table("i bigint, v text")
    assert pgpour.load(empty, target, db=db.conninfo).rows_loaded == 0
    assert db.count(target) == 0


def test_columns_go_by_name_and_a_table_column_left_out_gets_its_default(db):
    frame = pa.table({"name": ["a", "b"], "id": pa.array([1, 2], pa.int32())})
    target = db.table("id int, note text DEFAULT 'none', name text")
    pgpour.load(frame, target, db=db.conninfo)
    assert db.rows(target) == ["(1,none,a)", "(2,none,b)"]
    with pytest.raises(pgpour.LoadError, match="nope"):
        pgpour.load(pa.table({"nope": [1]}), target, db=db.conninfo)


def test_a_million_rows_load_whole(db):
    n = 1_000_000
    frame = pa.table({
        "i": pa.array(range(n), pa.int64()),
        "v": pa.array([i * 0.5 for i in range(n)], pa.float64()),
    })
    target = db.table("i bigint, v double precision")
    result = pgpour.load(frame, target, db=db.conninfo, workers=2)
    assert result.rows_loaded == n
    assert db.sql(f"SELECT count(DISTINCT i), sum(i), sum(v) FROM {target}") == \
        f"{n}|{n * (n - 1) // 2}|{n * (n - 1) / 4:.0f}"


def test_bad_values_go_to_the_reject_file_by_row_index(db, tmp_path):
    values = [1, 70000, 3, None, 5, -40000, 7]
    frame = pa.table({"i": pa.array(range(7), pa.int64()), "v": pa.array(values, pa.int64())})
    target = db.table("i bigint, v smallint NOT NULL")
    rejects = tmp_path / "frame.rejected.jsonl"
    result = pgpour.load(frame, target, db=db.conninfo, max_errors="all", reject_file=rejects, workers=2)
    assert (result.rows_loaded, result.rows_rejected) == (4, 3)
    # The table holds exactly the other rows.
    assert db.rows(target) == ["(0,1)", "(2,3)", "(4,5)", "(6,7)"]
    kept = [json.loads(line) for line in rejects.read_text().splitlines()]
    assert sorted(r["i"] for r in kept) == ["1", "3", "5"]
    log = [json.loads(line) for line in pathlib.Path(result.reject_log).read_text().splitlines()]
    # `byte` is a row's index in the source, as for a Parquet file's rows.
    assert sorted((r["byte"], r["row_group"], r["row_in_group"]) for r in log) == [(1, 0, 1), (3, 0, 3), (5, 0, 5)]
    # pgpour's own refusals (out of range) name the column; the server names
    # it in the message of a NOT NULL violation.
    assert [r["column"] for r in sorted(log, key=lambda r: r["byte"])] == ["v", None, "v"]
    assert 'column "v"' in sorted(log, key=lambda r: r["byte"])[1]["message"]
    # Without max_errors the first bad row stops the load, named by index.
    with pytest.raises(pgpour.RowError) as raised:
        pgpour.load(frame, db.table("i bigint, v smallint"), db=db.conninfo, workers=1)
    error = raised.value
    assert (error.row, error.column, error.value, error.sqlstate) == (1, "v", "70000", "22003")
    assert (error.batch, error.row_in_batch, error.file, error.line) == (0, 1, None, None)
    assert str(error).startswith("row 1 of the in-memory source (batch 0, row 1 in it), column v: "), error


def test_an_in_memory_load_cannot_be_resumed_by_a_later_call(db):
    frame = indexed(pa.array(["a", None]))
    load_id = unique("frame")
    target = db.table("i bigint, v text NOT NULL")
    with pytest.raises(pgpour.RowError):
        pgpour.load(frame, target, db=db.conninfo, load_id=load_id)
    with pytest.raises(pgpour.LoadError) as raised:
        pgpour.resume(load_id, db=db.conninfo)
    assert "which pgpour does not keep: the data is gone" in str(raised.value)
    assert "cannot be resumed" in str(raised.value)


def test_a_uuid_of_another_width_is_a_bad_row(db, tmp_path):
    frame = indexed(pa.array([bytes(16), b"short", None, b"\x01" * 16], pa.binary()))
    target = db.table("i bigint, v uuid")
    rejects = tmp_path / "uuids.rejected.jsonl"
    result = pgpour.load(frame, target, db=db.conninfo, max_errors=1, reject_file=rejects)
    assert (result.rows_loaded, result.rows_rejected) == (3, 1)
    assert json.loads(rejects.read_text()) == {"i": "1", "v": "\\x73686f7274"}
    assert db.sql(f"SELECT count(*) FROM {target} WHERE v IS NOT NULL") == "2"


def test_atomic_loads_a_frame_whole_or_not_at_all(db):
    values = pa.array(list(range(20000)) + [99999], pa.int64())
    frame = indexed(values)
    target = db.table("i bigint, v smallint")
    with pytest.raises(pgpour.RowError) as raised:
        pgpour.load(frame, target, db=db.conninfo, atomic=True, chunk_size="16KiB", workers=2)
    assert raised.value.row == 20000
    assert db.count(target) == 0


def test_pandas_nullable_integers_load_as_integers_with_their_nulls(db):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({
        "n": pd.array([0, 1, 2], dtype="Int64"),
        "a": pd.array([-128, None, 127], dtype="Int8"),
        "b": pd.array([None, 4294967295, 0], dtype="UInt32"),
        "c": pd.array([9223372036854775807, -1, None], dtype="Int64"),
        "d": pd.array([None, None, 65535], dtype="UInt16"),
    })
    target = db.table("n bigint, a smallint, b bigint, c bigint, d integer")
    assert pgpour.load(frame, target, db=db.conninfo).rows_loaded == 3
    assert db.rows(target) == [
        "(0,-128,,9223372036854775807,)",
        "(1,,4294967295,-1,)",
        "(2,127,0,,65535)",
    ]
