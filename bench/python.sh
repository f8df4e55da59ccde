#!/usr/bin/env bash
# In-memory frames from Python: pgpour.load of a pyarrow Table against
# adbc_ingest (append), psycopg 3's copy() with write_row, and polars'
# write_database(engine="adbc") of the same rows as a polars DataFrame, into
# the same lineitem table of a throwaway PostgreSQL cluster (default
# durability), runs alternated, medians.
#
# The rows are `pgpour gen lineitem`, read by pyarrow into a Table with
# int64/int32 keys, decimal128(15,2) money, date32 dates and strings, and
# kept as an Arrow IPC file; each run is a Python process of its own that
# reads that file into memory, then times the load alone. Peak memory is
# the process's peak RSS, and "added" is the peak less the RSS once the
# frame was in memory: what the load itself took. The package is built in
# release mode into a virtual environment kept in target/bench-py-venv
# (pyarrow, polars, adbc-driver-postgresql and psycopg from PyPI).
#
#   bench/python.sh                        # 2M rows, 1 run of each
#   bench/python.sh --rows 6000000 --repeat 3
#   bench/python.sh --methods "adbc polars psycopg"   # some methods only
set -euo pipefail
cd "$(dirname "$0")/.."
rows=2000000 repeat=1 methods="pgpour pgpour-no-journal adbc polars psycopg"
while [ $# -gt 0 ]; do
  case "$1" in
    --rows) rows=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --methods) methods=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
bin=$(pg_config --bindir 2>/dev/null || echo /usr/lib/postgresql/15/bin)
[ -x "$bin/initdb" ] || bin=/usr/lib/postgresql/15/bin
# The CLI writes the rows (`gen`); PGPOUR names a built one to use instead.
if [ -n "${PGPOUR:-}" ]; then pgpour=$PGPOUR; else
  cargo build --release --quiet --bin pgpour
  pgpour=$PWD/target/release/pgpour
fi
venv=$PWD/target/bench-py-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -c 'import pyarrow, polars, adbc_driver_postgresql, psycopg, maturin' 2>/dev/null ||
  "$venv/bin/pip" install -q --disable-pip-version-check pyarrow polars adbc-driver-postgresql \
    adbc-driver-manager "psycopg[binary]" "maturin>=1.9.4,<2" >&2
case " $methods " in *" pgpour"*)
  echo "building the package (release)..." >&2
  PATH=$venv/bin:$PATH "$venv/bin/pip" install -q --disable-pip-version-check --no-build-isolation \
    --no-deps --force-reinstall ./crates/pgpour-py >&2 ;;
esac
work=$(mktemp -d)
trap '"$bin/pg_ctl" -D "$work/data" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr)" >&2

as_pg=()
if [ "$(id -u)" = 0 ]; then chown -R postgres "$work"; chmod 755 "$work"; as_pg=(runuser -u postgres --); fi
"${as_pg[@]}" "$bin/initdb" -D "$work/data" -A trust -U postgres >/dev/null
"${as_pg[@]}" "$bin/pg_ctl" -D "$work/data" -l "$work/log" -w \
  -o "-k $work -p 5498 -c listen_addresses='' -c max_wal_size=4GB" start >/dev/null
export PGHOST=$work PGPORT=5498 PGUSER=postgres PGDATABASE=postgres
uri="postgresql://postgres@/postgres?host=$work&port=5498"

echo "writing $rows rows of lineitem..." >&2
"$pgpour" gen lineitem --rows "$rows" -o "$work/lineitem.csv"
"$venv/bin/python" bench/lineitem.py "$work/lineitem.csv" "$work/lineitem.arrow"
rm "$work/lineitem.csv"
psql -q -c "$("$pgpour" gen lineitem --ddl)"

# One method's run: "seconds peak_mib added_mib" on stdout.
cat >"$work/run.py" <<'PY'
import resource, sys, time
import pyarrow as pa

method, path, uri, rows = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
table = pa.ipc.open_file(path).read_all()
frame = table
if method == "polars":
    import polars as pl
    frame = pl.from_arrow(table)
    del table

def rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20

def load():
    if method.startswith("pgpour"):
        import pgpour
        result = pgpour.load(frame, "lineitem", db=uri, no_journal=method == "pgpour-no-journal")
        assert result.rows_loaded == rows, result
    elif method == "adbc":
        import adbc_driver_postgresql.dbapi as adbc
        with adbc.connect(uri) as conn:
            with conn.cursor() as cur:
                assert cur.adbc_ingest("lineitem", frame, mode="append") in (rows, -1)
            conn.commit()
    elif method == "polars":
        frame.write_database("lineitem", uri, engine="adbc", if_table_exists="append")
    elif method == "psycopg":
        import psycopg
        names = ", ".join(frame.column_names)
        with psycopg.connect(uri) as conn, conn.cursor() as cur:
            with cur.copy(f"COPY lineitem ({names}) FROM STDIN") as copy:
                for batch in frame.to_batches():
                    for row in zip(*(c.to_pylist() for c in batch.columns)):
                        copy.write_row(row)
    else:
        raise SystemExit(f"no method {method}")

before = rss_mib()
started = time.perf_counter()
load()
seconds = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"{seconds:.2f} {peak:.0f} {max(peak - before, 0):.0f}")
PY

for i in $(seq "$repeat"); do
  for m in $methods; do
    psql -q -c "TRUNCATE lineitem; CHECKPOINT"
    "$venv/bin/python" "$work/run.py" "$m" "$work/lineitem.arrow" "$uri" "$rows" >>"$work/$m"
    n=$(psql -At -c "SELECT count(*) FROM lineitem")
    [ "$n" = "$rows" ] || { echo "$m loaded $n rows, not $rows" >&2; exit 1; }
    echo "run $i of $repeat: $m $(tail -1 "$work/$m")" >&2
  done
done
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
seconds_of() { cut -d' ' -f1 "$work/$1" | median; }
pgpour_s=$( [ -s "$work/pgpour" ] && seconds_of pgpour || echo 0)
row() {
  local m=$1 name=$2 s peak added
  [ -s "$work/$m" ] || return 0
  s=$(seconds_of "$m"); peak=$(cut -d' ' -f2 "$work/$m" | median); added=$(cut -d' ' -f3 "$work/$m" | median)
  awk -v name="$name" -v s="$s" -v rows="$rows" -v peak="$peak" -v added="$added" -v p="$pgpour_s" \
    'BEGIN {printf "| %s | %s | %.0f | %s | %s | %s |\n", name, s, rows / s, peak, added, (p > 0 ? sprintf("%.2f", s / p) : "-")}'
}
echo "lineitem, $rows rows in memory ($(du -m "$work/lineitem.arrow" | cut -f1) MiB as Arrow); PostgreSQL $(psql -At -c 'SHOW server_version'); medians of $repeat alternated runs"
echo "$("$venv/bin/python" -c 'import pyarrow, polars, psycopg, adbc_driver_postgresql as a; print(f"pyarrow {pyarrow.__version__}, polars {polars.__version__}, psycopg {psycopg.__version__}, adbc-driver-postgresql {a.__version__}")')"
echo
echo "| method | seconds | rows/s | peak RSS MiB | added by the load MiB | pgpour's speed over it |"
echo "|---|---|---|---|---|---|"
row pgpour "pgpour.load(table) (journaled)"
row pgpour-no-journal "pgpour.load(table, no_journal=True)"
row adbc "adbc_ingest(mode=\"append\")"
row polars "polars write_database(engine=\"adbc\")"
row psycopg "psycopg copy() + write_row"
