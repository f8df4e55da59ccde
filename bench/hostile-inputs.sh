#!/bin/bash
# Hostile inputs (issue 16, "bounded time and memory on any input"): pgpour
# and psql \copy on
#   1. a csv file of SIZE_MB MB whose first line opens a quote that never
#      closes, so the whole file is one record (COPY: "unterminated CSV
#      quoted field"); pgpour used to rescan that record on every read;
#   2. a zstd bomb: a few hundred KB that inflate to BOMB_GB GiB of one
#      quoted field, far past the 1 GiB a row may have;
#   3. REFUSED_ROWS rows (default 1M) that the server refuses every one of:
#      each key is already in the table (pgpour --max-errors all rejects
#      them all; psql \copy stops at the first).
# Each runs under /usr/bin/time -v: wall time, the client's peak RSS, exit
# code and the first line of its error. The server's memory is not counted.
# The server is the one the libpq environment names (PGHOST, PGPORT, PGUSER,
# PGDATABASE, ...); the script creates and drops the table hostile_inputs.
#   PGHOST=/tmp/pgx PGPORT=5499 PGUSER=postgres bench/hostile-inputs.sh
#   SIZE_MB=20 BOMB_GB=4 PGPOUR=/tmp/old-target/release/pgpour bench/hostile-inputs.sh
set -euo pipefail
SIZE_MB=${SIZE_MB:-200}
REFUSED_ROWS=${REFUSED_ROWS:-1000000}
BOMB_GB=${BOMB_GB:-16}
PGPOUR=${PGPOUR:-$(dirname "$0")/../target/release/pgpour}
TIMEOUT=${TIMEOUT:-600}
TABLE=hostile_inputs
WORK=$(mktemp -d /tmp/hostile-inputs.XXXXXX)
trap 'rm -rf "$WORK"; psql -X -q -c "DROP TABLE IF EXISTS $TABLE, hostile_keys" >/dev/null 2>&1 || true' EXIT

# 1. One quote opened at byte 2, then ordinary rows.
OPEN="$WORK/unterminated.csv"
printf '1,"never closed,x\n' >"$OPEN"
# (yes ends on SIGPIPE when head has enough.)
{ yes '2,some ordinary text,more ordinary text' || true; } | head -c $((SIZE_MB << 20)) >>"$OPEN"

# 2. Concatenated zstd frames decompress as one stream: a frame opening the
#    quote, then one frame of 1 GiB of 'x' repeated.
BOMB="$WORK/bomb.csv.zst"
printf '1,"' | zstd -q -c >"$BOMB"
head -c $((1 << 30)) /dev/zero | tr '\0' x | zstd -q -c >"$WORK/x.zst"
for _ in $(seq "$BOMB_GB"); do cat "$WORK/x.zst" >>"$BOMB"; done
echo "inputs: $(stat -c %s "$OPEN") bytes with an unterminated quote at byte 2;" \
  "$(stat -c %s "$BOMB") bytes of zstd inflating to $BOMB_GB GiB"
echo "pgpour: $PGPOUR; server: $(psql -X -A -t -c 'SELECT version()' | cut -d' ' -f1-2)"

psql -X -q -v ON_ERROR_STOP=1 -c "SET client_min_messages = warning" -c "DROP TABLE IF EXISTS $TABLE" \
  -c "CREATE TABLE $TABLE (id int, name text, note text)"

# run NAME TOOL COMMAND...: one line of results.
run() {
  local name=$1 tool=$2
  shift 2
  local stats="$WORK/time" out="$WORK/out" code=0
  # time's max RSS is the largest of the processes it waited for, here
  # timeout and what that runs (psql's zstd too).
  /usr/bin/time -v -o "$stats" timeout "$TIMEOUT" "$@" >"$out" 2>&1 || code=$?
  local wall rss said
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$stats")
  rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$stats")
  # The error line if there is one (timed out: none at all).
  said=$({ grep -m1 -E 'error|ERROR' "$out" || tail -1 "$out"; } | cut -c1-170)
  [ "$code" = 124 ] && said="timed out after $TIMEOUT s"
  printf '%-22s %-7s exit %-3s wall %-8s max RSS %5s MB  %s\n' \
    "$name" "$tool" "$code" "$wall" "${rss:-?}" "$said"
  psql -X -q -c "TRUNCATE $TABLE"
}

run "unterminated quote" pgpour "$PGPOUR" load "$OPEN" --table $TABLE --format csv --no-journal -q
run "unterminated quote" psql psql -X -q -v ON_ERROR_STOP=1 \
  -c "\\copy $TABLE from '$OPEN' (format csv)"
run "zstd bomb" pgpour "$PGPOUR" load "$BOMB" --table $TABLE --format csv --no-journal -q
run "zstd bomb" psql psql -X -q -v ON_ERROR_STOP=1 \
  -c "\\copy $TABLE from program 'zstd -dc $BOMB' (format csv)"

# 3. Every row refused by the server (a key the table already has).
DUPS="$WORK/dups.csv"
seq "$REFUSED_ROWS" | sed 's/$/,dup/' >"$DUPS"
psql -X -q -v ON_ERROR_STOP=1 -c "SET client_min_messages = warning" \
  -c "DROP TABLE IF EXISTS hostile_keys" -c "CREATE TABLE hostile_keys (id int PRIMARY KEY, v text)" \
  -c "INSERT INTO hostile_keys SELECT g, 'old' FROM generate_series(1, $REFUSED_ROWS) g"
TABLE=hostile_keys
run "$REFUSED_ROWS rows all refused" pgpour "$PGPOUR" load "$DUPS" --table hostile_keys --format csv \
  --no-journal -q --max-errors all --reject-file "$WORK/refused.csv"
psql -X -q -c "INSERT INTO hostile_keys SELECT g, 'old' FROM generate_series(1, $REFUSED_ROWS) g"
run "$REFUSED_ROWS rows all refused" psql psql -X -q -v ON_ERROR_STOP=1 \
  -c "\\copy hostile_keys from '$DUPS' (format csv)"
