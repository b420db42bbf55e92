#!/bin/sh
# The computation's first host: starts a worker on HOST through LAUNCHER and prints, with a
# prefix, each line the worker sends back over the launcher's pipe.
# usage: host1_program.sh LAUNCHER HOST WORKER [ARGS...]
launcher=$1 host=$2
shift 2
"$launcher" "$host" "$@" | while IFS= read -r line; do echo "host1 got: $line"; done
echo "host1 done"
