#!/usr/bin/env bash
# Writes tests/ctest_cost_data.txt (what scripts/test.sh gives ctest for a new build directory)
# from the output of a whole suite run: update_test_costs.sh SUITE_LOG, where SUITE_LOG holds what
# `scripts/test.sh` or `ctest -j2` printed.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] || { echo "usage: update_test_costs.sh SUITE_LOG" >&2; exit 2; }
sed -nE 's/.*Test +#[0-9]+: ([^ ]+) \.+ *(\*\*\*)?(Passed|Failed|Skipped|Timeout|Not Run) +([0-9.]+) sec.*/\1 1 \4/p' "$1" \
  > tests/ctest_cost_data.txt
echo --- >> tests/ctest_cost_data.txt
echo "$(($(wc -l < tests/ctest_cost_data.txt) - 1)) tests' times in tests/ctest_cost_data.txt"
