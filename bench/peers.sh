#!/bin/bash
# pgpour beside the other loaders (pg_bulkload DIRECT and PARALLEL, pgloader,
# timescaledb-parallel-copy, DuckDB, ADBC, psycopg) and psql-style COPY, on a
# durable cluster of PostgreSQL's defaults started in /tmp/pgpeers as the
# postgres user (stopped at the end), with pg_bulkload's extension created.
# Missing loaders are listed as skipped with their install command.
#   bench/peers.sh [DATASET] [ROWS] [REPEAT] [APPEND_TO]   (as root, from the repository)
#   e.g. bench/peers.sh votes 7500000 3          (seed 001's comparison)
#        bench/peers.sh customer 4000000 3       (seed 004, initial load)
#        bench/peers.sh customer 1000000 3 4000000   (seed 004, append 1M to 4M)
# PGPOUR_BENCH_PYTHON names a Python with adbc-driver-postgresql, pyarrow
# and psycopg for the Python loaders.
set -e
DATASET=${1:-votes}
ROWS=${2:-1000000}
REPEAT=${3:-3}
APPEND_TO=${4:-}
B=${PGPOUR_PG_BIN:-/usr/lib/postgresql/15/bin}
. "$(dirname "$0")/cluster.sh"
D=/tmp/pgpeers
PORT=5498
cargo build -q --release --bin pgpour
PGPOUR=$PWD/target/release/pgpour
start_cluster $D $PORT
psql -X -q -h $D -p $PORT -U postgres -d postgres -c "CREATE EXTENSION IF NOT EXISTS pg_bulkload" || true
METHODS=copy-csv,copy-binary,pgpour,pg_bulkload-direct,pg_bulkload-parallel,pgloader,timescaledb-parallel-copy,duckdb,adbc-ingest,psycopg-copy
OUT=bench/results/$(date +%F)-peers-$DATASET-$ROWS${APPEND_TO:+-append-$APPEND_TO}
$PGPOUR bench --db "$DB" --dataset $DATASET --rows $ROWS --repeat $REPEAT --methods $METHODS \
  --check-rows --work-dir $D ${APPEND_TO:+--append-to $APPEND_TO} --report $OUT.html | tee $OUT.txt
