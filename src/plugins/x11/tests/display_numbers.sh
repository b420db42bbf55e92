# Sourced by the X tests: display numbers for their own Xvfb servers, reserved so that tests that
# run at once (ctest -j2) never pick the same one. Without it, the second Xvfb on a number exits
# (the lock is taken), `xdpyinfo` answers from the other test's server, and the test goes on
# talking to it: another program's windows in its screenshots, another client's atoms first.
#   reserve_display [NOT]  prints a number no X server and no other test holds (nor NOT); this
#                          shell holds it until release_displays (call it from the EXIT trap)
abstract_display_bound() {
  command -v ss >/dev/null && ss -xl 2>/dev/null | grep -q "@/tmp/.X11-unix/X$1 "
}
reserve_display() {
  local n dir owner
  for n in $(seq 90 199); do
    [ "$n" = "${1:-}" ] && continue
    { [ -e "/tmp/.X$n-lock" ] || [ -e "/tmp/.X11-unix/X$n" ]; } && continue
    # A server on its way out (or one restored from a checkpoint) may hold the abstract name
    # after its files are gone: a new Xvfb there would exit, and xdpyinfo would answer from it.
    abstract_display_bound "$n" && continue
    dir=/tmp/stasis-x11-display-$n
    if ! mkdir "$dir" 2>/dev/null; then
      owner=$(cat "$dir/owner" 2>/dev/null)
      # A reservation whose shell is gone (a killed test) is free again.
      [ -n "$owner" ] && ! kill -0 "$owner" 2>/dev/null && rm -rf "$dir" && mkdir "$dir" 2>/dev/null || continue
    fi
    echo $$ > "$dir/owner"  # $$: the test's shell, also inside $(...)
    echo "$n"
    return 0
  done
  echo "no free X display number" >&2
  return 1
}
release_displays() {
  local dir
  for dir in /tmp/stasis-x11-display-*; do
    [ "$(cat "$dir/owner" 2>/dev/null)" = "$$" ] && rm -rf "$dir"
  done
  return 0
}
