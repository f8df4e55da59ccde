#!/usr/bin/env bash
# A primary key read from the file, with duplicates: kv (bigint key, short
# text) of ROWS rows with 1% more lines that repeat an earlier key. Loaded
# with --max-errors all, the key dropped and the duplicates rejected at its
# rebuild, against --keep-indexes (each duplicate refused as it loads),
# runs alternating. Checks that the table keeps the first row of each key
# (the repeats carry the value 'dup') and how many rows were rejected.
# Wall and CPU seconds of the client, on the server the PG* variables name;
# the table kv is dropped and made again.
#
#   PGHOST=/tmp PGPORT=5432 bench/file-keys.sh [ROWS] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
rows=${1:-2000000}
runs=${2:-3}
cargo build --release --quiet --bin pgpour
pgpour=$(pwd)/target/release/pgpour
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# Every 100th line from the 100,000th on is followed by a repeat of an
# earlier key (line number * 7919 mod itself, deterministic).
$pgpour gen kv --rows "$rows" |
  awk -F, 'NR >= 100000 && NR % 100 == 0 { print; print (NR * 7919) % (NR - 1) + 1 ",dup"; next } { print }' \
  > "$dir/kv.csv"
echo "machine: $(nproc) cores; kv $rows rows + $(grep -c ',dup$' "$dir/kv.csv") repeats; $(psql -Atc 'SHOW server_version')"
for run in $(seq "$runs"); do
  for variant in "--max-errors all" "--max-errors all --keep-indexes"; do
    psql -qc "DROP TABLE IF EXISTS kv; CREATE TABLE kv (id bigint PRIMARY KEY, value text)"
    # shellcheck disable=SC2086
    /usr/bin/time -f '%e %U %S' -o "$dir/time" \
      $pgpour load "$dir/kv.csv" -t kv -q $variant --replace-rejects \
      --reject-file "$dir/rejected.csv" --load-id "file-keys-$(date +%s%N)" > /dev/null || true
    read -r wall user sys < <(tail -n 1 "$dir/time")
    kept_late=$(psql -Atc "SELECT count(*) FROM kv WHERE value = 'dup'")
    printf '%-34s run %s: %6.2f s wall, client %5.2f s CPU, rejected %s, later rows kept %s\n' \
      "$variant" "$run" "$wall" "$(echo "$user + $sys" | bc)" \
      "$(wc -l < "$dir/rejected.csv")" "$kept_late"
  done
done
