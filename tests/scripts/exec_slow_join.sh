#!/bin/sh
# exec_slow_join.sh PROGRAM ARGS...: becomes PROGRAM through a shell without the runtime that
# closes every descriptor above 2 (as daemons and `closefrom` do: the coordinator connection the
# launched process held goes with them) and runs 2 s, as a program that takes seconds to load its
# libraries would on a loaded machine. The launched process leaves the coordinator there, and
# PROGRAM joins anew 2 s later: the coordinator `stasis launch` starts (--exit-when-idle) must
# still be there for it.
preload=${LD_PRELOAD:-}
sleep 0.5  # joined first (the launched process joins at once, from its own thread)
exec env -u LD_PRELOAD bash -c '
  for fd in /proc/$$/fd/*; do n=${fd##*/}; [ "$n" -gt 2 ] && eval "exec $n>&-"; done
  sleep 2
  export LD_PRELOAD="$0"
  exec "$@"' "$preload" "$@"
