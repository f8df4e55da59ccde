"""Ctrl-C from outside: a real SIGINT sent to a Python process that is
loading, as a terminal sends it. The load stops at a chunk boundary, the
program sees a KeyboardInterrupt, and the load resumes exactly once from
another process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pgpour
import pytest
from conftest import cli, unique

ROWS = 400000


@pytest.fixture(scope="module")
def votes(pgpour_bin, tmp_path_factory):
    """A file big enough that a debug build takes seconds to load it in
    64 KiB chunks on one worker."""
    data = tmp_path_factory.mktemp("sigint") / "votes.csv"
    made = cli(pgpour_bin, "gen", "votes", "--rows", str(ROWS), "-o", str(data))
    assert made.returncode == 0, made.stderr
    return data

# The loading program: one line on stdout once a chunk has committed, then
# what the interrupt said, as JSON.
CHILD = r"""
import json, sys
import pgpour

data, table, db, load_id, catch = sys.argv[1:]
told = False

def watch(event):
    global told
    if event.rows_loaded > 0 and not told:
        told = True
        print("committed", flush=True)

def run():
    pgpour.load(data, table, db=db, load_id=load_id, chunk_size="64KiB", workers=1, progress=watch)

if catch == "no":
    run()
try:
    run()
except KeyboardInterrupt as stopped:
    print(json.dumps({
        "class": type(stopped).__name__,
        "load_id": stopped.load_id,
        "rows_loaded": stopped.result.rows_loaded,
        "interrupted": stopped.result.interrupted,
        "message": str(stopped),
    }), flush=True)
    sys.exit(130)
print("finished", flush=True)
"""


def interrupted_child(db, data, table, load_id, catch="yes"):
    """Starts the loading program, sends it SIGINT once a chunk committed;
    its exit status and the rest of its stdout."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(data), table, db.conninfo, load_id, catch],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        first = child.stdout.readline()
        assert first == "committed\n", (first, child.stderr.read())
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    return child.returncode, out, err


def test_sigint_from_outside_stops_a_load_that_resumes_in_another_process(db, pgpour_bin, votes):
    data = votes
    table = db.table("username text, link text, score int")
    load_id = unique("sigint-votes")
    code, out, err = interrupted_child(db, data, table, load_id)
    assert code == 130, (out, err)
    told = json.loads(out)
    assert told["class"] == "Interrupted" and told["interrupted"]
    assert told["load_id"] == load_id
    assert 0 < told["rows_loaded"] < ROWS
    assert f"pgpour.resume({load_id!r})" in told["message"]
    # Whole chunks only: the table holds what the journal says committed.
    assert db.count(table) == told["rows_loaded"]
    [entry] = pgpour.status(load_id, db=db.conninfo)
    assert entry.state != "done" and not entry.live
    result = pgpour.resume(load_id, db=db.conninfo)
    assert result.resumed_chunks > 0
    assert result.rows_loaded + told["rows_loaded"] == ROWS
    again = db.table("username text, link text, score int")
    ran = cli(pgpour_bin, "load", str(data), "--table", again, "--db", db.conninfo, "--quiet")
    assert ran.returncode == 0, ran.stderr
    assert db.same_rows(f"TABLE {table}", f"TABLE {again}")


def test_an_uncaught_interrupt_ends_the_program_saying_how_to_resume(db, votes):
    table = db.table("username text, link text, score int")
    load_id = unique("sigint-uncaught")
    code, out, err = interrupted_child(db, votes, table, load_id, catch="no")
    # A traceback and status 1: CPython ends a program by SIGINT only for
    # an uncaught KeyboardInterrupt of that very class, not a subclass.
    assert code == 1, (code, out, err)
    last = err.strip().splitlines()[-1]
    assert last == (
        "pgpour.errors.Interrupted: interrupted: whole chunks were committed and recorded; "
        f"continue with pgpour.resume({load_id!r})"
    )
    committed = db.count(table)
    assert 0 < committed < ROWS
    assert pgpour.resume(load_id, db=db.conninfo).rows_loaded == ROWS - committed
    assert db.count(table) == ROWS
