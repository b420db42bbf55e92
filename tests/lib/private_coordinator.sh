# Sourced by the shell tests: a coordinator of the test's own, in its work directory.
#   private_coordinator STASIS WORK [NAME]
# starts it (runtime directory WORK/NAME.runtime, checkpoints in WORK/NAME.ckpt, or WORK/runtime
# and WORK/ckpt without NAME; it exits once idle) and exports STASIS_RUNTIME_DIR, STASIS_CKPT_DIR
# and STASIS_COORD. CKPT_DIR overrides where the checkpoints go.
#   private_coordinator_cleanup STASIS WORK
# stops whatever the test left running and removes WORK (kept with STASIS_TEST_KEEP set).
private_coordinator() {
  local stasis=$1 work=$2 prefix=${3:+$3.}
  export STASIS_RUNTIME_DIR=$work/${prefix}runtime STASIS_CKPT_DIR=${CKPT_DIR:-$work/${prefix}ckpt}
  mkdir -p -m 700 "$STASIS_RUNTIME_DIR" "$STASIS_CKPT_DIR"
  rm -f "$work/${prefix}port"
  "$stasis" coordinator --port 0 --port-file "$work/${prefix}port" --ckpt-dir "$STASIS_CKPT_DIR" \
    --daemon --exit-when-idle
  export STASIS_COORD=127.0.0.1:$(cat "$work/${prefix}port")
}

private_coordinator_cleanup() {
  "$1" kill >/dev/null 2>&1 || true
  if [ -z "${STASIS_TEST_KEEP:-}" ]; then rm -rf "$2"; else echo "kept $2"; fi
}
