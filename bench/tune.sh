#!/bin/bash
# What `pgpour tune --apply` buys on this machine: the same load with the
# server's default settings and with the advice applied, alternated,
# REPEAT times each, beside psql \copy of the same file with the defaults.
# A durable cluster of PostgreSQL's defaults (fsync on) is started in
# /tmp/pgtune as the postgres user, and stopped at the end.
#   bench/tune.sh [DATASET] [ROWS] [REPEAT]     (run as root, from the repository)
#   e.g. bench/tune.sh votes 10000000 3; bench/tune.sh lineitem 5000000 3
set -e
DATASET=${1:-votes}
ROWS=${2:-5000000}
REPEAT=${3:-3}
B=${PGPOUR_PG_BIN:-/usr/lib/postgresql/15/bin}
. "$(dirname "$0")/cluster.sh"
D=/tmp/pgtune
PORT=5497
cargo build -q --release --bin pgpour
PGPOUR=$PWD/target/release/pgpour
start_cluster $D $PORT
P="psql -X -q -v ON_ERROR_STOP=1 -h $D -p $PORT -U postgres -d postgres"
FILE=$D/$DATASET.csv
$PGPOUR gen $DATASET --rows $ROWS -o $FILE
$P -c "$($PGPOUR gen $DATASET --ddl)"
TABLE=$($PGPOUR gen $DATASET --ddl | sed -E 's/^CREATE TABLE "?([a-z_]+)"? .*/\1/')
# votes' table has a serial key the file does not fill.
COLS=""; [ "$DATASET" = votes ] && COLS="username,link,score"
seconds() { local s=$(date +%s.%N); "$@" >/dev/null; echo "$(date +%s.%N) - $s" | bc; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
: > $D/psql; : > $D/default; : > $D/tuned
for r in $(seq $REPEAT); do
  $PGPOUR tune --revert --db "$DB" >/dev/null
  $P -c "TRUNCATE $TABLE; CHECKPOINT"
  seconds $P -c "\\copy $TABLE${COLS:+($COLS)} FROM '$FILE' WITH (FORMAT csv)" >> $D/psql
  $P -c "TRUNCATE $TABLE; CHECKPOINT"
  seconds $PGPOUR load $FILE --table $TABLE ${COLS:+--columns $COLS} --db "$DB" -q >> $D/default
  $PGPOUR tune --for $FILE --table $TABLE --apply --db "$DB" >/dev/null
  $P -c "TRUNCATE $TABLE; CHECKPOINT"
  seconds $PGPOUR load $FILE --table $TABLE ${COLS:+--columns $COLS} --db "$DB" -q >> $D/tuned
  $PGPOUR forget --db "$DB" --older-than 0s >/dev/null 2>&1 || true
done
$PGPOUR tune --for $FILE --table $TABLE --db "$DB" | grep -- '->' || true
$PGPOUR tune --revert --db "$DB" >/dev/null
psql_s=$(median < $D/psql | xargs printf %.2f); default_s=$(median < $D/default | xargs printf %.2f)
tuned_s=$(median < $D/tuned | xargs printf %.2f)
echo
echo "| $DATASET $ROWS rows | median of $REPEAT | vs psql |"
echo "|---|---|---|"
echo "| psql \\copy, defaults | $psql_s s | 1.00x |"
echo "| pgpour, defaults | $default_s s | $(echo "scale=2; $psql_s / $default_s" | bc)x |"
echo "| pgpour, tuned (tune --apply) | $tuned_s s | $(echo "scale=2; $psql_s / $tuned_s" | bc)x |"
