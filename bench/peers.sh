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
D=/tmp/pgpeers
PORT=5498
cargo build -q --release --bin pgpour
PGPOUR=$PWD/target/release/pgpour
rm -rf $D && mkdir -p $D && chown postgres $D
su postgres -c "$B/initdb -D $D/data -A trust -E UTF8 --locale=C >/dev/null && printf \"listen_addresses=''\nunix_socket_directories='$D'\nport=$PORT\n\" >> $D/data/postgresql.conf && $B/pg_ctl -D $D/data -l $D/log start >/dev/null"
trap 'su postgres -c "$B/pg_ctl -D $D/data stop -m fast" >/dev/null' EXIT
DB="host=$D port=$PORT user=postgres dbname=postgres"
psql -X -q -h $D -p $PORT -U postgres -d postgres -c "CREATE EXTENSION IF NOT EXISTS pg_bulkload" || true
METHODS=copy-csv,copy-binary,pgpour,pg_bulkload-direct,pg_bulkload-parallel,pgloader,timescaledb-parallel-copy,duckdb,adbc-ingest,psycopg-copy
OUT=bench/results/$(date +%F)-peers-$DATASET-$ROWS${APPEND_TO:+-append-$APPEND_TO}
$PGPOUR bench --db "$DB" --dataset $DATASET --rows $ROWS --repeat $REPEAT --methods $METHODS \
  --check-rows --work-dir $D ${APPEND_TO:+--append-to $APPEND_TO} --report $OUT.html | tee $OUT.txt
