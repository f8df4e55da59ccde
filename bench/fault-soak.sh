#!/usr/bin/env bash
# Runs many random fault schedules (client SIGKILL, a terminated backend, an
# immediate server restart, a second run of the same load id) against one
# load with rejects, checking after each that every good row is in the table
# once and every bad row in the reject file once. The test suite runs three.
#   bench/fault-soak.sh [ROUNDS] [FIRST_SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
PGPOUR_SOAK_ROUNDS="${1:-100}" PGPOUR_SOAK_SEED="${2:-1}" \
  cargo test --release -p pgpour-cli --test fault_schedules -- --nocapture
