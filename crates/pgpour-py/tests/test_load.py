"""Loads from Python: the same rows and summary as the CLI's, and the
keywords meaning what the CLI's flags mean."""

from __future__ import annotations

import inspect
import io
import json
import pathlib

import pgpour
import pytest
from conftest import cli, unique


def test_a_file_loads_as_the_cli_loads_it(db, pgpour_bin, tmp_path):
    data = tmp_path / "votes.csv"
    made = cli(pgpour_bin, "gen", "votes", "--rows", "20000", "--bad-every", "997", "-o", str(data))
    assert made.returncode == 0, made.stderr
    columns = "id serial primary key, username text, link text, score int"
    by_cli, by_python = db.table(columns), db.table(columns)
    ran = cli(
        pgpour_bin, "load", str(data), "--table", by_cli, "--db", db.conninfo,
        "--columns", "username,link,score", "--max-errors", "all",
        "--reject-file", str(tmp_path / "cli.rejected.csv"), "--json",
    )
    assert ran.returncode == 1, ran.stderr  # finished with rejected rows
    summary = json.loads(ran.stdout)
    result = pgpour.load(
        data, by_python, db=db.conninfo, columns=["username", "link", "score"],
        max_errors="all", reject_file=tmp_path / "py.rejected.csv",
    )
    fields = "username, link, score"
    assert db.same_rows(f"SELECT {fields} FROM {by_python}", f"SELECT {fields} FROM {by_cli}")
    assert result.rows_loaded == summary["rows_loaded"] == db.count(by_python)
    assert result.rows_rejected == summary["rows_rejected"] > 0
    assert (tmp_path / "py.rejected.csv").read_bytes() == (tmp_path / "cli.rejected.csv").read_bytes()
    # The fields of --json's summary, as attributes and in to_dict().
    assert set(result.to_dict()) == set(summary)
    for name in summary:
        getattr(result, name)


def test_paths_globs_lists_and_file_objects_are_sources(db, tmp_path):
    for i in range(3):
        (tmp_path / f"part-{i}.csv").write_text(f"{i},a\n{i},b\n")
    table = db.table("n int, s text")
    pgpour.load(str(tmp_path / "part-*.csv"), table, db=db.conninfo)
    pgpour.load([tmp_path / "part-0.csv", pathlib.Path(tmp_path / "part-1.csv")], table, db=db.conninfo)
    pgpour.load(io.BytesIO(b"7,x\n8,y\n"), table, db=db.conninfo)
    with open(tmp_path / "part-2.csv", "rb") as f:
        result = pgpour.load(f, table, db=db.conninfo)
    assert result.rows_loaded == 2
    assert db.count(table) == 6 + 4 + 2 + 2
    with pytest.raises(TypeError, match="binary"):
        with open(tmp_path / "part-2.csv") as text:
            pgpour.load(text, table, db=db.conninfo)
    with pytest.raises(TypeError, match="cannot load a int"):
        pgpour.load(5, table, db=db.conninfo)


def test_format_keywords_mean_what_copy_options_mean(db, tmp_path):
    data = tmp_path / "data.txt"
    data.write_bytes(b"title line\nname|score\nann|NA\n|3\n")
    table = db.table("name text, score int")
    result = pgpour.load(
        data, table, db=db.conninfo, format="csv", delimiter="|", null="NA",
        header=True, skip_lines=1, force_not_null=["name"],
    )
    assert result.rows_loaded == 2
    # NA is NULL in score; the empty name stays '' (FORCE_NOT_NULL).
    assert db.sql(f"SELECT count(*) FROM {table} WHERE score IS NULL AND name = 'ann'") == "1"
    assert db.sql(f"SELECT count(*) FROM {table} WHERE name = '' AND score = 3") == "1"


def test_max_errors_all_sends_bad_rows_to_the_reject_file(db, tmp_path):
    data = tmp_path / "dirty.csv"
    data.write_bytes(b"1\nx\n2\n3.5\n4\n")
    table = db.table("n int")
    result = pgpour.load(data, table, db=db.conninfo, max_errors="all")
    assert (result.rows_loaded, result.rows_rejected, result.rows_read) == (3, 2, 5)
    assert pathlib.Path(result.reject_file).read_bytes() == b"x\n3.5\n"
    reasons = [json.loads(line) for line in pathlib.Path(result.reject_log).read_text().splitlines()]
    assert [r["line"] for r in reasons] == [2, 4]
    assert db.rows(table) == ["(1)", "(2)", "(4)"]
    # A limit of 1 stops at the second bad row; what committed stays.
    with pytest.raises(pgpour.RowError) as stopped:
        pgpour.load(data, db.table("n int"), db=db.conninfo, max_errors=1, workers=1, replace_rejects=True)
    assert "more than 1 rows rejected, see max_errors" in str(stopped.value)


