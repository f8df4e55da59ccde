#!/bin/bash
# What the server saves per value when COPY reads binary instead of text,
# type by type: the measurements the planner's choice of binary rests on
# (`crates/pgpour/src/encode/choice.rs`). For each type, a one-column table
# of ROWS values is written to a server-side file in both formats, then
# loaded from each, alternating, REPEAT times; the medians and the
# difference per value are printed as a markdown table.
#   bench/binary-types.sh [ROWS] [REPEAT]   (run as root: starts its own
#   cluster in /tmp/pgbt, as the postgres user, and stops it at the end)
set -e
ROWS=${1:-2000000}
REPEAT=${2:-3}
B=${PGPOUR_PG_BIN:-/usr/lib/postgresql/15/bin}
. "$(dirname "$0")/cluster.sh"
D=/tmp/pgbt
start_cluster $D 5498 shared_buffers=256MB max_wal_size=4GB
P="psql -X -q -v ON_ERROR_STOP=1 -h $D -p 5498 -U postgres"
# name|type|expression of g (1..ROWS)
TYPES=(
  "int4|int4|(g::int8 * 7919 % 2000000000)::int4"
  "int8|int8|g::int8 * 1000003"
  "numeric(15,2)|numeric(15,2)|round((g % 9000000 + 1000)::numeric / 100, 2)"
  "float8|float8|(g % 100000)::float8 / 7"
  "float4|float4|((g % 100000)::float8 / 7)::float4"
  "bool|bool|g % 2 = 0"
  "date|date|'1992-01-01'::date + (g % 2500)::int"
  "timestamp|timestamp|'2020-01-01'::timestamp + (g % 86400000) * interval '1 second'"
  "timestamptz|timestamptz|'2020-01-01 00:00:00+00'::timestamptz + (g % 86400000) * interval '1 second'"
  "time|time|'00:00'::time + (g % 86400) * interval '1 second'"
  "uuid|uuid|md5(g::text)::uuid"
  "text(10)|text|left(md5(g::text), 10)"
  "text(40)|text|md5(g::text) || left(md5(g::text), 8)"
  "varchar(44)|varchar(44)|md5(g::text) || left(md5(g::text), 8)"
  "char(1)|char(1)|chr(65 + g % 3)"
  "bit(1)|bit(1)|(g % 2)::bit(1)"
  "jsonb|jsonb|jsonb_build_object('id', g, 'ok', g % 2 = 0)"
)
time_copy() { # table file format
  local s e
  $P -c "TRUNCATE $1" -c "CHECKPOINT"
  s=$(date +%s%N)
  $P -c "COPY $1 FROM '$2' (FORMAT $3)"
  e=$(date +%s%N)
  echo $(( (e - s) / 1000 ))
}
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "| type | text ms | binary ms | binary/text | µs saved per value |"
echo "|---|---|---|---|---|"
i=0
for entry in "${TYPES[@]}"; do
  IFS='|' read -r name type expr <<<"$entry"
  i=$((i + 1))
  t=t$i
  $P -c "CREATE TABLE $t (v $type)" \
     -c "INSERT INTO $t SELECT $expr FROM generate_series(1, $ROWS) g" \
     -c "COPY $t TO '$D/$t.txt' (FORMAT text)" \
     -c "COPY $t TO '$D/$t.bin' (FORMAT binary)"
  text=() binary=()
  for _ in $(seq "$REPEAT"); do
    text+=("$(time_copy $t $D/$t.txt text)")
    binary+=("$(time_copy $t $D/$t.bin binary)")
  done
  mt=$(median "${text[@]}") mb=$(median "${binary[@]}")
  $P -c "DROP TABLE $t"
  rm -f $D/$t.txt $D/$t.bin
  awk -v n="$name" -v t="$mt" -v b="$mb" -v r="$ROWS" \
    'BEGIN { printf "| %s | %.0f | %.0f | %.2f | %.3f |\n", n, t/1000, b/1000, b/t, (t-b)/r }'
done
