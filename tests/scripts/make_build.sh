#!/bin/bash
# make_build.sh DIR [FILES=16] [PAUSE=0.3]: generates a small C project in DIR/proj (FILES source
# files and a header; each compile recipe pauses PAUSE seconds, so the build lasts a few seconds
# and a checkpoint lands in the middle of it), builds it with `make -j2 --output-sync`, runs the
# program it built, and runs make again, which must find nothing left to do.
# The compiler runs with -pipe: without it, cc1 writes its assembly into /tmp, closes it, and
# only then does cc start the assembler on it; a checkpoint in that instant holds the file's name
# only in cc's memory, no descriptor on it, and the killed run's cc removes it (a known limit,
# src/plugins/saved_files/README.md; a file still open is saved, ckpt.temp_output.*).
# make's own output is printed sorted once the build is over: with -j2 the order in which two
# jobs finish varies, their lines do not.
set -euo pipefail
dir=$1 files=${2:-16} pause=${3:-0.3}
rm -rf "$dir/proj"
mkdir -p "$dir/proj"
cd "$dir/proj"

echo "int part(int which, int x);" > parts.h
{
  echo '#include "parts.h"'
  echo 'int part(int which, int x) {'
  echo '  switch (which) {'
  for ((i = 0; i < files - 1; i++)); do echo "    case $i: { extern int part_$i(int); return part_$i(x); }"; done
  echo '  }'
  echo '  return 0;'
  echo '}'
} > dispatch.c
for ((i = 0; i < files - 1; i++)); do
  printf 'int part_%d(int x) {\n  int acc = %d;\n  for (int k = 0; k < x; k++) acc = acc * 31 + k + %d;\n  return acc & 0xffff;\n}\n' \
    "$i" "$((i * 7 + 1))" "$i" > "part_$i.c"
done
cat > main.c <<EOC
#include <stdio.h>
#include "parts.h"
int main(void) {
  long total = 0;
  for (int i = 0; i < $((files - 1)); i++) {
    int v = part(i, 10 + i);
    printf("part %d: %d\\n", i, v);
    total += v;
  }
  printf("total: %ld\\n", total);
  return 0;
}
EOC
cat > Makefile <<EOM
SOURCES := \$(sort \$(wildcard *.c))
OBJECTS := \$(SOURCES:.c=.o)
prog: \$(OBJECTS)
	\$(CC) -o \$@ \$(OBJECTS)
%.o: %.c parts.h
	@echo "compiling \$<"
	@sleep $pause
	\$(CC) -O1 -pipe -c \$< -o \$@
# The first object tells the script's own stdout (descriptor 3), so a checkpoint can wait for the
# build to be under way.
dispatch.o: dispatch.c parts.h
	@echo "compiling \$<"
	@sleep $pause
	\$(CC) -O1 -pipe -c \$< -o \$@
	@echo "step first object built" >&3
EOM

echo "step building $files files"
status=0
make -j2 --output-sync=target 3>&1 > ../make.log 2>&1 || status=$?
echo "step make exited with status $status"
LC_ALL=C sort ../make.log
./prog
make 2>&1
