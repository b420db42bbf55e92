#!/usr/bin/env bash
# One tests/vm case: a TCG guest (tcg_guest.sh) under the checkpoint driver, or skipped (77)
# with the reason where QEMU, qemu-img, a static busybox or a guest kernel is missing.
#   tcg_guest_test.sh STASIS CACHE VARIANT STEPS DELAY_US [DRIVER ARGS...]
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
STASIS=$1 CACHE=$2 VARIANT=$3 STEPS=$4 DELAY=$5
shift 5
bash "$HERE/tcg_guest.sh" prepare "$CACHE"
exec /usr/bin/python3 "$HERE/../ckpt_driver.py" --stasis "$STASIS" --name "vm.tcg.$VARIANT" \
  --progress-regex '^guest step' --step-timeout 90 "$@" -- bash "$HERE/tcg_guest.sh" run "$CACHE" "$VARIANT" "$STEPS" "$DELAY"
