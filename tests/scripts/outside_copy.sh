#!/bin/bash
# The output reaches the outside world through a copy of stdout at descriptor 3 (exec 3>&1), from
# a forked subshell and from an exec'd program: after a restart, descriptor 3 must again be
# whatever `stasis restart` has as stdout, not /dev/null.
steps=${1:-25}
exec 3>&1
for i in $(seq 1 "$steps"); do
  ( echo "step $i via subshell fd 3" >&3 )
  /bin/echo "line $i via echo fd 3" >&3
  sleep 0.1
done
echo done
