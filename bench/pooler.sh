#!/bin/bash
# Loads through PgBouncer against psql through the same PgBouncer: votes
# (username,link,score into a table with a serial key), ROWS rows (default
# 1M), directly and through a session-mode PgBouncer (Debian's package,
# stock settings but the pool mode), psql \copy and pgpour load (default
# workers, with its journal), alternated, ROUNDS rounds (default 3). Starts
# its own cluster in /tmp/pgpool and PgBouncer beside it (run as root: both
# run as postgres) and stops them at the end.
#   bench/pooler.sh [ROWS] [ROUNDS]   (after cargo build --release)
set -e
ROWS=${1:-1000000}
ROUNDS=${2:-3}
B=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
D=/tmp/pgpool
rm -rf $D && mkdir -p $D && chown postgres $D
su postgres -c "$B/initdb -D $D/data -A trust -E UTF8 --locale=C >/dev/null && printf \"listen_addresses=''\nunix_socket_directories='$D'\nport=5498\nshared_buffers=256MB\nmax_wal_size=4GB\n\" >> $D/data/postgresql.conf && $B/pg_ctl -D $D/data -l $D/log start >/dev/null"
printf '"postgres" ""\n' > $D/users.txt
cat > $D/pgbouncer.ini <<EOF
[databases]
* = host=$D port=5498
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = 6498
unix_socket_dir =
auth_type = trust
auth_file = $D/users.txt
pool_mode = session
logfile = $D/pgbouncer.log
pidfile = $D/pgbouncer.pid
EOF
chown postgres $D/users.txt $D/pgbouncer.ini
su postgres -c "pgbouncer -d $D/pgbouncer.ini"
sleep 1
DIRECT="host=$D port=5498 user=postgres dbname=postgres"
POOLED="host=127.0.0.1 port=6498 user=postgres dbname=postgres sslmode=disable"
PG="$(dirname "$0")"/../target/release/pgpour
$PG gen votes --rows "$ROWS" -o $D/v.csv; chmod 644 $D/v.csv
ls -la $D/v.csv | awk '{print "input bytes: " $5}'
DDL="CREATE TABLE votes (id serial PRIMARY KEY, username text, link text, score int)"
t() { local s=$(date +%s.%N); "$@" >/dev/null; echo "$(echo "$(date +%s.%N) - $s" | bc)"; }
fresh() { psql -X -q "$DIRECT" -c "DROP TABLE IF EXISTS votes" -c "$DDL" -c "CHECKPOINT"; }
for rep in $(seq "$ROUNDS"); do
  fresh; a=$(t psql -X -q "$DIRECT" -c "\\copy votes (username, link, score) from '$D/v.csv' (format csv)")
  fresh; b=$(t psql -X -q "$POOLED" -c "\\copy votes (username, link, score) from '$D/v.csv' (format csv)")
  fresh; c=$(t $PG load $D/v.csv --table votes --columns username,link,score --db "$DIRECT" --load-id direct-$rep -q)
  fresh; d=$(t $PG load $D/v.csv --table votes --columns username,link,score --db "$POOLED" --load-id pooled-$rep -q)
  n=$(psql -X -qtA "$DIRECT" -c "SELECT count(*) FROM votes")
  [ "$n" = "$ROWS" ] || { echo "pooled load has $n rows, not $ROWS"; exit 1; }
  echo "round $rep: psql direct $a | psql pooled $b | pgpour direct $c | pgpour pooled $d"
done
kill "$(cat $D/pgbouncer.pid)"
su postgres -c "$B/pg_ctl -D $D/data stop -m fast" >/dev/null
