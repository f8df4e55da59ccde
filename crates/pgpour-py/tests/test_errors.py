"""Errors raise pgpour's classes, with their data as attributes and their
advice in Python's terms."""

from __future__ import annotations

import builtins

import pgpour
import pytest
from conftest import unique


def test_a_bad_row_is_a_row_error_with_where_and_why(db, tmp_path):
    data = tmp_path / "bad.csv"
    data.write_bytes(b"1,a\n2,b\nthree,c\n")
    table = db.table("n int, s text")
    load_id = unique("bad-row")
    with pytest.raises(pgpour.RowError) as raised:
        pgpour.load(data, table, db=db.conninfo, load_id=load_id)
    error = raised.value
    assert isinstance(error, pgpour.LoadError) and isinstance(error, pgpour.Error)
    assert (error.file, error.line, error.column, error.value) == (str(data), 3, "n", "three")
    assert error.row is None
    assert error.sqlstate == "22P02"
    assert error.load_id == load_id
    assert error.result.rows_loaded == 0 and error.result.load_id == load_id
    assert str(error).startswith(f"{data}:3, column n: invalid input syntax for type integer")


def test_a_header_hint_names_the_keyword(db, tmp_path):
    data = tmp_path / "headed.csv"
    data.write_bytes(b"n,s\n1,a\n")
    with pytest.raises(pgpour.RowError, match=r"pass header=True"):
        pgpour.load(data, db.table("n int, s text"), db=db.conninfo)


@pytest.mark.parametrize(
    "keywords, words",
    [
        ({"chunk_size": "4 parsecs"}, "chunk_size='4 parsecs': unknown unit \"parsecs\""),
        ({"chunk_size": 0}, "chunk_size=0: must be more than 0 bytes"),
        ({"max_errors": "many"}, "max_errors='many': expected a number or 'all'"),
        ({"delimiter": ",,"}, "delimiter=',,': must be a single one-byte character"),
        ({"wire_format": "fast"}, "wire_format='fast': expected one of 'auto', 'text', 'binary'"),
        ({"workers": 0}, "workers must be at least 1"),
        ({"load_id": "a\nb"}, "load_id='a\\nb': must be 1 to 128 bytes"),
        ({"atomic": True, "no_journal": True}, "atomic=True needs the journal"),
        ({"limit": 5, "where": "n > 0"}, "limit and where cannot go together"),
        ({"quote": "'", "format": "text"}, "quote and escape are only available with format='csv'"),
        ({"columns": ["n"], "columns_from_header": True}, "columns and columns_from_header"),
        ({"types": {"n": "text"}}, "if_not_exists, types and create_types are for create=True"),
        ({"create": True, "types": "n"}, 'types: "n" is not column=type'),
        ({"create": True, "types": {"nope": "text"}}, "types: the file has no column nope"),
    ],
)
def test_options_errors_name_the_keywords(db, tmp_path, keywords, words):
    data = tmp_path / "one.csv"
    data.write_bytes(b"1\n")
    with pytest.raises(pgpour.OptionsError) as raised:
        pgpour.load(data, "t_none", db=db.conninfo, **keywords)
    assert words in str(raised.value)
    assert "--" not in str(raised.value), "a CLI flag in a Python message"
    assert isinstance(raised.value, ValueError)


def test_wrong_types_are_type_errors(db, tmp_path):
    with pytest.raises(TypeError, match="truncate must be True or False"):
        pgpour.load(tmp_path / "x.csv", "t", db=db.conninfo, truncate=1)
    with pytest.raises(TypeError, match="workers must be an int"):
        pgpour.load(tmp_path / "x.csv", "t", db=db.conninfo, workers=True)
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        pgpour.explain(tmp_path / "x.csv", "t", db=db.conninfo, wokers=2)


def test_an_existing_reject_file_says_which_keyword_replaces_it(db, tmp_path):
    data = tmp_path / "d.csv"
    data.write_bytes(b"1\nx\n")
    (tmp_path / "d.rejected.csv").write_bytes(b"someone else's\n")
    with pytest.raises(pgpour.LoadError, match="replace_rejects=True") as raised:
        pgpour.load(data, db.table("n int"), db=db.conninfo, max_errors="all")
    assert "--" not in str(raised.value)


def test_a_missing_table_and_a_missing_file_are_load_errors(db, tmp_path):
    data = tmp_path / "d.csv"
    data.write_bytes(b"1\n")
    with pytest.raises(pgpour.LoadError, match="does not exist"):
        pgpour.load(data, "no_such_table", db=db.conninfo)
    with pytest.raises(pgpour.LoadError, match="cannot read"):
        pgpour.load(tmp_path / "missing.csv", db.table("n int"), db=db.conninfo)


def test_no_server_is_a_connection_error(tmp_path):
    data = tmp_path / "d.csv"
    data.write_bytes(b"1\n")
    with pytest.raises(pgpour.ConnectionError) as raised:
        pgpour.load(data, "t", db=f"host={tmp_path} port=1")
    assert isinstance(raised.value, builtins.ConnectionError)
    assert "is the server running locally" in str(raised.value)
    with pytest.raises(pgpour.ConnectionError, match="invalid db connection string"):
        pgpour.load(data, "t", db="host='unterminated")


def test_an_unknown_load_is_a_journal_error(db):
    with pytest.raises(pgpour.JournalError) as raised:
        pgpour.resume("never-started", db=db.conninfo)
    assert raised.value.load_id == "never-started"
