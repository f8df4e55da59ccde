"""What the installed package is: one abi3 module for Python 3.9 and
later, type information (py.typed, stubs) and a docstring on everything
public; and the progress bar drawn on a terminal."""

from __future__ import annotations

import importlib.metadata
import inspect
import os
import pathlib
import pty
import subprocess
import sys

import pgpour
from pgpour import _native


def test_the_native_module_is_built_for_the_stable_abi():
    # One wheel for every CPython from 3.9 on: the module is named for the
    # stable ABI, not for this interpreter's version.
    assert pathlib.Path(_native.__file__).name == "_native.abi3.so"
    # The wheel pip built and installed says so too: CPython 3.9 and later.
    wheel = importlib.metadata.distribution("pgpour").read_text("WHEEL")
    tags = [line.split(": ", 1)[1] for line in wheel.splitlines() if line.startswith("Tag: ")]
    assert tags and all(t.startswith("cp39-abi3-") for t in tags), wheel


def test_types_and_docstrings_ship_with_the_package():
    package = pathlib.Path(pgpour.__file__).parent
    assert (package / "py.typed").exists()
    assert (package / "_native.pyi").exists()
    assert pgpour.__doc__
    for name in pgpour.__all__:
        member = getattr(pgpour, name)
        assert inspect.getdoc(member), f"pgpour.{name} has no docstring"
        if inspect.isfunction(member):
            hints = inspect.signature(member)
            assert hints.return_annotation is not inspect.Signature.empty, name


def test_progress_true_draws_a_bar_on_a_terminal(db, tmp_path):
    data = tmp_path / "many.csv"
    data.write_bytes(b"".join(b"%d\n" % i for i in range(300000)))
    table = db.table("n int")
    program = (
        "import sys, pgpour\n"
        "pgpour.load(sys.argv[1], sys.argv[2], db=sys.argv[3], progress=True, "
        "chunk_size='64KiB', workers=1)\n"
    )
    leader, follower = pty.openpty()
    child = subprocess.Popen(
        [sys.executable, "-c", program, str(data), table, db.conninfo],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=follower,
    )
    os.close(follower)
    drawn = b""
    while True:
        try:
            got = os.read(leader, 4096)
        except OSError:  # the terminal closed with the program
            break
        if not got:
            break
        drawn += got
    os.close(leader)
    assert child.wait(timeout=120) == 0, drawn
    assert db.count(table) == 300000
    text = drawn.decode()
    # Redrawn in place (carriage returns), with the rows counted, and
    # wiped at the end.
    assert " rows | " in text and "rows/s" in text
    assert text.count("\r") > 1
    assert text.endswith("\r")
