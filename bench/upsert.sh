#!/usr/bin/env bash
# Upserts of kv (bigint key, short text) against what people do by hand
# with psql: COPY into a temporary table, then one INSERT ... ON CONFLICT in
# the same session. Into an empty table (every row inserted) and into a
# table that holds every key already (every row updated, or skipped).
# Wall seconds of each run, on the server the PG* variables name; the
# table kv is dropped and made again.
#
#   PGHOST=/tmp PGPORT=5432 bench/upsert.sh [ROWS] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
rows=${1:-1000000}
runs=${2:-3}
cargo build --release --quiet --bin pgpour
pgpour=target/release/pgpour
file=$(mktemp --suffix .csv)
trap 'rm -f "$file"' EXIT
$pgpour gen kv --rows "$rows" > "$file"
echo "machine: $(nproc) cores; kv $rows rows; $(psql -Atc 'SHOW server_version')"

timed() {
  local name=$1; shift
  local start end
  start=$(date +%s.%N)
  "$@" > /dev/null 2>&1
  end=$(date +%s.%N)
  printf '%-36s %6.2f s\n' "$name" "$(echo "$end - $start" | bc)"
}
empty() { psql -qc "DROP TABLE IF EXISTS kv; CREATE TABLE kv (id bigint PRIMARY KEY, value text)"; }
full() { empty; psql -qc "\\copy kv FROM '$file' WITH (FORMAT csv)"; psql -qc "VACUUM ANALYZE kv"; psql -qc "CHECKPOINT"; }
by_hand() {
  psql -q -v ON_ERROR_STOP=1 <<SQL
BEGIN;
CREATE TEMPORARY TABLE staged (id bigint, value text) ON COMMIT DROP;
\\copy staged FROM '$file' WITH (FORMAT csv)
INSERT INTO kv SELECT * FROM staged ON CONFLICT (id) DO UPDATE SET value = EXCLUDED.value;
COMMIT;
SQL
}

for run in $(seq "$runs"); do
  echo "run $run"
  empty; timed "empty: psql \\copy" psql -qc "\\copy kv FROM '$file' WITH (FORMAT csv)"
  empty; timed "empty: psql by hand, upsert" by_hand
  empty; timed "empty: pgpour --on-conflict update" $pgpour load "$file" --table kv --on-conflict update
  full; timed "full: psql by hand, upsert" by_hand
  full; timed "full: pgpour --on-conflict update" $pgpour load "$file" --table kv --on-conflict update
  full; timed "full: pgpour --on-conflict skip" $pgpour load "$file" --table kv --on-conflict skip
done
