#!/usr/bin/env bash
# Configures and builds into build/ if needed, then runs every test (unit tests of each part and
# the end-to-end checkpoint-restart cases in tests/).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build}
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  GEN=()
  if command -v ninja >/dev/null 2>&1; then GEN=(-G Ninja); fi
  cmake -S . -B "$BUILD" "${GEN[@]}"
fi
cmake --build "$BUILD" -j2
# A first run in a new build directory has no record of how long each test takes, so ctest would
# start them in the order they are declared and a long one started last would run alone at the
# end: tests/ctest_cost_data.txt (one whole run's times, `scripts/update_test_costs.sh` makes it
# again) lets ctest start the longest first. Later runs keep their own measured costs.
COSTS="$BUILD/Testing/Temporary/CTestCostData.txt"
if [ ! -f "$COSTS" ]; then
  mkdir -p "$(dirname "$COSTS")"
  cp tests/ctest_cost_data.txt "$COSTS"
fi
ctest --test-dir "$BUILD" --output-on-failure -j2
