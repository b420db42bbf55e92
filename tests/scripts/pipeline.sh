#!/bin/bash
# bash with pipelines, command substitution and a background job
total=0
for i in $(seq 1 40); do
  v=$(expr $i \* 7919 % 1000)
  w=$(printf '%s\n' $v $i | sort -n | head -1)
  total=$((total + v + w))
  ( echo "bg $i" > /dev/null ) &
  wait $!
  echo "step $i v $v w $w total $total"
  sleep 0.1
done
echo "done $total"
