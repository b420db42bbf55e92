#!/usr/bin/env bash
# Fuzzes the MANIFEST.json parser and the image reader with libFuzzer (clang, AddressSanitizer,
# UndefinedBehaviorSanitizer). Builds only what the targets need, with clang++, into a folder of
# its own (the project's build stays with its own compiler).
#
#   scripts/fuzz.sh build [BUILD_DIR]                 build both fuzzers (default: build-fuzz/)
#   scripts/fuzz.sh run TARGET SECONDS [BUILD_DIR] [LIBFUZZER OPTIONS...]
#        TARGET: image or manifest. Runs one process over a scratch copy of the corpus
#        (tests/fuzz/corpus/TARGET); new inputs land in BUILD_DIR/corpus-TARGET, crashes in
#        BUILD_DIR/crashes-TARGET. Add an input worth keeping to the corpus by hand
#        (minimized: -minimize_crash=1 or -merge=1).
# Exit status: 0 clean, 1 a crash, hang or sanitizer report, 77 no clang++ with libFuzzer here
# (Debian: clang libclang-rt-14-dev), which CTest reports as skipped.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CXX=${FUZZ_CXX:-clang++}
FLAGS=(-std=c++20 -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined
       -fno-sanitize-recover=undefined -D_GNU_SOURCE -DFMT_SHARED -I"$ROOT/src" -I"$ROOT/include")
LIBS=(-lfmt -lzstd -llz4)
declare -A SOURCES=(
  [image]="tests/fuzz/image_fuzzer.cc src/image/reader.cc"
  [manifest]="tests/fuzz/manifest_fuzzer.cc src/restart/checkpoint.cc"
)

skip() { echo "SKIP: $*"; exit 77; }

have_libfuzzer() {
  command -v "$CXX" >/dev/null 2>&1 || return 1
  local probe; probe=$(mktemp -d)
  echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' > "$probe/p.cc"
  "$CXX" -fsanitize=fuzzer,address,undefined "$probe/p.cc" -o "$probe/p" >/dev/null 2>&1
  local ok=$?
  rm -rf "$probe"
  return $ok
}

# Rebuilds a target when one of its sources or the headers under src/ are newer than it.
build_target() {
  local target=$1 out=$2/$1_fuzzer
  local -a sources
  read -r -a sources <<< "${SOURCES[$target]}"
  if [ -x "$out" ] && [ -z "$(find "$ROOT/src" "$ROOT/tests/fuzz" "$0" -newer "$out" \( -name '*.cc' -o -name '*.h' -o -name '*.sh' \) -print -quit)" ]; then
    return 0
  fi
  echo "fuzz: building $out"
  (cd "$ROOT" && "$CXX" "${FLAGS[@]}" "${sources[@]}" "${LIBS[@]}" -o "$out.tmp") && mv "$out.tmp" "$out"
}

command=${1:-}
case "$command" in
  build)
    dir=${2:-$ROOT/build-fuzz}
    have_libfuzzer || skip "no $CXX with libFuzzer (Debian: clang libclang-rt-14-dev)"
    mkdir -p "$dir"
    for target in image manifest; do build_target "$target" "$dir"; done
    ;;
  run)
    target=${2:?TARGET (image or manifest)}
    seconds=${3:?SECONDS}
    shift 3
    dir=$ROOT/build-fuzz
    if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then dir=$1; shift; fi  # the rest: libFuzzer options
    [ -n "${SOURCES[$target]:-}" ] || { echo "fuzz: no target $target (image, manifest)" >&2; exit 2; }
    have_libfuzzer || skip "no $CXX with libFuzzer (Debian: clang libclang-rt-14-dev)"
    mkdir -p "$dir"
    build_target "$target" "$dir"
    corpus=$dir/corpus-$target crashes=$dir/crashes-$target
    mkdir -p "$corpus" "$crashes"
    # One process (-jobs/-workers stay 1: the machine is shared). Inputs up to 1 MiB: real images
    # in the seeds are a few tens of KiB.
    exec "$dir/${target}_fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=1048576 \
      -print_final_stats=1 -artifact_prefix="$crashes/" "$@" "$corpus" "$ROOT/tests/fuzz/corpus/$target"
    ;;
  *)
    sed -n '2,14p' "$0" >&2
    exit 2
    ;;
esac
