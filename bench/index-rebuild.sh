#!/bin/bash
# Would dropping and rebuilding indexes pay on an empty table? customer, 1M
# rows (579 MB): psql \copy and pgpour (default workers, no journal), each into
# the table with its two indexes, and into the bare table followed by ADD
# PRIMARY KEY and CREATE INDEX; and pgpour with its journal, whose planner
# drops and rebuilds what it can by itself (here the c_w_id index: the primary
# key comes from the file, so it stays); 3 rounds. Starts its own cluster in /tmp/pgx
# (run as root: the server runs as postgres) and stops it at the end.
#   bench/index-rebuild.sh   (after cargo build --release)
set -e
B=/usr/lib/postgresql/15/bin
rm -rf /tmp/pgx && mkdir -p /tmp/pgx && chown postgres /tmp/pgx
su postgres -c "$B/initdb -D /tmp/pgx/data -A trust -E UTF8 --locale=C >/dev/null && printf \"listen_addresses=''\nunix_socket_directories='/tmp/pgx'\nport=5499\nshared_buffers=256MB\nmax_wal_size=4GB\n\" >> /tmp/pgx/data/postgresql.conf && $B/pg_ctl -D /tmp/pgx/data -l /tmp/pgx/log start >/dev/null"
P="psql -X -q -h /tmp/pgx -p 5499 -U postgres"
PG="$(dirname "$0")"/../target/release/pgpour
$PG gen customer --rows 1000000 -o /tmp/pgx/c.csv; chmod 644 /tmp/pgx/c.csv; ls -la /tmp/pgx/c.csv | awk '{print $5}'
DDL=$($PG gen customer --ddl)
NOIDX=$(echo "$DDL" | sed -e 's/ PRIMARY KEY//' -e 's/; CREATE INDEX.*//')
t() { local s=$(date +%s.%N); "$@" >/dev/null; echo "$(echo "$(date +%s.%N) - $s" | bc)"; }
for rep in 1 2 3; do
  $P -c "DROP TABLE IF EXISTS customer" -c "$DDL" -c "CHECKPOINT"
  a=$(t $P -c "\\copy customer from '/tmp/pgx/c.csv' (format csv)")
  $P -c "DROP TABLE customer" -c "$NOIDX" -c "CHECKPOINT"
  b1=$(t $P -c "\\copy customer from '/tmp/pgx/c.csv' (format csv)")
  b2=$(t $P -c "ALTER TABLE customer ADD PRIMARY KEY (c_id)" -c "CREATE INDEX ON customer (c_w_id)")
  $P -c "DROP TABLE customer" -c "$DDL" -c "CHECKPOINT"
  c=$(t $PG load /tmp/pgx/c.csv --table customer --db "host=/tmp/pgx port=5499 user=postgres dbname=postgres" --no-journal -q)
  $P -c "DROP TABLE customer" -c "$NOIDX" -c "CHECKPOINT"
  d1=$(t $PG load /tmp/pgx/c.csv --table customer --db "host=/tmp/pgx port=5499 user=postgres dbname=postgres" --no-journal -q)
  d2=$(t $P -c "ALTER TABLE customer ADD PRIMARY KEY (c_id)" -c "CREATE INDEX ON customer (c_w_id)")
  $P -c "DROP TABLE customer" -c "$DDL" -c "CHECKPOINT"
  e=$(t $PG load /tmp/pgx/c.csv --table customer --db "host=/tmp/pgx port=5499 user=postgres dbname=postgres" --load-id rebuild-$rep -q)
  $PG forget rebuild-$rep --db "host=/tmp/pgx port=5499 user=postgres dbname=postgres" >/dev/null
  echo "round $rep: psql with indexes $a | psql no indexes $b1 + build $b2 | pgpour with indexes $c | pgpour no indexes $d1 + build $d2 | pgpour planner $e"
done
su postgres -c "$B/pg_ctl -D /tmp/pgx/data stop -m fast" >/dev/null
