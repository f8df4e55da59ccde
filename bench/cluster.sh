# Sourced by the bench scripts: a throwaway PostgreSQL cluster of their
# own, on a Unix socket only, stopped when the script exits.
#   start_cluster DIR PORT [SETTING...]   e.g. start_cluster /tmp/pgx 5498 shared_buffers=256MB
# Uses $B (the server's bin directory; PGPOUR_PG_BIN or PostgreSQL 15's by
# default) and sets D, PORT and DB (a conninfo for pgpour and psql).
B=${B:-${PGPOUR_PG_BIN:-/usr/lib/postgresql/15/bin}}

start_cluster() {
  D=$1
  PORT=$2
  shift 2
  local conf="listen_addresses=''\nunix_socket_directories='$D'\nport=$PORT\n"
  local setting
  for setting in "$@"; do conf="$conf$setting\n"; done
  # A cluster a killed run left behind is stopped first.
  su postgres -c "$B/pg_ctl -D $D/data stop -m fast" >/dev/null 2>&1 || true
  rm -rf "$D" && mkdir -p "$D" && chown postgres "$D"
  su postgres -c "$B/initdb -D $D/data -A trust -E UTF8 --locale=C >/dev/null && printf \"$conf\" >> $D/data/postgresql.conf && $B/pg_ctl -D $D/data -l $D/log start >/dev/null"
  trap 'su postgres -c "$B/pg_ctl -D $D/data stop -m fast" >/dev/null 2>&1 || true' EXIT
  DB="host=$D port=$PORT user=postgres dbname=postgres"
}
