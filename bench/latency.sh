#!/usr/bin/env bash
# pgpour vs psql \copy across a simulated network: every contender at each
# round-trip time, over TCP without TLS, at 0 ms straight to the server and
# otherwise through a delay proxy in the harness (no root, no tc), which also
# counts each run's round trips ("turns"). Contenders alternate within each
# round; figures are medians; each RTT is compared with psql at that RTT.
#
#   bench/latency.sh                                   # votes 1M, 3M and 10 rows at 0,10,50 ms
#   bench/latency.sh --rows '200000' --rtt-ms 0,50     # a quick look
#   bench/latency.sh --variants 'default;--workers 1'  # anything else goes to e2e-bench
set -euo pipefail
cd "$(dirname "$0")/.."

rows="1000000 3000000 10"
rtt=0,10,50
repeat=3
passed=()
while [ $# -gt 0 ]; do
  case "$1" in
    --rows) rows=$2; shift 2 ;;
    --rtt-ms) rtt=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    *) passed+=("$1"); shift ;;
  esac
done

cargo build --release --quiet --bin pgpour --bin e2e-bench
cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
echo "machine: $(nproc) cores (${cpu:-unknown cpu}), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr)"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
for n in $rows; do
  target/release/e2e-bench --dataset votes --rows "$n" --rtt-ms "$rtt" --repeat "$repeat" \
    ${passed[@]+"${passed[@]}"}
done
