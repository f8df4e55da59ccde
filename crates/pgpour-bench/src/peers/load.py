"""One run of a Python loader for `pgpour bench`: adbc, psycopg or duckdb.

Arguments: MODE CSV SCHEMA TABLE COLUMNS TYPES, the last two JSON lists
(the file's columns and their PostgreSQL types, as format_type prints
them). The server is reached through libpq's environment (PGHOST...),
which bench sets. `check-MODE` alone only imports what MODE needs, so that
bench can say what is missing before it times anything.
"""
import json
import re
import sys

mode = sys.argv[1]


def quoted(name):
    return '"' + name.replace('"', '""') + '"'


def args():
    csv_path, schema, table = sys.argv[2:5]
    return csv_path, schema, table, json.loads(sys.argv[5]), json.loads(sys.argv[6])


def adbc():
    csv_path, schema, table, columns, types = args()
    # ADBC's documentation: hand adbc_ingest Arrow data, here a stream of
    # record batches read from the csv, which it sends by binary COPY.
    import adbc_driver_postgresql.dbapi as dbapi
    import pyarrow as pa
    import pyarrow.csv as pacsv

    def arrow_type(pg):
        numeric = re.fullmatch(r"numeric\((\d+),(\d+)\)", pg.replace(" ", ""))
        if numeric:
            return pa.decimal128(int(numeric.group(1)), int(numeric.group(2)))
        return {
            "smallint": pa.int16(),
            "integer": pa.int32(),
            "bigint": pa.int64(),
            "real": pa.float32(),
            "double precision": pa.float64(),
            "boolean": pa.bool_(),
            "date": pa.date32(),
            "timestamp without time zone": pa.timestamp("us"),
            "timestamp with time zone": pa.timestamp("us", tz="UTC"),
        }.get(pg, pa.string())

    # COPY's csv: an unquoted empty field is NULL, a quoted one is ''.
    reader = pacsv.open_csv(
        csv_path,
        read_options=pacsv.ReadOptions(column_names=columns, block_size=8 << 20),
        parse_options=pacsv.ParseOptions(newlines_in_values=True),
        convert_options=pacsv.ConvertOptions(
            column_types={c: arrow_type(t) for c, t in zip(columns, types)},
            null_values=[""],
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
        ),
    )
    with dbapi.connect("postgresql://") as conn:
        with conn.cursor() as cur:
            cur.adbc_ingest(table, reader, mode="append", db_schema_name=schema)
        conn.commit()


def psycopg_copy():
    # psycopg's documentation: the fastest copy() writes the file's raw
    # blocks, in the format the COPY statement names.
    import psycopg

    csv_path, schema, table, columns, _ = args()
    sql = "COPY {}.{} ({}) FROM STDIN (FORMAT csv)".format(
        quoted(schema), quoted(table), ", ".join(quoted(c) for c in columns)
    )
    with psycopg.connect("") as conn:
        with conn.cursor() as cur:
            with cur.copy(sql) as copy:
                with open(csv_path, "rb") as f:
                    while block := f.read(1 << 20):
                        copy.write(block)


def duckdb_with_postgres():
    """A DuckDB connection with its postgres extension loaded: the one
    installed before (INSTALL postgres, which downloads it), else the one
    the wheel duckdb-extension-postgres-scanner carries for this DuckDB
    version, which pip can install where DuckDB's own site is out of reach."""
    import duckdb

    con = duckdb.connect()
    try:
        con.execute("LOAD postgres")
        return con
    except duckdb.Error as not_installed:
        try:
            import duckdb_extension_postgres_scanner as wheel
        except ImportError:
            raise not_installed from None
    version = con.execute("PRAGMA version").fetchone()[0]
    base = wheel.__path__[0]
    path = "{}/extensions/{}/postgres_scanner.duckdb_extension".format(base, version)
    con.execute("INSTALL '{}'".format(path.replace("'", "''")))
    con.execute("LOAD postgres_scanner")
    return con


def duckdb_insert():
    # DuckDB's postgres extension sends an INSERT into an attached table by
    # binary COPY (pg_use_binary_copy, on by default).
    csv_path, schema, table, columns, _ = args()
    con = duckdb_with_postgres()
    con.execute("ATTACH '' AS pg (TYPE postgres)")
    names = ", ".join(quoted(c) for c in columns)
    con.execute(
        "INSERT INTO pg.{}.{} ({}) SELECT * FROM read_csv(?, header = false, "
        "all_varchar = true, names = ?)".format(quoted(schema), quoted(table), names),
        [csv_path, columns],
    )


def check_adbc():
    import adbc_driver_postgresql.dbapi  # noqa: F401
    import pyarrow.csv  # noqa: F401


def check_psycopg():
    import psycopg  # noqa: F401


{
    "adbc": adbc,
    "psycopg": psycopg_copy,
    "duckdb": duckdb_insert,
    "check-adbc": check_adbc,
    "check-psycopg": check_psycopg,
    "check-duckdb": duckdb_with_postgres,
}[mode]()
