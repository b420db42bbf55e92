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
ctest --test-dir "$BUILD" --output-on-failure -j2
