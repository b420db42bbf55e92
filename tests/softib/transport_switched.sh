#!/usr/bin/env bash
# After a restart that changed softib's transport: every traced tool output of pingpong_pair.sh
# (SOFTIB_TRACE lines "connected to LID-QPN over unix|tcp", which name what the socket really is)
# shows connections over FROM (before the checkpoint), then over TO, and none over FROM after the
# first over TO.
# Usage: transport_switched.sh WORKDIR FROM TO
set -u
work=$1 from=$2 to=$3
status=0
for out in "$work"/server*.out "$work"/client*.out; do
  if ! awk -v from="$from" -v to="$to" '
      $0 ~ "softib.*connected to .* over " from { if (seen_to) late = 1; seen_from = 1 }
      $0 ~ "softib.*connected to .* over " to { seen_to = 1 }
      END { exit !(seen_from && seen_to && !late) }' "$out"; then
    echo "$out: expected connections over $from, then only over $to:"
    grep "softib.*connected to" "$out" || echo "  (no softib connections traced)"
    status=1
  fi
done
exit $status
