#!/bin/bash
# A bash loop that never forks: arithmetic and echo builtins only; pacing by busy arithmetic.
# usage: loop.sh [STEPS=40] [WORK=3000]
steps=${1:-40}
work=${2:-3000}
x=7
declare -a arr
for ((step = 1; step <= steps; step++)); do
  for ((i = 0; i < work; i++)); do
    x=$(( (x * 1103515245 + 12345) % 2147483648 ))
  done
  arr[step]=$(( x % 1000 ))
  sum=0
  for v in "${arr[@]}"; do sum=$(( sum + v )); done
  echo "step $step x $x sum $sum"
done
echo "done steps $steps"
