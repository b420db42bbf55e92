#!/bin/bash
# Runs inside script(1), on a pseudo-terminal: each step forks a subshell that opens /dev/tty (which
# needs a controlling terminal) and a sleep; at the end `cat` reads stdin, the pty, where script(1)
# put an end-of-file as soon as its own stdin (/dev/null) ended. A restart that loses the
# controlling terminal prints "ctty no"; one that loses the end-of-file never ends.
# usage: pty_session.sh [STEPS=30]
steps=${1:-30}
for ((i = 1; i <= steps; i++)); do
  # (an open interrupted by a checkpoint can fail with EBUSY; a missing terminal fails every time)
  ctty=no
  for try in 1 2 3; do (exec 3</dev/tty) 2>/dev/null && ctty=yes && break; done
  echo "step $i ctty $ctty"
  sleep 0.1
done
cat
echo "cat saw the end of file"
