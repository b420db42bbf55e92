#!/bin/bash
# bash waits for a foreground child (an external sleep) every step, so a checkpoint finds bash
# waiting for a child that the restart recreates under another kernel pid: bash must recognise
# it (wait results translated) or it hangs.
steps=${1:-30}
for i in $(seq 1 "$steps"); do
  echo "step $i"
  sleep 0.15
done
echo done