def test_on_conflict_update_replaces_the_rows_of_a_key(db, tmp_path):
    table = db.table("id int primary key, v text")
    db.sql(f"INSERT INTO {table} VALUES (1, 'old'), (2, 'kept')")
    data = tmp_path / "new.csv"
    data.write_bytes(b"1,new\n3,added\n")
    result = pgpour.load(data, table, db=db.conninfo, on_conflict="update")
    assert (result.rows_inserted, result.rows_updated) == (1, 1)
    assert db.rows(table) == ["(1,new)", "(2,kept)", "(3,added)"]
    result = pgpour.load(data, table, db=db.conninfo, on_conflict="skip", conflict_key="id")
    assert result.rows_skipped == 2


def test_atomic_loads_all_rows_or_none(db, tmp_path):
    data = tmp_path / "late.csv"
    data.write_bytes(b"".join(b"%d\n" % i for i in range(50000)) + b"bad\n")
    table = db.table("n int")
    with pytest.raises(pgpour.RowError) as refused:
        pgpour.load(data, table, db=db.conninfo, atomic=True, chunk_size="64KiB", workers=2)
    assert refused.value.line == 50001
    assert db.count(table) == 0
    data.write_bytes(b"".join(b"%d\n" % i for i in range(50000)))
    assert pgpour.load(data, table, db=db.conninfo, atomic=True, chunk_size=65536).rows_loaded == 50000


def test_create_makes_the_table_from_the_sniff(db, tmp_path):
    data = tmp_path / "cities.csv"
    data.write_bytes(b"city,zip,people\nOslo,0150,700000\nBergen,5003,290000\n")
    name = f"created_{db.table('x int')}"
    result = pgpour.load(data, name, db=db.conninfo, create=True, types={"people": "bigint"})
    assert result.rows_loaded == 2
    types = db.sql(
        f"SELECT string_agg(column_name || ' ' || data_type, ', ' ORDER BY ordinal_position) "
        f"FROM information_schema.columns WHERE table_name = '{name}'"
    )
    assert types == "city text, zip text, people bigint"


def test_progress_events_reach_a_callable(db, tmp_path):
    data = tmp_path / "many.csv"
    data.write_bytes(b"".join(b"%d\n" % i for i in range(200000)))
    events = []
    result = pgpour.load(data, db.table("n int"), db=db.conninfo, progress=events.append)
    assert events and events[-1].done and not any(e.done for e in events[:-1])
    assert events[-1].rows_loaded == result.rows_loaded == 200000
    assert events[-1].input_bytes_total == data.stat().st_size
    assert {e.phase for e in events} <= {"start", "load", "final commit", "restore"}


def test_progress_true_draws_only_on_a_terminal(db, tmp_path, capsys):
    data = tmp_path / "one.csv"
    data.write_bytes(b"1\n")
    pgpour.load(data, db.table("n int"), db=db.conninfo, progress=True)
    assert capsys.readouterr().err == ""


# A value for each keyword of load(), which explain() takes too: each must
# be read (a misspelt one in the native layer would be refused).
KEYWORD_SAMPLES = {
    "columns": "n", "columns_from_header": False, "format": "csv", "header": False,
    "delimiter": ",", "null": "", "quote": '"', "escape": '"', "encoding": "UTF8",
    "force_null": ["n"], "force_not_null": "n", "skip_lines": 0, "where": "n > 0",
    "limit": 5, "create": False, "workers": 2, "truncate": True, "max_errors": "all",
    "reject_file": "r.csv", "replace_rejects": True, "max_record_size": "1MiB",
    "chunk_size": 1 << 20, "atomic": False, "no_journal": False, "keep_indexes": True,
    "keep_sequences": True, "keep_foreign_keys": True, "wire_format": "text", "citus_route": "coordinator",
    "on_conflict": "error", "conflict_key": "n", "load_id": unique("sample"),
}


def test_every_keyword_of_load_is_taken(db, tmp_path):
    taken = set(inspect.signature(pgpour.load).parameters) - {"source", "table", "db", "progress"}
    # Not alone: these need create=True, or are not there yet.
    apart = {"if_not_exists", "types", "create_types", "journal_schema"}
    assert taken == set(KEYWORD_SAMPLES) | apart
    data = tmp_path / "n.csv"
    data.write_bytes(b"1\n")
    table = db.table("n int primary key")
    for name, value in KEYWORD_SAMPLES.items():
        if name in ("where", "limit"):
            continue  # the two do not go together: each alone below
        pgpour.explain(data, table, db=db.conninfo, **{name: value})
    pgpour.explain(data, table, db=db.conninfo, where="n > 0")
    plan = pgpour.explain(data, table, db=db.conninfo, **{k: v for k, v in KEYWORD_SAMPLES.items() if k != "where"})
    assert plan.workers == 2 and plan.wire_format == "text"
    made = pgpour.explain(data, "t_new", db=db.conninfo, create=True, if_not_exists=True, types="column_1=bigint", create_types="text")
    assert made.create_table == 'CREATE TABLE IF NOT EXISTS "t_new" (column_1 bigint);'
    with pytest.raises(pgpour.OptionsError, match="journal_schema is not supported yet"):
        pgpour.load(data, table, db=db.conninfo, journal_schema="loads")
