"""status, forget, resume, explain and sniff, with the CLI's meanings."""

from __future__ import annotations

import datetime

import pgpour
import pytest
from conftest import unique


def test_status_lists_loads_and_forget_drops_them(db, tmp_path):
    data = tmp_path / "d.csv"
    data.write_bytes(b"1\n2\n")
    table = db.table("n int")
    listed_id, failing_id = unique("listed"), unique("failing")
    failing_table = db.table("n int, m int")
    pgpour.load(data, table, db=db.conninfo, load_id=listed_id)
    with pytest.raises(pgpour.RowError):
        pgpour.load(tmp_path / "d.csv", failing_table, db=db.conninfo, load_id=failing_id)
    ids = [s.load_id for s in pgpour.status(db=db.conninfo)]
    assert listed_id in ids and failing_id in ids
    [listed] = pgpour.status(listed_id, db=db.conninfo)
    assert (listed.state, listed.rows_loaded, listed.chunks) == ("done", 2, 1)
    assert listed.options["table"]["name"] == table
    failed = pgpour.status(db=db.conninfo, state=["failed", "stopped"], table=failing_table)
    assert [s.load_id for s in failed] == [failing_id]
    assert pgpour.status(db=db.conninfo, state="done", table=failing_table) == []
    assert pgpour.status(db=db.conninfo, since="1h", table=table)[0].load_id == listed_id
    assert pgpour.status(db=db.conninfo, older_than=datetime.timedelta(days=1)) == []
    with pytest.raises(pgpour.OptionsError, match="state='crashed': not a state of a load"):
        pgpour.status(db=db.conninfo, state="crashed")
    with pytest.raises(pgpour.OptionsError, match="since='5': a duration is a number and a unit"):
        pgpour.status(db=db.conninfo, since="5")
    gone = pgpour.forget(db=db.conninfo, failed=True)
    assert (failing_id, True) in [(g.load_id, g.forgotten) for g in gone]
    assert listed_id not in [g.load_id for g in gone]
    [gone] = pgpour.forget(listed_id, db=db.conninfo)
    assert gone.forgotten and db.count(table) == 2
    assert pgpour.status(listed_id, db=db.conninfo) == []
    with pytest.raises(pgpour.JournalError, match=f"no load '{listed_id}'"):
        pgpour.forget(listed_id, db=db.conninfo)
    with pytest.raises(pgpour.OptionsError):
        pgpour.forget("x", db=db.conninfo, failed=True)


def test_resume_of_a_finished_load_says_so(db, tmp_path):
    data = tmp_path / "d.csv"
    data.write_bytes(b"1\n")
    finished_id = unique("finished")
    pgpour.load(data, db.table("n int"), db=db.conninfo, load_id=finished_id)
    assert pgpour.resume(finished_id, db=db.conninfo).already_done


def test_resume_with_more_errors_allowed_finishes_a_stopped_load(db, tmp_path):
    data = tmp_path / "d.csv"
    data.write_bytes(b"1\nx\n3\n")
    table = db.table("n int")
    more_errors_id = unique("more-errors")
    with pytest.raises(pgpour.RowError):
        pgpour.load(data, table, db=db.conninfo, load_id=more_errors_id, workers=1)
    result = pgpour.resume(more_errors_id, db=db.conninfo, max_errors="all")
    assert result.rows_rejected == 1
    assert db.rows(table) == ["(1)", "(3)"]


def test_explain_says_what_a_load_would_do_and_loads_nothing(db, tmp_path):
    data = tmp_path / "d.csv"
    data.write_bytes(b"n\n1\n")
    table = db.table("n int primary key")
    plan = pgpour.explain(data, table, db=db.conninfo, header=True, workers=3)
    assert plan.copy_sql.startswith(f'COPY "public"."{table}" ("n") FROM STDIN')
    assert plan.header == "skip" and plan.workers == 3
    assert plan.to_dict()["columns"] == ["n"]
    assert db.count(table) == 0
    kept = pgpour.explain(data, table, db=db.conninfo, header=True, keep_indexes=True)
    assert kept.indexes["not_used"] == "keep_indexes=True"


def test_sniff_says_what_a_file_is_and_how_to_load_it(db, tmp_path):
    data = tmp_path / "Sales 2024.csv"
    data.write_bytes(b"region;amount;day\nnorth;12.5;2024-01-02\nsouth;7;2024-01-03\n")
    sniffed = pgpour.sniff(data)
    assert sniffed.sniffed["dialect"]["delimiter"] == ord(";")
    assert sniffed.create_table == "CREATE TABLE sales_2024 (region text, amount numeric, day date)"
    assert sniffed.load_options == {"format": "csv", "delimiter": ";", "header": True}
    table = db.table("region text, amount numeric, day date")
    result = pgpour.load(data, table, db=db.conninfo, **sniffed.load_options)
    assert result.rows_loaded == 2
    typed = pgpour.sniff(data, table='public."Sales"', types={"amount": "text"})
    assert typed.create_table == 'CREATE TABLE public."Sales" (region text, amount text, day date)'
