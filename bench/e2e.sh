#!/usr/bin/env bash
# End-to-end comparison on this machine: pgpour vs psql \copy vs server-side
# COPY FROM '/file', same server, table and data, medians of repeated runs.
# Starts a throwaway cluster with PostgreSQL's default durability unless
# --db is given. Results go to stdout as markdown tables (progress on stderr).
#
#   bench/e2e.sh                  # votes 7.5M, kv 10M, lineitem 6M and
#                                 # extract 2M rows, then 1M customer rows
#                                 # appended to 4M, 3 runs each
#   bench/e2e.sh --repeat 5 --variants 'default;--workers 3'
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin pgpour --bin e2e-bench
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr)"
for spec in "votes 7500000" "kv 10000000" "lineitem 6000000" "extract 2000000"; do
  set -- $spec "$@"
  dataset=$1 rows=$2; shift 2
  target/release/e2e-bench --dataset "$dataset" --rows "$rows" "$@"
done
# Appends into a big indexed table: 1M customer rows after 4M.
target/release/e2e-bench --dataset customer --rows 1000000 --append-to 4000000 "$@"
