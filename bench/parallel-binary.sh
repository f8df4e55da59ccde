#!/bin/bash
# Would a binary-encoding fast path help? Two psql \copy sessions over the
# two halves of votes (7.5M rows), sending csv or binary, alternating, 3 rounds,
# plus one psql \copy of the whole file. Starts its own cluster in /tmp/pgx
# (run as root: the server runs as postgres) and stops it at the end.
#   bench/parallel-binary.sh   (after cargo build --release)
set -e
B=/usr/lib/postgresql/15/bin
rm -rf /tmp/pgx && mkdir -p /tmp/pgx && chown postgres /tmp/pgx
su postgres -c "$B/initdb -D /tmp/pgx/data -A trust -E UTF8 --locale=C >/dev/null && printf \"listen_addresses=''\nunix_socket_directories='/tmp/pgx'\nport=5499\nshared_buffers=256MB\nmax_wal_size=4GB\n\" >> /tmp/pgx/data/postgresql.conf && $B/pg_ctl -D /tmp/pgx/data -l /tmp/pgx/log start >/dev/null"
P="psql -X -q -h /tmp/pgx -p 5499 -U postgres"
"$(dirname "$0")"/../target/release/pgpour gen votes --rows 7500000 -o /tmp/pgx/votes.csv
chmod 644 /tmp/pgx/votes.csv
$P -c "CREATE TABLE stage (username text, link text, score int)" -c "COPY stage FROM '/tmp/pgx/votes.csv' (FORMAT csv)"
pages=$($P -At -c "SELECT pg_relation_size('stage')/8192")
half=$((pages/2))
for f in csv binary; do
  $P -c "COPY (SELECT * FROM stage WHERE ctid < '($half,0)') TO '/tmp/pgx/h1.$f' (FORMAT $f)"
  $P -c "COPY (SELECT * FROM stage WHERE ctid >= '($half,0)') TO '/tmp/pgx/h2.$f' (FORMAT $f)"
done
$P -c "$("$(dirname "$0")"/../target/release/pgpour gen votes --ddl)"
for rep in 1 2 3; do
  for f in csv binary; do
    $P -c "TRUNCATE votes" -c "CHECKPOINT"
    s=$(date +%s.%N)
    $P -c "\\copy votes (username,link,score) from '/tmp/pgx/h1.$f' (format $f)" &
    $P -c "\\copy votes (username,link,score) from '/tmp/pgx/h2.$f' (format $f)" &
    wait
    e=$(date +%s.%N)
    echo "$f 2 sessions: $(echo "$e - $s" | bc) s, rows $($P -At -c 'SELECT count(*) FROM votes')"
  done
  for f in csv; do
    $P -c "TRUNCATE votes" -c "CHECKPOINT"
    s=$(date +%s.%N)
    $P -c "\\copy votes (username,link,score) from '/tmp/pgx/votes.csv' (format csv)"
    e=$(date +%s.%N)
    echo "csv 1 session (psql \\copy): $(echo "$e - $s" | bc) s"
  done
done
su postgres -c "$B/pg_ctl -D /tmp/pgx/data stop -m fast" >/dev/null
