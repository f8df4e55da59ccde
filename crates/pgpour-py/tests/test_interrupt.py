"""Ctrl-C during a load: it stops at a chunk boundary, raises
pgpour.Interrupted (a KeyboardInterrupt), and resumes exactly once (a file
load) or cannot be resumed at all (an in-memory frame)."""

from __future__ import annotations

import _thread
import os
import signal
import threading
import time

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


def _interrupt_main() -> None:
    _thread.interrupt_main()


def _sigint() -> None:
    os.kill(os.getpid(), signal.SIGINT)


@pytest.mark.parametrize("send", [_interrupt_main, _sigint], ids=["interrupt_main", "sigint"])
def test_ctrl_c_stops_a_frame_load_in_bounded_time_and_commits_whole_chunks_only(db, send):
    pa = pytest.importorskip("pyarrow")
    batches, size = 500, 1000
    schema = pa.schema([("i", pa.int64()), ("v", pa.string())])
    pulled = [0]

    sent = threading.Event()

    def frame(hold=False):
        """A big frame made as it is read: a generator behind a
        RecordBatchReader, each batch built when the load pulls it. `hold`:
        halfway, it waits for the interrupt (up to a minute), so that the
        interrupt comes before the end however fast the load is."""
        def make():
            for b in range(batches):
                if hold and b == batches // 2:
                    sent.wait(60)
                pulled[0] += 1
                first = b * size
                yield pa.record_batch(
                    [pa.array(range(first, first + size), pa.int64()),
                     pa.array([f"row {k}" for k in range(first, first + size)])],
                    schema=schema,
                )
        return pa.RecordBatchReader.from_batches(schema, make())

    table = db.table("i bigint, v text")
    load_id = unique("interrupted-frame")
    committed = threading.Event()
    sent_at = []

    def watch(event):
        if event.rows_loaded > 0:
            committed.set()

    def interrupt():
        committed.wait(60)
        sent_at.append(time.monotonic())
        send()
        sent.set()

    sender = threading.Thread(target=interrupt)
    sender.start()
    with pytest.raises(pgpour.Interrupted) as raised:
        pgpour.load(
            frame(hold=True), table, db=db.conninfo, load_id=load_id,
            chunk_size="64KiB", workers=2, progress=watch,
        )
    raised_at = time.monotonic()
    sender.join()
    # Within bounded time: the calling thread looks at signals every tenth
    # of a second, and the load stops at its next chunk boundary.
    assert raised_at - sent_at[0] < 10
    stopped = raised.value
    assert isinstance(stopped, KeyboardInterrupt)
    assert stopped.result.interrupted and stopped.load_id == load_id
    assert "cannot be resumed" in str(stopped)
    # The stream is no longer pulled once the call has returned.
    pulled_then = pulled[0]
    assert pulled_then < batches
    time.sleep(0.5)
    assert pulled[0] == pulled_then
    # Whole chunks only, each row once: what the result says committed.
    loaded = stopped.result.rows_loaded
    assert 0 < loaded < batches * size
    assert db.sql(f"SELECT count(*), count(DISTINCT i) FROM {table} WHERE v = 'row ' || i") == f"{loaded}|{loaded}"
    # Nothing a later call would load again on top: the load cannot be
    # resumed, nor taken up by a new call under its id...
    with pytest.raises(pgpour.LoadError, match="cannot be resumed"):
        pgpour.resume(load_id, db=db.conninfo)
    with pytest.raises(pgpour.LoadError, match="cannot be resumed"):
        pgpour.load(frame(), table, db=db.conninfo, load_id=load_id)
    assert db.count(table) == loaded
    # ...and loading it again from the start (truncate=True) holds every
    # row once.
    result = pgpour.load(frame(), table, db=db.conninfo, truncate=True, workers=2)
    assert result.rows_loaded == batches * size
    assert db.sql(f"SELECT count(*), count(DISTINCT i) FROM {table}") == f"{batches * size}|{batches * size}"
