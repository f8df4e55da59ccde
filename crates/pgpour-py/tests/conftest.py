"""Fixtures of the package's tests: the test kit's database (its conninfo in
PGPOUR_TEST_CONNINFO, set by crates/pgpour-cli/tests/python.rs), psql to
read what was loaded, and the CLI binary (PGPOUR_BIN) to compare with."""

from __future__ import annotations

import itertools
import os
import subprocess
from typing import List

import pytest

_names = itertools.count()


class Database:
    def __init__(self, conninfo: str, psql: str) -> None:
        self.conninfo = conninfo
        self.psql = psql

    def sql(self, statements: str) -> str:
        """Runs SQL with psql; its unaligned output."""
        out = subprocess.run(
            [self.psql, self.conninfo, "-XAtq", "-v", "ON_ERROR_STOP=1", "-c", statements],
            check=True,
            capture_output=True,
            text=True,
        )
        return out.stdout.strip()

    def rows(self, table: str, order: str = "1") -> List[str]:
        text = self.sql(f"SELECT t::text FROM {table} t ORDER BY {order}")
        return text.splitlines() if text else []

    def count(self, table: str) -> int:
        return int(self.sql(f"SELECT count(*) FROM {table}"))

    def same_rows(self, a: str, b: str) -> bool:
        """Whether two queries give the same multiset of rows."""
        return self.sql(
            f"SELECT count(*) FROM (({a} EXCEPT ALL {b}) UNION ALL ({b} EXCEPT ALL {a})) d"
        ) == "0"

    def table(self, columns: str) -> str:
        """A new table of these columns, with a name of its own."""
        name = f"t{os.getpid()}_{next(_names)}"
        self.sql(f"CREATE TABLE {name} ({columns})")
        return name


@pytest.fixture(scope="session")
def db() -> Database:
    conninfo = os.environ.get("PGPOUR_TEST_CONNINFO")
    if not conninfo:
        pytest.exit("PGPOUR_TEST_CONNINFO is not set: run these tests with `cargo test`", 2)
    return Database(conninfo, os.environ.get("PGPOUR_PSQL", "psql"))


@pytest.fixture(scope="session")
def pgpour_bin() -> str:
    path = os.environ.get("PGPOUR_BIN")
    if not path:
        pytest.exit("PGPOUR_BIN is not set: run these tests with `cargo test`", 2)
    return path


def unique(name: str) -> str:
    """A load id no other test (or earlier run on the same server) uses."""
    return f"{name}-{os.getpid()}-{next(_names)}"


def cli(pgpour_bin: str, *args: str) -> subprocess.CompletedProcess:
    """The `pgpour` command with `args`, its output as text."""
    return subprocess.run([pgpour_bin, *args], capture_output=True, text=True)
