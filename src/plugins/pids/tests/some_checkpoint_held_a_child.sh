#!/bin/sh
# some_checkpoint_held_a_child.sh CKPT_DIR: succeeds when a generation under CKPT_DIR holds two
# images or more (the script's shell and a child of it); else says so and fails.
for generation in "$1"/0*/; do
  [ "$(ls "$generation" | grep -c '[.]stasis$')" -ge 2 ] && exit 0
done
echo "no checkpoint under $1 held a child"
exit 1
