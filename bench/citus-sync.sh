#!/usr/bin/env bash
# What synchronous chunk commits cost on a Citus table through the
# coordinator: psql \copy, and two pgpour binaries (an older one whose
# chunks committed asynchronously, and a newer one), each loading with
# --citus-route coordinator, runs alternating, on a throwaway cluster (a
# coordinator and two workers on this machine, ../shared/citus/cluster.sh).
# votes (username, link, score) distributed by link into 32 shards. Wall
# seconds per run; medians come from the lines printed.
#
# Both binaries built with `cargo build --release --bin pgpour`.
#
#   bench/citus-sync.sh OLD_PGPOUR NEW_PGPOUR [ROWS] [RUNS] [PORT]
set -euo pipefail
cd "$(dirname "$0")/.."
old=$1
new=$2
rows=${3:-2000000}
runs=${4:-5}
port=${5:-9750}
dir=$(mktemp -d)
chmod 755 "$dir"
cleanup() { bash ../shared/citus/cluster.sh "$dir/cluster" stop; rm -rf "$dir"; }
trap cleanup EXIT
conninfo=$(bash ../shared/citus/cluster.sh "$dir/cluster" "$port")
$new gen votes --rows "$rows" -o "$dir/data.csv"
q() { psql -qX "$conninfo" -c "$1"; }
q "DROP TABLE IF EXISTS vd"
q "CREATE TABLE vd (username text, link text, score int)"
q "SET citus.shard_count = 32; SELECT create_distributed_table('vd', 'link')" > /dev/null
echo "machine: $(nproc) cores; votes $rows rows; Citus $(psql -AtX "$conninfo" -c "SELECT extversion FROM pg_extension WHERE extname = 'citus'")"
for run in $(seq "$runs"); do
  for method in psql pgpour-async pgpour-sync; do
    q "TRUNCATE vd"
    q "CHECKPOINT"
    case $method in
      psql) command=(psql -qX "$conninfo" -c "\\copy vd FROM '$dir/data.csv' WITH (FORMAT csv)") ;;
      pgpour-async) command=("$old" load "$dir/data.csv" -t vd -d "$conninfo" -q --citus-route coordinator) ;;
      pgpour-sync) command=("$new" load "$dir/data.csv" -t vd -d "$conninfo" -q --citus-route coordinator) ;;
    esac
    start=$(date +%s.%N)
    "${command[@]}" > /dev/null
    end=$(date +%s.%N)
    rows_in=$(psql -AtX "$conninfo" -c "SELECT count(*) FROM vd")
    printf '%-14s run %s: %6.2f s, %s rows\n' "$method" "$run" "$(echo "$end - $start" | bc)" "$rows_in"
  done
done
