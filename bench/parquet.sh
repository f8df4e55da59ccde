#!/usr/bin/env bash
# Parquet in: pgpour loading a lineitem Parquet file vs psql \copy of the
# same rows as CSV, same server and table, runs alternated, medians.
# Starts a throwaway PostgreSQL 15 cluster (default durability) in a
# temporary directory. The CSV is `pgpour gen lineitem`; pyarrow (in a
# virtual environment under the work directory, from PyPI) writes it as
# Parquet, snappy, in row groups of --row-group rows (the environment is
# kept in target/bench-venv). Client CPU (user+sys)
# and peak memory come from /usr/bin/time. Results as markdown on stdout.
#
#   bench/parquet.sh                         # 2M rows, row groups of 500k, 3 runs
#   bench/parquet.sh --rows 6000000 --row-group 1000000 --repeat 5
set -euo pipefail
cd "$(dirname "$0")/.."
rows=2000000 row_group=500000 repeat=3 workers=""
while [ $# -gt 0 ]; do
  case "$1" in
    --rows) rows=$2; shift 2 ;;
    --row-group) row_group=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --workers) workers="--workers $2"; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
bin=$(pg_config --bindir 2>/dev/null || echo /usr/lib/postgresql/15/bin)
[ -x "$bin/initdb" ] || bin=/usr/lib/postgresql/15/bin
cargo build --release --quiet --bin pgpour
pgpour=$PWD/target/release/pgpour
work=$(mktemp -d)
trap '"$bin/pg_ctl" -D "$work/data" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr)" >&2

# The server, as postgres when run as root.
as_pg=()
if [ "$(id -u)" = 0 ]; then chown -R postgres "$work"; as_pg=(runuser -u postgres --); fi
"${as_pg[@]}" "$bin/initdb" -D "$work/data" -A trust -U postgres >/dev/null
"${as_pg[@]}" "$bin/pg_ctl" -D "$work/data" -l "$work/log" -w \
  -o "-k $work -p 5499 -c listen_addresses='' -c max_wal_size=4GB" start >/dev/null
export PGHOST=$work PGPORT=5499 PGUSER=postgres PGDATABASE=postgres

echo "writing $rows rows of lineitem as CSV and Parquet..." >&2
"$pgpour" gen lineitem --rows "$rows" -o "$work/lineitem.csv"
ddl=$("$pgpour" gen lineitem --ddl)
# Kept for the next run, beside the build.
venv=$PWD/target/bench-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -c 'import pyarrow' 2>/dev/null || "$venv/bin/pip" install -q pyarrow >&2
"$venv/bin/python" bench/lineitem.py "$work/lineitem.csv" "$work/lineitem.parquet" "$row_group"
psql -q -c "$ddl"
csv_size=$(stat -c %s "$work/lineitem.csv")
parquet_size=$(stat -c %s "$work/lineitem.parquet")

# One run: "seconds cpu_seconds peak_kib" of the client.
run() {
  psql -q -c "TRUNCATE lineitem; CHECKPOINT"
  /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$@" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
  local n
  n=$(psql -At -c "SELECT count(*) FROM lineitem")
  [ "$n" = "$rows" ] || { echo "loaded $n rows, not $rows" >&2; exit 1; }
  awk '{printf "%s %.2f %s\n", $1, $2 + $3, $4}' "$work/time"
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
: >"$work/pgpour" ; : >"$work/psql"
for i in $(seq "$repeat"); do
  run "$pgpour" load "$work/lineitem.parquet" --table lineitem -q --no-journal $workers >>"$work/pgpour"
  run psql -q -c "\\copy lineitem FROM '$work/lineitem.csv' (FORMAT csv)" >>"$work/psql"
  run "$pgpour" load "$work/lineitem.parquet" --table lineitem -q $workers >>"$work/pgpour-journal"
  echo "run $i of $repeat done" >&2
done
row() {
  local file=$1 name=$2 s cpu mem
  s=$(cut -d' ' -f1 "$file" | median); cpu=$(cut -d' ' -f2 "$file" | median)
  mem=$(cut -d' ' -f3 "$file" | median)
  awk -v name="$name" -v s="$s" -v cpu="$cpu" -v mem="$mem" -v rows="$rows" -v base="$psql_s" \
    'BEGIN {printf "| %s | %s | %.0f | %s | %d | %.2f |\n", name, s, rows / s, cpu, mem / 1024, base / s}'
}
psql_s=$(cut -d' ' -f1 "$work/psql" | median)
echo "lineitem, $rows rows: CSV $((csv_size >> 20)) MiB, Parquet (snappy, row groups of $row_group) $((parquet_size >> 20)) MiB; PostgreSQL $(psql -At -c 'SHOW server_version'); medians of $repeat alternated runs"
echo
echo "| method | seconds | rows/s | client CPU s | client peak MiB | speed vs psql \\copy |"
echo "|---|---|---|---|---|---|"
row "$work/psql" "psql \\copy (CSV)"
row "$work/pgpour" "pgpour load (Parquet, --no-journal)"
row "$work/pgpour-journal" "pgpour load (Parquet, journaled)"
