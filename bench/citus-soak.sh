#!/usr/bin/env bash
# Runs many random fault schedules (kill -9 of pgpour, pgpour's sessions
# terminated on a node, a worker or the coordinator restarted with -m
# immediate, a shard moved) against loads into a Citus table, checking
# after each that every row is in the table once, in its shard, that
# nothing is left prepared on any node and that the journal agrees. The
# test suite runs two.
#   bench/citus-soak.sh [ROUNDS] [FIRST_SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
PGPOUR_CITUS=required PGPOUR_SOAK_ROUNDS="${1:-50}" PGPOUR_SOAK_SEED="${2:-1}" \
  cargo test --release -p pgpour-cli --test citus_soak -- --nocapture
