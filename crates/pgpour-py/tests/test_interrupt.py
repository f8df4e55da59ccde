"""Ctrl-C during a load: it stops at a chunk boundary, raises
pgpour.Interrupted (a KeyboardInterrupt), and resumes exactly once."""

from __future__ import annotations

import os
import signal
import threading

import pgpour
import pytest
from conftest import cli, unique


def test_sigint_stops_a_file_load_that_resumes_exactly_once(db, pgpour_bin, tmp_path):
    data = tmp_path / "votes.csv"
    made = cli(pgpour_bin, "gen", "votes", "--rows", "400000", "-o", str(data))
    assert made.returncode == 0, made.stderr
    table = db.table("username text, link text, score int")
    committed = threading.Event()
    load_id = unique("interrupted-votes")

    def watch(event):
        if event.rows_loaded > 0:
            committed.set()

    def interrupt():
        # From another thread, as a terminal's Ctrl-C would come: while the
        # GIL is released and the engine loads.
        committed.wait(60)
        os.kill(os.getpid(), signal.SIGINT)

    sender = threading.Thread(target=interrupt)
    sender.start()
    with pytest.raises(pgpour.Interrupted) as raised:
        pgpour.load(
            data, table, db=db.conninfo, load_id=load_id,
            chunk_size="64KiB", workers=1, progress=watch,
        )
    sender.join()
    stopped = raised.value
    assert isinstance(stopped, KeyboardInterrupt)
    assert stopped.load_id == load_id
    assert stopped.result.interrupted
    assert 0 < stopped.result.rows_loaded < 400000
    assert f"pgpour.resume({load_id!r})" in str(stopped)
    assert db.count(table) == stopped.result.rows_loaded
    [entry] = pgpour.status(load_id, db=db.conninfo)
    assert entry.state != "done" and not entry.live
    result = pgpour.resume(load_id, db=db.conninfo)
    assert result.resumed_chunks > 0
    assert db.count(table) == 400000
    # Every row once: the table equals the CLI's load of the same file.
    again = db.table("username text, link text, score int")
    ran = cli(pgpour_bin, "load", str(data), "--table", again, "--db", db.conninfo, "--quiet")
    assert ran.returncode == 0, ran.stderr
    assert db.same_rows(f"TABLE {table}", f"TABLE {again}")


def test_an_exception_from_the_progress_callable_stops_the_load(db, tmp_path):
    data = tmp_path / "n.csv"
    data.write_bytes(b"".join(b"%d\n" % i for i in range(300000)))
    table = db.table("n int")
    load_id = unique("enough")

    class Enough(Exception):
        pass

    def stop(event):
        if event.rows_loaded > 0:
            raise Enough()

    with pytest.raises(Enough) as raised:
        pgpour.load(data, table, db=db.conninfo, chunk_size="16KiB", workers=1, progress=stop, load_id=load_id)
    result = raised.value.pgpour_result
    assert result.interrupted and result.rows_loaded == db.count(table) < 300000
    assert pgpour.resume(load_id, db=db.conninfo).rows_loaded + result.rows_loaded == 300000
