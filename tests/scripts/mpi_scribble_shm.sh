#!/bin/bash
# Run after the kill, before the restart: overwrites with zeros every /dev/shm file that the images
# of the newest checkpoint map shared (Open MPI's vader segments), as a run that went on after the
# checkpoint would have changed them. The restart must bring back their bytes as of the checkpoint.
# Fails when the images map no such file: the job did not use shared memory.
# usage: mpi_scribble_shm.sh STASIS   (with STASIS_CKPT_DIR set, as the test driver does)
stasis="$1"
generation="${STASIS_CKPT_DIR:?}/latest"
mapfile -t files < <(for image in "$generation"/*.stasis; do "$stasis" inspect "$image"; done |
                       grep -o '/dev/shm/[^ ]*$' | sort -u)
[ ${#files[@]} -gt 0 ] || { echo "no /dev/shm file mapped in $generation" >&2; exit 1; }
for file in "${files[@]}"; do
  size=$(stat -c %s "$file") || exit 1
  head -c "$size" /dev/zero | dd of="$file" conv=notrunc status=none || exit 1
done
echo "zeroed ${#files[@]} shared memory files" >&2
