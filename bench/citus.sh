#!/usr/bin/env bash
# Loads into a Citus table: psql \copy through the coordinator, pgpour
# through the coordinator (--citus-route coordinator) and pgpour straight
# to the shards (the default), runs alternating, on a throwaway cluster (a
# coordinator and two workers on this machine, ../shared/citus/cluster.sh;
# Citus installed by ../shared/citus/install.sh). votes (username, link,
# score) distributed by link, or lineitem distributed by l_orderkey, into
# 32 shards; the workers allow only 20 prepared transactions, as in the
# report that found pgpour failing with SQLSTATE 53200. Wall seconds, the
# client's CPU, and the CPU each node's server processes spent (from
# /proc/<pid>/stat: the postmaster's own and its ended children's, and its
# live children's).
#
#   bench/citus.sh [ROWS] [RUNS] [PORT] [votes|lineitem]
set -euo pipefail
cd "$(dirname "$0")/.."
rows=${1:-2000000}
runs=${2:-3}
port=${3:-9700}
dataset=${4:-votes}
cargo build --release --quiet --bin pgpour
pgpour=$(pwd)/target/release/pgpour
dir=$(mktemp -d)
chmod 755 "$dir"
cleanup() { bash ../shared/citus/cluster.sh "$dir/cluster" stop; rm -rf "$dir"; }
trap cleanup EXIT
conninfo=$(bash ../shared/citus/cluster.sh "$dir/cluster" "$port")
for p in $((port + 1)) $((port + 2)); do
  psql -qh 127.0.0.1 -p "$p" -U postgres -c "ALTER SYSTEM SET max_prepared_transactions = 20"
  runuser -u postgres -- "$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)/pg_ctl" \
    -D "$dir/cluster/node-$p" -m fast -w restart > /dev/null
done
$pgpour gen "$dataset" --rows "$rows" -o "$dir/data.csv"
q() { psql -qX "$conninfo" -c "$1"; }
q "DROP TABLE IF EXISTS vd"
case $dataset in
  votes)
    q "CREATE TABLE vd (username text, link text, score int)"
    key=link ;;
  lineitem)
    q "$($pgpour gen lineitem --ddl | sed 's/"lineitem"/vd/')"
    key=l_orderkey ;;
esac
q "SET citus.shard_count = 32; SELECT create_distributed_table('vd', '$key')" > /dev/null
# CPU seconds (user + system) of every process of the node on `port`.
node_cpu() {
  local pid ticks=0
  pid=$(head -1 "$dir/cluster/node-$1/postmaster.pid")
  for p in $pid $(pgrep -P "$pid"); do
    ticks=$((ticks + $(awk '{print $14 + $15 + $16 + $17}' "/proc/$p/stat" 2> /dev/null || echo 0)))
  done
  echo "$ticks"
}
echo "machine: $(nproc) cores; $dataset $rows rows; Citus $(psql -AtX "$conninfo" -c "SELECT extversion FROM pg_extension WHERE extname = 'citus'")"
for run in $(seq "$runs"); do
  for method in psql pgpour-coordinator pgpour-shards; do
    q "TRUNCATE vd"
    before=()
    for i in 0 1 2; do before+=("$(node_cpu $((port + i)))"); done
    start=$(date +%s.%N)
    case $method in
      psql) command=(psql -qX "$conninfo" -c "\\copy vd FROM '$dir/data.csv' WITH (FORMAT csv)") ;;
      pgpour-coordinator) command=("$pgpour" load "$dir/data.csv" -t vd -d "$conninfo" -q --citus-route coordinator) ;;
      pgpour-shards) command=("$pgpour" load "$dir/data.csv" -t vd -d "$conninfo" -q --citus-route shards) ;;
    esac
    client=$( { /usr/bin/time -f '%U %S' "${command[@]}" > /dev/null; } 2>&1 | tail -1 | awk '{print $1 + $2}')
    end=$(date +%s.%N)
    cpu=""
    for i in 0 1 2; do
      cpu+=" $(echo "scale=2; ($(node_cpu $((port + i))) - ${before[$i]}) / $(getconf CLK_TCK)" | bc)"
    done
    rows_in=$(psql -AtX "$conninfo" -c "SELECT count(*) FROM vd")
    printf '%-20s run %s: %6.2f s, %s rows; client CPU %s s; node CPU s (coordinator, worker 1, worker 2):%s\n' \
      "$method" "$run" "$(echo "$end - $start" | bc)" "$rows_in" "$client" "$cpu"
  done
done
